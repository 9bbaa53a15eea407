package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
	"github.com/openir/platform/pkg/web"
)

type attachmentResponse struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Hashes      []string `json:"hashes"`
	Size        int64    `json:"size"`
	ContentType string   `json:"contentType"`
}

func attachmentJSON(a *analysis.Attachment) *attachmentResponse {
	if a == nil {
		return nil
	}
	return &attachmentResponse{ID: a.ID, Name: a.Name, Hashes: a.Hashes, Size: a.Size, ContentType: a.ContentType}
}

type jobResponse struct {
	ID           string `json:"id"`
	Type         string `json:"type"`
	Organization string `json:"organization"`
	// The reference server's own names of the worker (cortex4py's Job model reads them); analyzer* and
	// responder* below are the aliases the contract lists.
	WorkerDefinitionID    string              `json:"workerDefinitionId"`
	WorkerID              string              `json:"workerId"`
	WorkerName            string              `json:"workerName"`
	AnalyzerDefinitionID  string              `json:"analyzerDefinitionId"`
	AnalyzerID            string              `json:"analyzerId"`
	AnalyzerName          string              `json:"analyzerName"`
	ResponderDefinitionID string              `json:"responderDefinitionId,omitempty"`
	ResponderID           string              `json:"responderId,omitempty"`
	ResponderName         string              `json:"responderName,omitempty"`
	DataType              string              `json:"dataType"`
	Status                string              `json:"status"`
	Data                  any                 `json:"data,omitempty"`
	Attachment            *attachmentResponse `json:"attachment,omitempty"`
	Parameters            string              `json:"parameters"` // spec §2: a JSON-encoded string
	Message               string              `json:"message"`
	Label                 string              `json:"label,omitempty"`
	TLP                   int                 `json:"tlp"`
	PAP                   int                 `json:"pap"`
	ErrorMessage          string              `json:"errorMessage,omitempty"`
	StartDate             *int64              `json:"startDate,omitempty"`
	EndDate               *int64              `json:"endDate,omitempty"`
	Date                  int64               `json:"date"`
	CreatedAt             int64               `json:"createdAt"`
	CreatedBy             string              `json:"createdBy"`
	UpdatedAt             int64               `json:"updatedAt,omitempty"`
	UpdatedBy             string              `json:"updatedBy,omitempty"`
	FromCache             bool                `json:"fromCache,omitempty"`
	Report                any                 `json:"report,omitempty"`
}

func optMillis(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	v := t.UnixMilli()
	return &v
}

func jobJSON(j analysis.Job) jobResponse {
	params, _ := json.Marshal(j.Parameters)
	r := jobResponse{ID: j.ID, Type: string(j.Kind), Organization: j.Organization,
		WorkerDefinitionID: j.DefinitionID, WorkerID: j.WorkerID, WorkerName: j.WorkerName,
		AnalyzerDefinitionID: j.DefinitionID, AnalyzerID: j.WorkerID, AnalyzerName: j.WorkerName,
		DataType: j.DataType, Status: j.Status, Data: j.Data, Attachment: attachmentJSON(j.Attachment),
		Parameters: string(params), Message: j.Message, Label: j.Label, TLP: j.TLP, PAP: j.PAP,
		ErrorMessage: j.ErrorMessage, StartDate: optMillis(j.StartDate), EndDate: optMillis(j.EndDate),
		Date: ms(j.CreatedAt), CreatedAt: ms(j.CreatedAt), CreatedBy: j.CreatedBy, UpdatedAt: ms(j.UpdatedAt),
		UpdatedBy: j.UpdatedBy, FromCache: j.FromCache}
	if j.Kind == analysis.KindResponder {
		r.ResponderDefinitionID, r.ResponderID, r.ResponderName = j.DefinitionID, j.WorkerID, j.WorkerName
	}
	return r
}

type artifactResponse struct {
	ID         string              `json:"id"`
	DataType   string              `json:"dataType"`
	Data       string              `json:"data,omitempty"`
	Attachment *attachmentResponse `json:"attachment,omitempty"`
	Message    string              `json:"message,omitempty"`
	TLP        int                 `json:"tlp"`
	Tags       []string            `json:"tags"`
	CreatedAt  int64               `json:"createdAt"`
	CreatedBy  string              `json:"createdBy"`
}

func artifactJSON(a analysis.Artifact) artifactResponse {
	tags := a.Tags
	if tags == nil {
		tags = []string{}
	}
	return artifactResponse{ID: a.ID, DataType: a.DataType, Data: a.Data, Attachment: attachmentJSON(a.Attachment),
		Message: a.Message, TLP: a.TLP, Tags: tags, CreatedAt: ms(a.CreatedAt), CreatedBy: a.CreatedBy}
}

