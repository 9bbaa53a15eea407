package webui

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/identity"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/observable"
	"github.com/openir/platform/pkg/search"
	"github.com/openir/platform/pkg/web"
	"github.com/openir/platform/pkg/webui"
)

// jobSorts are the sortable columns of the job history (storage paths).
var jobSorts = map[string]bool{"createdAt": true, "workerName": true, "dataType": true, "status": true, "tlp": true}

var jobStatuses = []string{analysis.JobWaiting, analysis.JobInProgress, analysis.JobSuccess, analysis.JobFailure, analysis.JobDeleted}

// jobListPage is the job history: filters in the URL, sortable columns, exact count, a live region.
type jobListPage struct {
	webui.Page
	List     webui.List
	Jobs     []jobRow
	Statuses []string
}

// jobRow is a job as the history shows it, its texts made once in Go: each template function call costs a
// reflect call besides the escaper's, and the history renders up to 500 rows (issue 25's bench row).
type jobRow struct {
	ID, Created, WorkerName, DataType, Value, Status, CreatedBy string
	Responder, File                                             bool
	TLP                                                         int
}

func jobRows(jobs []analysis.Job) []jobRow {
	rows := make([]jobRow, len(jobs))
	for i, j := range jobs {
		r := jobRow{ID: j.ID, Created: webui.Date(j.CreatedAt), WorkerName: j.WorkerName, DataType: j.DataType,
			Status: j.Status, CreatedBy: j.CreatedBy, Responder: j.Kind == analysis.KindResponder, TLP: j.TLP}
		if j.Attachment != nil {
			r.File, r.Value = true, j.Attachment.Name
		} else {
			r.Value = dataText(j.Data)
		}
		rows[i] = r
	}
	return rows
}

// jobFilter is the history's filter from the query string: analyzer (name or id), dataType, status, value
// (words of the observable), type (analyzer or responder), from and to (dates, UTC, to inclusive).
func jobFilter(c echo.Context) (search.Node, error) {
	q := c.QueryParams()
	var parts []search.Node
	if s := strings.TrimSpace(q.Get("analyzer")); s != "" {
		parts = append(parts, search.Node{Op: search.OpOr, Children: []search.Node{eq("workerId", s), eq("workerName", s)}})
	}
	if s := strings.TrimSpace(q.Get("dataType")); s != "" {
		parts = append(parts, eq("dataType", s))
	}
	if s := q.Get("status"); s != "" {
		if !slices.Contains(jobStatuses, s) {
			return all, apperr.New(apperr.BadRequest, "status must be one of "+strings.Join(jobStatuses, ", "))
		}
		parts = append(parts, eq("status", s))
	}
	if s := strings.TrimSpace(q.Get("value")); s != "" {
		parts = append(parts, search.Node{Op: search.OpLike, Path: "data", Value: s})
	}
	switch s := q.Get("type"); s {
	case "":
	case string(analysis.KindAnalyzer), string(analysis.KindResponder):
		parts = append(parts, eq("kind", s))
	default:
		return all, apperr.New(apperr.BadRequest, "type must be analyzer or responder")
	}
	for _, d := range []struct {
		param string
		op    search.Op
		plus  time.Duration
	}{{"from", search.OpGte, 0}, {"to", search.OpLt, 24 * time.Hour}} {
		s := q.Get(d.param)
		if s == "" {
			continue
		}
		t, err := time.Parse("2006-01-02", s)
		if err != nil {
			return all, apperr.New(apperr.BadRequest, d.param+" must be a date (YYYY-MM-DD)")
		}
		parts = append(parts, search.Node{Op: d.op, Path: "createdAt", Value: t.Add(d.plus).UnixMilli()})
	}
	return and(parts...), nil
}

