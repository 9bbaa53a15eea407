package api

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/customfields"
	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/search"
	"github.com/openir/platform/pkg/web"
)

// alertResponse is an alert as the reference system's v0 API writes it, with read (its v1 field) besides
// the derived status.
type alertResponse struct {
	route.Meta
	Type         string                    `json:"type"`
	Source       string                    `json:"source"`
	SourceRef    string                    `json:"sourceRef"`
	ExternalLink *string                   `json:"externalLink"`
	Case         *string                   `json:"case"`
	Title        string                    `json:"title"`
	Description  string                    `json:"description"`
	Severity     int                       `json:"severity"`
	Date         int64                     `json:"date"`
	LastSyncDate int64                     `json:"lastSyncDate"`
	Tags         []string                  `json:"tags"`
	TLP          int                       `json:"tlp"`
	PAP          int                       `json:"pap"`
	Status       string                    `json:"status"`
	Read         bool                      `json:"read"`
	Follow       bool                      `json:"follow"`
	CustomFields map[string]map[string]any `json:"customFields"`
	CaseTemplate *string                   `json:"caseTemplate"`
	Artifacts    []observableResponse      `json:"artifacts"`
	SimilarCases []similarCaseResponse     `json:"similarCases"`
}

func alertJSON(a cases.Alert, obs []cases.Observable) alertResponse {
	tags := a.Tags
	if tags == nil {
		tags = []string{}
	}
	return alertResponse{Meta: route.MetaOf(a.ID, "alert", a.Meta), Type: a.Type, Source: a.Source, SourceRef: a.SourceRef,
		ExternalLink: route.NullString(a.ExternalLink), Case: route.NullString(a.CaseID), Title: a.Title, Description: a.Description,
		Severity: a.Severity, Date: route.Millis(a.Date), LastSyncDate: route.Millis(a.LastSyncDate), Tags: tags, TLP: a.TLP,
		PAP: a.PAP, Status: a.Status(), Read: a.Read, Follow: a.Follow, CustomFields: customfields.ValuesJSON(a.CustomFields),
		CaseTemplate: route.NullString(a.Template), Artifacts: route.MapSlice(obs, observableJSON),
		SimilarCases: []similarCaseResponse{}}
}

// alertWithArtifacts renders an alert with its observables (read by id: one lookup each).
func (h *handler) alertWithArtifacts(ctx context.Context, a cases.Alert) (alertResponse, error) {
	obs, err := h.svc.AlertObservables(ctx, a)
	if err != nil {
		return alertResponse{}, err
	}
	return alertJSON(a, obs), nil
}

// similarCaseResponse is the contract's similar-case result; on GET /api/alert/{id}?similarity=1 it also
// carries the reference system's v0 flat fields (the case's id, caseId, title… and similarArtifactCount,
// artifactCount).
type similarCaseResponse struct {
	Case                   caseV1Response `json:"case"`
	SimilarObservableCount int            `json:"similarObservableCount"`
	ObservableCount        int            `json:"observableCount"`
	SimilarIOCCount        int            `json:"similarIocCount"`
	IOCCount               int            `json:"iocCount"`
	ObservableTypes        map[string]int `json:"observableTypes"`
	*similarCaseV0
}

type similarCaseV0 struct {
	ID                   string   `json:"_id"`
	IDAlias              string   `json:"id"`
	CaseID               int64    `json:"caseId"`
	Title                string   `json:"title"`
	Severity             int      `json:"severity"`
	StartDate            int64    `json:"startDate"`
	EndDate              *int64   `json:"endDate"`
	ResolutionStatus     *string  `json:"resolutionStatus"`
	Tags                 []string `json:"tags"`
	TLP                  int      `json:"tlp"`
	Status               string   `json:"status"`
	SimilarArtifactCount int      `json:"similarArtifactCount"`
	ArtifactCount        int      `json:"artifactCount"`
}

// caseV1Response is a case inside a similar-case result: the case with the reference system's v1 names
// besides (number, extraData, and the bookkeeping fields written _createdBy, _createdAt, _updatedBy,
// _updatedAt), as the contract shows it.
type caseV1Response struct {
	caseResponse
	Number     int64          `json:"number"`
	ExtraData  map[string]any `json:"extraData"`
	UCreatedBy string         `json:"_createdBy"`
	UCreatedAt int64          `json:"_createdAt"`
	UUpdatedBy *string        `json:"_updatedBy"`
	UUpdatedAt *int64         `json:"_updatedAt"`
}

func (h *handler) caseV1JSON(cl identity.Caller, cs cases.Case) caseV1Response {
	r := h.caseJSON(cl, cs, nil)
	return caseV1Response{caseResponse: r, Number: cs.Number, ExtraData: map[string]any{}, UCreatedBy: r.CreatedBy,
		UCreatedAt: r.CreatedAt, UUpdatedBy: r.UpdatedBy, UUpdatedAt: r.UpdatedAt}
}