type successReport struct {
	Success    bool               `json:"success"`
	Summary    map[string]any     `json:"summary"`
	Full       map[string]any     `json:"full"`
	Artifacts  []artifactResponse `json:"artifacts"`
	Operations []map[string]any   `json:"operations"`
}

type failureReport struct {
	Success      bool    `json:"success"`
	ErrorMessage string  `json:"errorMessage"`
	Input        *string `json:"input"`
}

// withReport renders a job plus its `report`: the report object when finished, the status string otherwise.
func withReport(j analysis.Job, r *analysis.Report) jobResponse {
	resp := jobJSON(j)
	switch {
	case r == nil:
		resp.Report = j.Status
	case r.Success:
		ops := r.Operations
		if ops == nil {
			ops = []map[string]any{}
		}
		resp.Report = successReport{Success: true, Summary: r.Summary, Full: r.Full,
			Artifacts: mapSlice(r.Artifacts, artifactJSON), Operations: ops}
	default:
		fr := failureReport{ErrorMessage: r.ErrorMessage}
		if r.Input != "" {
			fr.Input = &r.Input
		}
		resp.Report = fr
	}
	return resp
}

// runRequest is the body of POST /api/{analyzer,responder}/{id}/run. `force` also comes from the query string
// (the Python client sends ?force=1). The legacy form {"data": …, "attributes": {…}} is accepted too.
// data and parameters stay raw JSON until decoded with their numbers as written (numbers.go).
type runRequest struct {
	DataType   string          `json:"dataType"`
	Data       json.RawMessage `json:"data"`
	TLP        *int            `json:"tlp"`
	PAP        *int            `json:"pap"`
	Message    string          `json:"message"`
	Parameters json.RawMessage `json:"parameters"`
	Label      string          `json:"label"`
	Force      bool            `json:"force"`
	Attributes *struct {
		DataType   string          `json:"dataType"`
		TLP        *int            `json:"tlp"`
		PAP        *int            `json:"pap"`
		Message    string          `json:"message"`
		Parameters json.RawMessage `json:"parameters"`
		Label      string          `json:"label"`
	} `json:"attributes"`
}

func (r runRequest) submission(file *web.File) (analysis.Submission, error) {
	data, err := rawValue(r.Data)
	if err != nil {
		return analysis.Submission{}, apperr.Fields(apperr.FieldError{Name: "data", Message: "malformed JSON"})
	}
	params, err := rawObject("parameters", r.Parameters)
	if err != nil {
		return analysis.Submission{}, err
	}
	s := analysis.Submission{DataType: r.DataType, Data: data, TLP: r.TLP, PAP: r.PAP,
		Message: r.Message, Parameters: params, Label: r.Label, Force: r.Force}
	if a := r.Attributes; a != nil {
		if s.DataType == "" {
			s.DataType = a.DataType
		}
		if s.TLP == nil {
			s.TLP = a.TLP
		}
		if s.PAP == nil {
			s.PAP = a.PAP
		}
		if s.Message == "" {
			s.Message = a.Message
		}
		if s.Parameters == nil {
			if s.Parameters, err = rawObject("attributes.parameters", a.Parameters); err != nil {
				return analysis.Submission{}, err
			}
		}
		if s.Label == "" {
			s.Label = a.Label
		}
	}
	if file != nil {
		s.File = &analysis.Upload{Name: file.Filename, ContentType: file.Header.Get("Content-Type"),
			Open: func() (io.ReadCloser, error) { return file.Open() }}
	}
	return s, nil
}

func (h *handler) runWorker(c echo.Context) error {
	var req runRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	file, err := web.FormFile(c, "attachment", "data")
	if err != nil {
		return err
	}
	sub, err := req.submission(file)
	if err != nil {
		return err
	}
	if k := c.Request().Header.Get("Idempotency-Key"); k != "" {
		if len(k) > 255 || strings.ContainsFunc(k, func(r rune) bool { return r < ' ' || r > '~' }) {
			return apperr.New(apperr.BadRequest, "Idempotency-Key must be at most 255 printable ASCII characters")
		}
		sub.IdempotencyKey = k
	}
	j, err := h.jobs.Submit(c.Request().Context(), caller(c), kindOf(c), web.Param(c, "id"), sub)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, jobJSON(j))
}