func (h *Handler) jobList(c echo.Context) error {
	cl := caller(c)
	v, sort, err := webui.ParseList(c.QueryParams(), "-createdAt", jobSorts)
	if err != nil {
		return err
	}
	f, err := jobFilter(c)
	if err != nil {
		return err
	}
	jobs, total, err := h.s.Jobs.Search(c.Request().Context(), cl, f, search.Page{Offset: v.Offset, Limit: v.Size, Sort: sort})
	if err != nil {
		return err
	}
	v.SetTotal(total)
	p := jobListPage{Page: h.base(c, "Jobs"), List: v, Jobs: jobRows(jobs), Statuses: jobStatuses}
	p.Current = "Jobs"
	return h.pages.Render(c, http.StatusOK, "jobs", fragment(c, "jobs-live"), p)
}

// fragment is the template to render alone when the request is a live region's refresh.
func fragment(c echo.Context, name string) string {
	if c.QueryParam(webui.FragmentParam) != "" {
		return name
	}
	return ""
}

// jobPage is a job's report: status, timings, taxonomies, the full report as a tree and as raw JSON,
// artifacts, operations, re-run and delete.
type jobPage struct {
	webui.Page
	ZipPassword string
	Job         analysis.Job
	Report      *analysis.Report
	// Tree is the full report as a tree, Raw the report as the API returns it, indented and escaped: written
	// by Render where the page prints their markers (webui.Slot).
	Tree, Raw webui.Slot
	CanWrite  bool
	Rerun     map[string]any // the run request of a re-run with force (nil: not offered)
}

func (h *Handler) jobPage(c echo.Context) error {
	cl := caller(c)
	j, r, err := h.s.Jobs.Report(c.Request().Context(), cl, web.Param(c, "id"))
	if err != nil {
		return err
	}
	p := jobPage{Page: h.base(c, "Job "+j.WorkerName), ZipPassword: h.s.ZipPassword, Job: j, Report: r, CanWrite: cl.Has(identity.RoleAnalyze, identity.RoleOrgAdmin)}
	p.Current = "Jobs"
	if r != nil {
		raw := map[string]any{"success": r.Success}
		if r.Success {
			raw["summary"], raw["full"], raw["operations"] = r.Summary, r.Full, r.Operations
		} else {
			raw["errorMessage"], raw["input"] = r.ErrorMessage, r.Input
		}
		p.Raw = webui.TextSlot("raw", raw)
		p.Tree = webui.TreeSlot("tree", r.Full)
	}
	if p.CanWrite && j.Attachment == nil && j.Status != analysis.JobDeleted {
		// A file job cannot be sent again from a button (the page has not the file): it is run from New analysis.
		p.Rerun = map[string]any{"dataType": j.DataType, "data": j.Data, "tlp": j.TLP, "pap": j.PAP, "message": j.Message,
			"parameters": j.Parameters, "force": true}
		if j.Parameters == nil {
			p.Rerun["parameters"] = map[string]any{}
		}
	}
	return h.pages.Render(c, http.StatusOK, "job", fragment(c, "job-live"), p, p.Tree, p.Raw)
}

// analyzePage is a new analysis: the analyzers of the organization that accept the chosen data type, the
// values (one per line) or a file, TLP, PAP, message and parameters. The form sends one run per value and
// analyzer (ui.js data-fanout). With the data type "guess" (GuessType) each value's type is guessed
// (observable.Guess) and the page's plan region (GET /ui/analyze/plan, ui.js data-plan) lists, per value, its
// type and the analyzers that accept it; the form sends one run per box checked there.
type analyzePage struct {
	webui.Page
	DataType  string
	DataTypes []string          // the types the organization's analyzers accept
	Analyzers []analysis.Worker // those that accept DataType
	Guess     bool              // DataType is GuessType
	// Values are the values given in the URL (values, one per line) with the data type guessed, and Plan their
	// plan, rendered with the page; Planned says which lines it is for (ui.js data-planned).
	Values, Planned string
	Plan            *planPage
}

// GuessType is the new analysis's data type that guesses each value's own.
const GuessType = "guess"

// maxPlanValues bounds the values the guessing plan lists (a longer list is sent with one data type).
const maxPlanValues = 200