func (h *handler) similarJSON(cl identity.Caller, sc cases.SimilarCase, v0 bool) similarCaseResponse {
	types := sc.ObservableTypes
	if types == nil {
		types = map[string]int{}
	}
	r := similarCaseResponse{Case: h.caseV1JSON(cl, sc.Case), SimilarObservableCount: sc.SimilarObservables,
		ObservableCount: sc.Observables, SimilarIOCCount: sc.SimilarIOCs, IOCCount: sc.IOCs, ObservableTypes: types}
	if v0 {
		cs := sc.Case
		tags := cs.Tags
		if tags == nil {
			tags = []string{}
		}
		r.similarCaseV0 = &similarCaseV0{ID: cs.ID, IDAlias: cs.ID, CaseID: cs.Number, Title: cs.Title,
			Severity: cs.Severity, StartDate: route.Millis(cs.StartDate), EndDate: route.NullMillis(cs.EndDate),
			ResolutionStatus: route.NullString(cs.ResolutionStatus), Tags: tags, TLP: cs.TLP, Status: cs.Status,
			SimilarArtifactCount: sc.SimilarObservables, ArtifactCount: sc.Observables}
	}
	return r
}

// artifactRequest is an observable inline in an alert (files as data "name;contentType;base64").
type artifactRequest struct {
	DataType         string      `json:"dataType"`
	Data             web.Strings `json:"data"`
	Message          string      `json:"message"`
	StartDate        *int64      `json:"startDate"`
	TLP              *int        `json:"tlp"`
	Tags             web.Strings `json:"tags"`
	IOC              bool        `json:"ioc"`
	Sighted          bool        `json:"sighted"`
	IgnoreSimilarity bool        `json:"ignoreSimilarity"`
}

type createAlertRequest struct {
	Type         string                     `json:"type"`
	Source       string                     `json:"source"`
	SourceRef    string                     `json:"sourceRef"`
	ExternalLink string                     `json:"externalLink"`
	Title        string                     `json:"title"`
	Description  string                     `json:"description"`
	Severity     *int                       `json:"severity"`
	TLP          *int                       `json:"tlp"`
	PAP          *int                       `json:"pap"`
	Date         *int64                     `json:"date"`
	Tags         web.Strings                `json:"tags"`
	Follow       *bool                      `json:"follow"`
	CustomFields map[string]json.RawMessage `json:"customFields"`
	CaseTemplate string                     `json:"caseTemplate"`
	Artifacts    []artifactRequest          `json:"artifacts"`
}

func (h *handler) createAlert(c echo.Context) error {
	var req createAlertRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	cfs, err := customfields.Inputs(req.CustomFields)
	if err != nil {
		return err
	}
	n := cases.NewAlert{Type: req.Type, Source: req.Source, SourceRef: req.SourceRef, ExternalLink: req.ExternalLink,
		Title: req.Title, Description: req.Description, Severity: req.Severity, TLP: req.TLP, PAP: req.PAP,
		Date: route.TimeOpt(req.Date), Tags: req.Tags, Follow: req.Follow, CustomFields: cfs, Template: req.CaseTemplate}
	for _, a := range req.Artifacts {
		n.Artifacts = append(n.Artifacts, cases.NewObservable{DataType: a.DataType, Data: a.Data, Message: a.Message,
			StartDate: route.TimeOpt(a.StartDate), TLP: a.TLP, Tags: a.Tags, IOC: a.IOC, Sighted: a.Sighted,
			IgnoreSimilarity: a.IgnoreSimilarity})
	}
	a, obs, err := h.svc.CreateAlert(c.Request().Context(), route.Caller(c), n)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, alertJSON(a, obs))
}

func (h *handler) getAlert(c echo.Context) error {
	ctx := c.Request().Context()
	cl := route.Caller(c)
	a, err := h.svc.Alert(ctx, cl, web.Param(c, "alertId"))
	if err != nil {
		return err
	}
	out, err := h.alertWithArtifacts(ctx, a)
	if err != nil {
		return err
	}
	if route.Flag(c, "similarity") {
		scs, err := h.svc.SimilarCases(ctx, cl, a, search.Node{Op: search.OpAll})
		if err != nil {
			return err
		}
		out.SimilarCases = route.MapSlice(scs, func(sc cases.SimilarCase) similarCaseResponse { return h.similarJSON(cl, sc, true) })
	}
	return c.JSON(http.StatusOK, out)
}

func (h *handler) listAlerts(c echo.Context) error {
	ctx := c.Request().Context()
	if err := rewriteSearchQuery(c); err != nil {
		return err
	}
	f, p, err := web.Search(c, cases.AlertFields, h.max)
	if err != nil {
		return err
	}
	list, total, err := h.svc.Alerts(ctx, route.Caller(c), f, p)
	if err != nil {
		return err
	}
	out := make([]alertResponse, len(list))
	for i, a := range list {
		if out[i], err = h.alertWithArtifacts(ctx, a); err != nil {
			return err
		}
	}
	return web.List(c, total, out)
}

