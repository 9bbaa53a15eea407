package api

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/query"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
	"github.com/openir/platform/pkg/web"
)

// observableResponse is an observable as the reference system's v0 API writes it (_type case_artifact for
// the observables of cases and alerts alike).
type observableResponse struct {
	route.Meta
	DataType         string              `json:"dataType"`
	Data             *string             `json:"data"`
	Attachment       *attachmentResponse `json:"attachment,omitempty"`
	StartDate        int64               `json:"startDate"`
	TLP              int                 `json:"tlp"`
	Tags             []string            `json:"tags"`
	IOC              bool                `json:"ioc"`
	Sighted          bool                `json:"sighted"`
	IgnoreSimilarity bool                `json:"ignoreSimilarity"`
	Message          string              `json:"message"`
	Reports          map[string]any      `json:"reports"`
	Stats            map[string]any      `json:"stats"`
	Case             *string             `json:"case"`
	Alert            *string             `json:"alert"`
}

func observableJSON(o cases.Observable) observableResponse {
	tags, reports := o.Tags, o.Reports
	if tags == nil {
		tags = []string{}
	}
	if reports == nil {
		reports = map[string]any{}
	}
	r := observableResponse{Meta: route.MetaOf(o.ID, "case_artifact", o.Meta), DataType: o.DataType, StartDate: route.Millis(o.StartDate),
		TLP: o.TLP, Tags: tags, IOC: o.IOC, Sighted: o.Sighted, IgnoreSimilarity: o.IgnoreSimilarity,
		Message: o.Message, Reports: reports, Stats: map[string]any{}, Case: route.NullString(o.CaseID),
		Alert: route.NullString(o.AlertID)}
	if a := o.Attachment; a != nil {
		r.Attachment = &attachmentResponse{ID: a.ID, Name: a.Name, ContentType: a.ContentType, Size: a.Size, Hashes: a.Hashes}
	} else {
		r.Data = &o.Data
	}
	return r
}

// createObservableRequest is the contract's create payload (JSON, or the `_json` part of a multipart body
// whose file part is `attachment`).
type createObservableRequest struct {
	DataType         string      `json:"dataType"`
	Data             web.Strings `json:"data"`
	Message          string      `json:"message"`
	StartDate        *int64      `json:"startDate"`
	TLP              *int        `json:"tlp"`
	Tags             web.Strings `json:"tags"`
	IOC              bool        `json:"ioc"`
	Sighted          bool        `json:"sighted"`
	IgnoreSimilarity bool        `json:"ignoreSimilarity"`
	IsZip            bool        `json:"isZip"`
	ZipPassword      string      `json:"zipPassword"`
}

func (r createObservableRequest) newObservable() cases.NewObservable {
	return cases.NewObservable{DataType: r.DataType, Data: r.Data, Message: r.Message, StartDate: route.TimeOpt(r.StartDate),
		TLP: r.TLP, Tags: r.Tags, IOC: r.IOC, Sighted: r.Sighted, IgnoreSimilarity: r.IgnoreSimilarity,
		IsZip: r.IsZip, ZipPassword: r.ZipPassword}
}

// batchFailure is one refused value of a 207 answer.
type batchFailure struct {
	Type    string         `json:"type"`
	Message string         `json:"message"`
	Object  map[string]any `json:"object"`
}

type batchResponse struct {
	Success []observableResponse `json:"success"`
	Failure []batchFailure       `json:"failure"`
}

func (h *handler) createCaseObservables(c echo.Context) error {
	return h.createObservables(c, cases.Parent{Case: web.Param(c, "caseId")})
}

func (h *handler) createAlertObservables(c echo.Context) error {
	return h.createObservables(c, cases.Parent{Alert: web.Param(c, "alertId")})
}

// createObservables answers 201 with the array of observables when every value was created, else 207 with
// {success, failure} (DECISIONS.md).
func (h *handler) createObservables(c echo.Context, p cases.Parent) error {
	var req createObservableRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	n := req.newObservable()
	fh, err := web.FormFile(c, "attachment")
	if err != nil {
		return err
	}
	if fh != nil {
		f, err := fh.Open()
		if err != nil {
			return fmt.Errorf("open uploaded file: %w", err)
		}
		defer f.Close()
		n.File = &record.Upload{Name: fh.Filename, ContentType: fh.Header.Get(echo.HeaderContentType), Body: f}
	}
	created, failed, err := h.svc.CreateObservables(c.Request().Context(), route.Caller(c), p, n)
	if err != nil {
		return err
	}
	out := route.MapSlice(created, observableJSON)
	if len(failed) == 0 {
		return c.JSON(http.StatusCreated, out)
	}
	return c.JSON(http.StatusMultiStatus, batchResponse{Success: out, Failure: route.MapSlice(failed, failureJSON)})
}