// analyzers are the organization's enabled analyzers by name.
func (h *Handler) analyzers(c echo.Context) ([]analysis.Worker, error) {
	cl := caller(c)
	if err := cl.Require(identity.RoleAnalyze); err != nil {
		return nil, err
	}
	ws, _, err := h.s.Workers.List(c.Request().Context(), cl, analysis.KindAnalyzer, all,
		search.Page{Limit: 1000, Sort: []search.SortKey{{Path: "name"}}})
	return ws, err
}

func (h *Handler) analyzePage(c echo.Context) error {
	ws, err := h.analyzers(c)
	if err != nil {
		return err
	}
	p := analyzePage{Page: h.base(c, "New analysis"), DataType: c.QueryParam("dataType")}
	p.Current = "New analysis"
	p.Guess = p.DataType == GuessType
	for _, w := range ws {
		for _, t := range w.DataTypeList {
			if !slices.Contains(p.DataTypes, t) {
				p.DataTypes = append(p.DataTypes, t)
			}
		}
		if slices.Contains(w.DataTypeList, p.DataType) {
			p.Analyzers = append(p.Analyzers, w)
		}
	}
	slices.Sort(p.DataTypes)
	if p.DataType != "" && !p.Guess && !slices.Contains(p.DataTypes, p.DataType) {
		return apperr.New(apperr.BadRequest, "no enabled analyzer accepts the data type "+p.DataType)
	}
	if p.Guess && c.QueryParam("values") != "" {
		p.Values = c.QueryParam("values")
		p.Planned = planLines(p.Values)
		plan, err := plan(ws, p.Values)
		if err != nil {
			return err
		}
		p.Plan = &plan
	}
	return h.pages.Render(c, http.StatusOK, "analyze", "", p)
}

// planLines are the non-empty lines of values, trimmed, as ui.js sends them to the plan (and keeps them in
// the URL).
func planLines(values string) string {
	var out []string
	for _, l := range strings.Split(values, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// planPage is the guessing plan of a new analysis: per value, its guessed type and the analyzers to run.
type planPage struct {
	Rows    []planRow
	More    int // values past maxPlanValues, not listed
	Choices bool
}

type planRow struct {
	Value     string
	DataType  string // "" = not guessed
	Analyzers []planRun
}

// planRun is a box of the plan: an analyzer on one value, with the fields of its run (ui.js data-fields).
type planRun struct {
	Name, Fields string
}

// analyzePlan is GET /ui/analyze/plan?values=…: the fragment ui.js puts in the new analysis's plan region
// as the values (one per line) are typed.
func (h *Handler) analyzePlan(c echo.Context) error {
	ws, err := h.analyzers(c)
	if err != nil {
		return err
	}
	p, err := plan(ws, c.QueryParam("values"))
	if err != nil {
		return err
	}
	return h.pages.Render(c, http.StatusOK, "analyze", "analyze-plan", p)
}

// plan is the guessing plan of values (one per line) over the organization's analyzers ws.
func plan(ws []analysis.Worker, values string) (planPage, error) {
	var p planPage
	seen := map[string]bool{}
	for _, line := range strings.Split(values, "\n") {
		v := strings.TrimSpace(line)
		if v == "" || seen[v] {
			continue
		}
		seen[v] = true
		if len(p.Rows) == maxPlanValues {
			p.More++
			continue
		}
		row := planRow{Value: v}
		if t, ok := observable.Guess(v); ok {
			row.DataType = t
			for _, w := range ws {
				if slices.Contains(w.DataTypeList, t) {
					f, err := json.Marshal(map[string]string{"worker": w.ID, "dataType": t, "data": v})
					if err != nil {
						return p, err
					}
					row.Analyzers = append(row.Analyzers, planRun{Name: w.Name, Fields: string(f)})
					p.Choices = true
				}
			}
		}
		p.Rows = append(p.Rows, row)
	}
	return p, nil
}