type updateAlertRequest struct {
	Type         web.Opt[string]                     `json:"type"`
	Source       web.Opt[string]                     `json:"source"`
	SourceRef    web.Opt[string]                     `json:"sourceRef"`
	Title        web.Opt[string]                     `json:"title"`
	Description  web.Opt[string]                     `json:"description"`
	Severity     web.Opt[int]                        `json:"severity"`
	TLP          web.Opt[int]                        `json:"tlp"`
	PAP          web.Opt[int]                        `json:"pap"`
	Date         web.Opt[int64]                      `json:"date"`
	LastSyncDate web.Opt[int64]                      `json:"lastSyncDate"`
	Tags         web.Opt[web.Strings]                `json:"tags"`
	Follow       web.Opt[bool]                       `json:"follow"`
	ExternalLink web.Opt[string]                     `json:"externalLink"`
	CaseTemplate web.Opt[string]                     `json:"caseTemplate"`
	CustomFields web.Opt[map[string]json.RawMessage] `json:"customFields"`
}

func (h *handler) updateAlert(c echo.Context) error {
	var req updateAlertRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	u := cases.AlertUpdate{Type: route.Change(req.Type), Source: route.Change(req.Source), SourceRef: route.Change(req.SourceRef),
		Title: route.Change(req.Title), Description: route.Change(req.Description), Severity: route.Change(req.Severity),
		TLP: route.Change(req.TLP), PAP: route.Change(req.PAP), Date: route.TimeChange(req.Date), LastSyncDate: route.TimeChange(req.LastSyncDate),
		Tags: route.StringsChange(req.Tags), Follow: route.Change(req.Follow), ExternalLink: route.Change(req.ExternalLink),
		Template: route.Change(req.CaseTemplate)}
	if req.CustomFields.Set {
		cfs, err := customfields.Inputs(req.CustomFields.V)
		if err != nil {
			return err
		}
		if cfs == nil {
			cfs = map[string]customfield.Input{}
		}
		u.CustomFields = record.Change[map[string]customfield.Input]{Set: true, V: cfs}
	}
	a, err := h.svc.UpdateAlert(c.Request().Context(), route.Caller(c), web.Param(c, "alertId"), u)
	return h.alertAnswer(c, a, err)
}

// alertAnswer answers 200 with the alert and its observables, or the error.
func (h *handler) alertAnswer(c echo.Context, a cases.Alert, err error) error {
	if err != nil {
		return err
	}
	out, err := h.alertWithArtifacts(c.Request().Context(), a)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (h *handler) deleteAlert(c echo.Context) error {
	if err := h.svc.DeleteAlert(c.Request().Context(), route.Caller(c), web.Param(c, "alertId")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (h *handler) markAsRead(c echo.Context) error {
	a, err := h.svc.MarkAsRead(c.Request().Context(), route.Caller(c), web.Param(c, "alertId"), true)
	return h.alertAnswer(c, a, err)
}

func (h *handler) markAsUnread(c echo.Context) error {
	a, err := h.svc.MarkAsRead(c.Request().Context(), route.Caller(c), web.Param(c, "alertId"), false)
	return h.alertAnswer(c, a, err)
}

func (h *handler) follow(c echo.Context) error {
	a, err := h.svc.Follow(c.Request().Context(), route.Caller(c), web.Param(c, "alertId"), true)
	return h.alertAnswer(c, a, err)
}

func (h *handler) unfollow(c echo.Context) error {
	a, err := h.svc.Follow(c.Request().Context(), route.Caller(c), web.Param(c, "alertId"), false)
	return h.alertAnswer(c, a, err)
}

type createCaseFromAlertRequest struct {
	CaseTemplate string `json:"caseTemplate"`
}

// createCaseFromAlert answers 201 with the new case (200 with the existing one when the alert already has a
// case).
func (h *handler) createCaseFromAlert(c echo.Context) error {
	var req createCaseFromAlertRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	cs, created, err := h.svc.CreateCaseFromAlert(c.Request().Context(), route.Caller(c), web.Param(c, "alertId"), req.CaseTemplate)
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if !created {
		status = http.StatusOK
	}
	return c.JSON(status, h.caseJSON(route.Caller(c), cs, nil))
}

func (h *handler) mergeAlert(c echo.Context) error {
	cs, err := h.svc.MergeAlert(c.Request().Context(), route.Caller(c), web.Param(c, "alertId"), web.Param(c, "caseId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, h.caseJSON(route.Caller(c), cs, nil))
}

type mergeAlertsRequest struct {
	CaseID   string      `json:"caseId"`
	AlertIDs web.Strings `json:"alertIds"`
}

// mergeAlerts merges several alerts into a case (POST /api/alert/merge/_bulk) and answers with the case.
func (h *handler) mergeAlerts(c echo.Context) error {
	var req mergeAlertsRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	cs, err := h.svc.MergeAlerts(c.Request().Context(), route.Caller(c), req.CaseID, req.AlertIDs)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, h.caseJSON(route.Caller(c), cs, nil))
}