func failureJSON(f cases.ObservableFailure) batchFailure {
	typ, msg := "InternalError", "internal error"
	if e := apperr.As(f.Err); e != nil && e.Kind == apperr.Conflict {
		typ, msg = "CreateError", e.Message
	}
	obj := map[string]any{"dataType": f.Observable.DataType}
	if a := f.Observable.Attachment; a != nil {
		obj["attachment"] = attachmentResponse{ID: a.ID, Name: a.Name, ContentType: a.ContentType, Size: a.Size, Hashes: a.Hashes}
	} else {
		obj["data"] = f.Observable.Data
	}
	return batchFailure{Type: typ, Message: msg, Object: obj}
}

func (h *handler) getObservable(c echo.Context) error {
	o, err := h.svc.Observable(c.Request().Context(), route.Caller(c), web.Param(c, "observableId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, observableJSON(o))
}

func (h *handler) listCaseObservables(c echo.Context) error {
	return h.observables(c, cases.Parent{Case: web.Param(c, "caseId")})
}

func (h *handler) listAlertObservables(c echo.Context) error {
	return h.observables(c, cases.Parent{Alert: web.Param(c, "alertId")})
}

// searchObservables searches the observables of the organisation's cases (POST /api/case/artifact/_search),
// searchAlertObservables those of its alerts.
func (h *handler) searchObservables(c echo.Context) error {
	return h.observables(c, cases.Parent{}, cases.PathCaseID)
}

func (h *handler) searchAlertObservables(c echo.Context) error {
	return h.observables(c, cases.Parent{}, cases.PathAlertID)
}

// observables lists the observables of a parent, or (with no parent) those that have the parent path.
func (h *handler) observables(c echo.Context, p cases.Parent, parentPath ...string) error {
	if err := rewriteSearchQuery(c); err != nil {
		return err
	}
	f, pg, err := web.Search(c, cases.ObservableFields, h.max)
	if err != nil {
		return err
	}
	for _, path := range parentPath {
		f = search.Node{Op: search.OpAnd, Children: []search.Node{f, {Op: search.OpExists, Path: path}}}
	}
	list, total, err := h.svc.Observables(c.Request().Context(), route.Caller(c), p, f, pg)
	if err != nil {
		return err
	}
	return web.List(c, total, route.MapSlice(list, observableJSON))
}

type updateObservableRequest struct {
	IOC              web.Opt[bool]        `json:"ioc"`
	Sighted          web.Opt[bool]        `json:"sighted"`
	IgnoreSimilarity web.Opt[bool]        `json:"ignoreSimilarity"`
	Tags             web.Opt[web.Strings] `json:"tags"`
	Message          web.Opt[string]      `json:"message"`
	TLP              web.Opt[int]         `json:"tlp"`
	DataType         web.Opt[string]      `json:"dataType"`
	Data             web.Opt[string]      `json:"data"`
}

func (h *handler) updateObservable(c echo.Context) error {
	u, err := bindObservableUpdate(c)
	if err != nil {
		return err
	}
	o, err := h.svc.UpdateObservable(c.Request().Context(), route.Caller(c), web.Param(c, "observableId"), u)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, observableJSON(o))
}

// bindObservableUpdate reads the observable fields of a PATCH body (single or _bulk).
func bindObservableUpdate(c echo.Context) (cases.ObservableUpdate, error) {
	var req updateObservableRequest
	if err := web.Bind(c, &req); err != nil {
		return cases.ObservableUpdate{}, err
	}
	return cases.ObservableUpdate{
		DataType: route.Change(req.DataType), Data: route.Change(req.Data), IOC: route.Change(req.IOC), Sighted: route.Change(req.Sighted),
		IgnoreSimilarity: route.Change(req.IgnoreSimilarity), Tags: route.StringsChange(req.Tags), Message: route.Change(req.Message),
		TLP: route.Change(req.TLP)}, nil
}

func (h *handler) deleteObservable(c echo.Context) error {
	if err := h.svc.DeleteObservable(c.Request().Context(), route.Caller(c), web.Param(c, "observableId")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// rewriteSearchQuery brings the reference system's query operators that pkg/search lacks into its language,
// in the request's `query`: {_parent: {_type: "case"|"alert"|"case_task", _query: {_id: X}}} becomes
// {case|alert|task: X} (observables, alerts, tasks and logs share it; a parent the searched records lack is the
// search's unknown-field 400), {_is: {f: v}} becomes {f: v}, {_ne: {f: v}} becomes {_not: {f: v}}. Other uses
// of _parent are a 400.
func rewriteSearchQuery(c echo.Context) error {
	f, err := web.Fields(c)
	if err != nil {
		return err
	}
	q, ok := f["query"]
	if !ok {
		return nil
	}
	if s, isString := q.(string); isString {
		var v any
		if json.Unmarshal([]byte(s), &v) != nil {
			return nil // web.Search reports it
		}
		q = v
	}
	out, err := query.RewriteFilter(q)
	if err != nil {
		return err
	}
	f["query"] = out
	return nil
}