func (h *handler) getJob(c echo.Context) error {
	j, err := h.jobs.Job(c.Request().Context(), caller(c), web.Param(c, "id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, jobJSON(j))
}

func (h *handler) jobReport(c echo.Context) error {
	j, r, err := h.jobs.Report(c.Request().Context(), caller(c), web.Param(c, "id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, withReport(j, r))
}

var atMostRe = regexp.MustCompile(`^(\d+)\s*([a-zA-Z]+)$`)

var atMostUnits = map[string]time.Duration{
	"ms": time.Millisecond, "milli": time.Millisecond, "millis": time.Millisecond,
	"millisecond": time.Millisecond, "milliseconds": time.Millisecond,
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
}

// parseAtMost reads waitreport's atMost: "<n><unit>" (s, sec, second(s), m, min, minute(s), h, hour(s), …,
// an optional space between) or "Inf" (the server's maximum). Absent = 1 minute; 0 = max is -1.
func parseAtMost(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return time.Minute, nil
	case strings.EqualFold(s, "inf") || strings.EqualFold(s, "infinite"):
		return -1, nil
	}
	m := atMostRe.FindStringSubmatch(s)
	if m == nil {
		return 0, apperr.Errorf(apperr.BadRequest, "invalid atMost %q: use a number and a unit (second, minute, hour) or Inf", s)
	}
	unit, ok := atMostUnits[strings.ToLower(m[2])]
	n, err := strconv.ParseInt(m[1], 10, 64)
	if !ok || (err != nil && !errors.Is(err, strconv.ErrRange)) {
		return 0, apperr.Errorf(apperr.BadRequest, "invalid atMost %q: use a number and a unit (second, minute, hour) or Inf", s)
	}
	const year = 365 * 24 * time.Hour
	if err != nil || n > int64(year/unit) {
		return 0, apperr.Errorf(apperr.BadRequest, "invalid atMost %q: at most a year (use Inf for the server's maximum)", s)
	}
	return time.Duration(n) * unit, nil
}

func (h *handler) waitReport(c echo.Context) error {
	atMost, err := parseAtMost(c.QueryParam("atMost"))
	if err != nil {
		return err
	}
	j, r, err := h.jobs.WaitReport(c.Request().Context(), caller(c), web.Param(c, "id"), atMost)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, withReport(j, r))
}

func (h *handler) jobArtifacts(c echo.Context) error {
	arts, err := h.jobs.Artifacts(c.Request().Context(), caller(c), web.Param(c, "id"))
	if err != nil {
		return err
	}
	return web.List(c, int64(len(arts)), mapSlice(arts, artifactJSON))
}

func (h *handler) searchJobs(c echo.Context) error {
	f, p, err := web.Search(c, analysis.JobFields, h.max)
	if err != nil {
		return err
	}
	// GET /api/job's filters of the reference system.
	var extra []search.Node
	if v := c.QueryParam("dataTypeFilter"); v != "" {
		extra = append(extra, search.Node{Op: search.OpEq, Path: "dataType", Value: v})
	}
	if v := c.QueryParam("dataFilter"); v != "" {
		if err := search.CheckPattern("dataFilter", v); err != nil {
			return err
		}
		extra = append(extra, search.Node{Op: search.OpLike, Path: "data", Value: v})
	}
	if v := c.QueryParam("analyzerFilter"); v != "" {
		extra = append(extra, search.Node{Op: search.OpOr, Children: []search.Node{
			{Op: search.OpEq, Path: "workerId", Value: v}, {Op: search.OpEq, Path: "workerName", Value: v}}})
	}
	if len(extra) > 0 {
		f = search.Node{Op: search.OpAnd, Children: append(extra, f)}
	}
	jobs, total, err := h.jobs.Search(c.Request().Context(), caller(c), f, p)
	if err != nil {
		return err
	}
	return web.List(c, total, mapSlice(jobs, jobJSON))
}

func (h *handler) deleteJob(c echo.Context) error {
	if err := h.jobs.Delete(c.Request().Context(), caller(c), web.Param(c, "id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// download streams a stored file (an observable's file or a file artifact) of the caller's organization.
func (h *handler) download(c echo.Context) error {
	r, info, err := h.jobs.OpenFile(c.Request().Context(), caller(c), web.Param(c, "hash"))
	if err != nil {
		return err
	}
	defer r.Close()
	name := c.QueryParam("name")
	if name == "" || strings.ContainsAny(name, "/\\\x00\r\n\"") {
		name = info.ID
	}
	c.Response().Header().Set(echo.HeaderContentDisposition, fmt.Sprintf(`attachment; filename="%s"`, url.PathEscape(name)))
	c.Response().Header().Set(echo.HeaderContentLength, strconv.FormatInt(info.Size, 10))
	return c.Stream(http.StatusOK, "application/octet-stream", r)
}

// jobStatusRequest is the body of POST /api/job/status.
type jobStatusRequest struct {
	JobIDs web.Opt[[]string] `json:"jobIds"`
}

// jobStatuses answers {"<id>": "<status>" | "NotFound"} for several jobs at once (Cortex 3.1.5).
func (h *handler) jobStatuses(c echo.Context) error {
	var req jobStatusRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	if !req.JobIDs.Set || req.JobIDs.Null {
		return apperr.Fields(apperr.FieldError{Name: "jobIds", Message: "required: an array of job ids"})
	}
	st, err := h.jobs.Statuses(c.Request().Context(), caller(c), req.JobIDs.V)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}
