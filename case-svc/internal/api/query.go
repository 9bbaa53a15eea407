package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/audit"
	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
	"github.com/openir/platform/pkg/web"
)

// The query API (POST /api/v0/query and /api/v1/query, `?name=` is only a label): a pipeline of named steps
// that starts from records (get… by id, list…, waitingTasks), moves to related ones (tasks, observables,
// alerts, logs, jobs, case, similarCases), narrows them (filter), orders them (sort) and ends with the
// output (page, count, or everything up to search.max). Filters and sorts run in the database; a step that
// moves on from a list first reads it (at most search.max records).

// kind is the type of the records a pipeline holds.
type kind string

const (
	kindCase       kind = "case"
	kindAlert      kind = "alert"
	kindObservable kind = "observable"
	kindTask       kind = "task"
	kindLog        kind = "log"
	kindJob        kind = "job"
	kindAction     kind = "action"
	kindSimilar    kind = "similarCase"
	kindLinked     kind = "linkedCase"
)

var kindFields = map[kind]search.Fields{
	kindCase: cases.CaseFields, kindAlert: cases.AlertFields, kindObservable: cases.ObservableFields,
	kindTask: cases.TaskFields, kindLog: cases.LogFields, kindJob: cases.JobFields, kindSimilar: cases.CaseFields,
	kindAction: cases.ActionFields,
	kindLinked: cases.CaseFields,
	kindAudit:  audit.Fields,
}

// pipeline is the state of a query between steps.
type pipeline struct {
	kind   kind
	filter search.Node
	sort   []search.SortKey
	// similar cases: computed from one alert, filtered on the cases, ordered in memory
	alert       cases.Alert
	similarSort []similarKey
	// linked cases: computed from one case, filtered on the cases
	origin cases.Case
}

func (p *pipeline) and(n search.Node) {
	if p.filter.Op == "" || p.filter.Op == search.OpAll {
		p.filter = n
		return
	}
	p.filter = search.Node{Op: search.OpAnd, Children: []search.Node{p.filter, n}}
}

// output is how the pipeline ends.
type output struct {
	count     bool
	page      bool
	from, to  int
	extraData []string
	threshold int64 // limitedCount: the largest number answered
	agg       *agg  // aggregation: its answer replaces the records
}

func badStep(name, format string, args ...any) error {
	return apperr.Errorf(apperr.BadRequest, "query step %s: %s", strconv.Quote(name), fmt.Sprintf(format, args...))
}

func (h *handler) query(v1 bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		f, err := web.Fields(c)
		if err != nil {
			return err
		}
		raw, ok := f["query"].([]any)
		if !ok {
			return apperr.New(apperr.BadRequest, `the body must be {"query": [step, ...]}`)
		}
		if len(raw) == 0 {
			return apperr.New(apperr.BadRequest, "the query has no step")
		}
		if len(raw) > 64 {
			return apperr.New(apperr.BadRequest, "the query has more than 64 steps")
		}
		if isAuditQuery(raw) && h.events != nil {
			steps := make([]map[string]any, len(raw))
			for i, r := range raw {
				if steps[i], ok = r.(map[string]any); !ok {
					return apperr.Errorf(apperr.BadRequest, "query step %d is not an object", i+1)
				}
			}
			return h.auditQuery(c, steps, v1) // events.go
		}
		if isUIQuery(raw) {
			return h.uiQuery(c, raw, v1) // users, organisations, profiles, definitions: ui.go
		}
		ctx := c.Request().Context()
		cl := caller(c)
		var p *pipeline
		var out output
		for i, r := range raw {
			step, ok := r.(map[string]any)
			if !ok {
				return apperr.Errorf(apperr.BadRequest, "query step %d is not an object", i+1)
			}
			name, _ := step["_name"].(string)
			if name == "" {
				return apperr.Errorf(apperr.BadRequest, "query step %d has no _name", i+1)
			}
			if out.page || out.count || out.agg != nil {
				return badStep(name, "nothing may follow page, count or aggregation")
			}
			if p == nil {
				if p, err = h.start(ctx, cl, name, step); err != nil {
					return err
				}
				out.count = isCountStart(name) // count… steps end the query (query_count.go)
				continue
			}
			if err := h.next(ctx, cl, p, &out, name, step); err != nil {
				return err
			}
		}
		return h.finish(c, cl, p, out, v1)
	}
}

// params checks that a step has no keys besides _name and the allowed ones.
func params(name string, step map[string]any, allowed ...string) error {
	for _, k := range slices.Sorted(maps.Keys(step)) {
		if k != "_name" && !slices.Contains(allowed, k) {
			return badStep(name, "unknown field %s", strconv.Quote(shorten(k)))
		}
	}
	return nil
}

func shorten(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// start runs the first step, which must name where the query starts.
func (h *handler) start(ctx context.Context, cl cases.Caller, name string, step map[string]any) (*pipeline, error) {
	if p, ok, err := startCounting(cl, name, step); ok {
		return p, err
	}
	lists := map[string]kind{"listCase": kindCase, "listAlert": kindAlert, "listObservable": kindObservable,
		"listTask": kindTask, "listLog": kindLog, "listJob": kindJob, "listAction": kindAction}
	if k, ok := lists[name]; ok {
		return &pipeline{kind: k, filter: search.Node{Op: search.OpAll}}, params(name, step)
	}
	if name == "waitingTasks" {
		return &pipeline{kind: kindTask, filter: waiting()}, params(name, step)
	}
	gets := map[string]kind{"getCase": kindCase, "getAlert": kindAlert, "getObservable": kindObservable,
		"getTask": kindTask, "getLog": kindLog, "getJob": kindJob, "getAction": kindAction}
	k, ok := gets[name]
	if !ok {
		if isStep(name) {
			return nil, badStep(name, "a query cannot start with it (start with get…, list… or waitingTasks)")
		}
		return nil, badStep(name, "unknown step")
	}
	if err := params(name, step, "idOrName"); err != nil {
		return nil, err
	}
	id, ok := step["idOrName"].(string)
	if !ok || id == "" {
		return nil, badStep(name, "idOrName must be a non-empty string")
	}
	p := &pipeline{kind: k}
	var err error
	switch k {
	case kindCase:
		var cs cases.Case
		cs, err = h.svc.Case(ctx, cl, id)
		id = cs.ID
	case kindAlert:
		var a cases.Alert
		a, err = h.svc.Alert(ctx, cl, id)
		id = a.ID
	case kindObservable:
		_, err = h.svc.Observable(ctx, cl, id)
	case kindTask:
		_, err = h.svc.Task(ctx, cl, id)
	case kindLog:
		_, err = h.svc.Log(ctx, cl, id)
	case kindJob:
		_, err = h.svc.Job(ctx, cl, id)
	case kindAction:
		_, err = h.analyses.Action(ctx, cl, id)
	}
	if err != nil {
		return nil, err
	}
	p.filter = search.Node{Op: search.OpEq, Path: "_id", Value: id}
	return p, nil
}

func waiting() search.Node {
	return search.Node{Op: search.OpEq, Path: "status", Value: cases.TaskWaiting}
}

var stepNames = []string{"listCase", "listAlert", "listObservable", "listTask", "listLog", "listJob", "listAction", "getAction", "actions", "waitingTasks",
	"getCase", "getAlert", "getObservable", "getTask", "getLog", "getJob", "tasks", "observables", "alerts", "logs",
	"jobs", "case", "similarCases", "linkedCases", "filter", "sort", "page", "count", "listAudit", "listAuditFromObject", "audits",
	"countCase", "countAlert", "countUnreadAlert", "countImportedAlert", "countRelatedAlert", "countTask", "countCaseObservable",
	"countAlertObservable", "myTasks", "limitedCount", "aggregation", "currentUser", "listUser", "listOrganisation",
	"getOrganisation", "listCustomField", "listCaseTemplate", "listProfile", "listObservableType", "users", "assignableUsers"}

func isStep(name string) bool { return slices.Contains(stepNames, name) }

// traversals: from which kinds a step moves to which, through which stored reference.
var traversals = map[string]struct {
	from []kind
	to   kind
}{
	"tasks":        {[]kind{kindCase}, kindTask},
	"waitingTasks": {[]kind{kindCase}, kindTask},
	"observables":  {[]kind{kindCase, kindAlert}, kindObservable},
	"alerts":       {[]kind{kindCase}, kindAlert},
	"logs":         {[]kind{kindTask}, kindLog},
	"jobs":         {[]kind{kindObservable}, kindJob},
	"actions":      {[]kind{kindCase, kindTask, kindLog, kindAlert, kindObservable}, kindAction},
	"case":         {[]kind{kindAlert, kindTask, kindObservable, kindLog, kindJob}, kindCase},
}

// next runs a step after the first.
func (h *handler) next(ctx context.Context, cl cases.Caller, p *pipeline, out *output, name string, step map[string]any) error {
	if ok, err := endCounting(p, out, name, step); ok {
		return err
	}
	switch name {
	case "filter":
		q := make(map[string]any, len(step))
		for k, v := range step {
			if k != "_name" {
				q[k] = v
			}
		}
		n, err := parseFilter(name, q, kindFields[p.kind])
		if err != nil {
			return err
		}
		p.and(n)
		return nil
	case "sort":
		if err := params(name, step, "_fields"); err != nil {
			return err
		}
		return p.setSort(name, step["_fields"])
	case "page":
		if err := params(name, step, "from", "to", "extraData", "withStats", "withParents"); err != nil {
			return err
		}
		return out.setPage(name, step, h.max)
	case "count":
		out.count = true
		return params(name, step)
	case "linkedCases":
		if err := params(name, step); err != nil {
			return err
		}
		if p.kind != kindCase {
			return badStep(name, "applies to cases, not to %ss", p.kind)
		}
		items, err := h.collect(ctx, cl, p, name)
		if err != nil {
			return err
		}
		if len(items) != 1 {
			return badStep(name, "needs exactly one case (start with getCase), got %d", len(items))
		}
		*p = pipeline{kind: kindLinked, origin: items[0].(cases.Case), filter: search.Node{Op: search.OpAll}}
		return nil
	case "similarCases":
		if err := params(name, step, "caseFilter"); err != nil {
			return err
		}
		if p.kind != kindAlert {
			return badStep(name, "applies to alerts, not to %ss", p.kind)
		}
		alert, err := h.one(ctx, cl, p, name)
		if err != nil {
			return err
		}
		*p = pipeline{kind: kindSimilar, alert: alert, filter: search.Node{Op: search.OpAll}}
		if cf, ok := step["caseFilter"]; ok && cf != nil {
			n, err := parseFilter(name, cf, cases.CaseFields)
			if err != nil {
				return err
			}
			p.and(n)
		}
		return nil
	}
	t, ok := traversals[name]
	if !ok {
		if isStep(name) {
			return badStep(name, "only the first step may start a query")
		}
		return badStep(name, "unknown step")
	}
	if err := params(name, step); err != nil {
		return err
	}
	if !slices.Contains(t.from, p.kind) {
		return badStep(name, "does not apply to %ss", p.kind)
	}
	t0 := p.kind
	items, err := h.collect(ctx, cl, p, name)
	if err != nil {
		return err
	}
	// The new records refer to the current ones by a stored id; "case" goes the other way (the current
	// records refer to their case).
	path := cases.PathCaseID
	switch {
	case name == "case":
		path = "_id"
	case name == "logs":
		path = cases.PathTaskID
	case name == "jobs":
		path = cases.PathObservableID
	case name == "actions":
		path = "objectId"
	case name == "observables" && p.kind == kindAlert:
		path = cases.PathAlertID
	}
	ids := []any{}
	for _, it := range items {
		id := recordID(it)
		if name == "case" {
			id = caseOf(it)
		}
		if id != "" && !slices.Contains(ids, any(id)) {
			ids = append(ids, id)
		}
	}
	*p = pipeline{kind: t.to, filter: search.Node{Op: search.OpIn, Path: path, Values: ids}}
	if name == "waitingTasks" {
		p.and(waiting())
	}
	if name == "actions" { // the responder history of the records
		p.and(search.Node{Op: search.OpEq, Path: "objectType", Value: actionObjectTypes[t0]})
	}
	return nil
}

// caseOf returns the case a record belongs to.
func caseOf(it any) string {
	switch x := it.(type) {
	case cases.Alert:
		return x.CaseID
	case cases.Task:
		return x.CaseID
	case cases.Observable:
		return x.CaseID
	case cases.Log:
		return x.CaseID
	case cases.Job:
		return x.CaseID
	}
	return ""
}

// parseFilter parses a filter in the search DSL, plus the reference system's _is, _ne and _parent.
func parseFilter(name string, q any, fields search.Fields) (search.Node, error) {
	q, err := rewriteFilter(q, 0)
	if err != nil {
		return search.Node{}, err
	}
	n, err := search.Parse(q, fields)
	if err != nil {
		return search.Node{}, badStep(name, "%s", messageOf(err))
	}
	return n, nil
}

// messageOf is the client-safe message of an error.
func messageOf(err error) string {
	if e := apperr.As(err); e != nil && e.Kind != apperr.Internal {
		return e.Message
	}
	return "invalid"
}

func recordID(it any) string {
	switch x := it.(type) {
	case cases.Case:
		return x.ID
	case cases.Alert:
		return x.ID
	case cases.Observable:
		return x.ID
	case cases.Task:
		return x.ID
	case cases.Log:
		return x.ID
	case cases.Job:
		return x.ID
	}
	return ""
}

// setSort reads _fields: [{"field": "asc"|"desc"}, "+field", "-field", "field", ...].
func (p *pipeline) setSort(name string, v any) error {
	specs, err := sortSpecs(name, v) // ui.go
	if err != nil {
		return err
	}
	if p.kind == kindLinked {
		return badStep(name, "linked cases come newest first and take no sort")
	}
	if p.kind == kindSimilar {
		keys, err := similarSort(specs)
		if err != nil {
			return badStep(name, "%s", err.Error())
		}
		p.similarSort = keys
		return nil
	}
	keys, err := search.ParseSort(specs, kindFields[p.kind])
	if err != nil {
		return badStep(name, "%s", messageOf(err))
	}
	p.sort = keys
	return nil
}

func (o *output) setPage(name string, step map[string]any, max int) error {
	num := func(k string, def int) (int, error) {
		v, ok := step[k]
		if !ok || v == nil {
			return def, nil
		}
		n, isNum := v.(json.Number)
		i, err := strconv.Atoi(n.String())
		if !isNum || err != nil || i < 0 {
			return 0, badStep(name, "%s must be a non-negative integer", k)
		}
		return i, nil
	}
	var err error
	if o.from, err = num("from", 0); err != nil {
		return err
	}
	if o.to, err = num("to", o.from+search.DefaultLimit); err != nil {
		return err
	}
	if o.to < o.from {
		return badStep(name, "to must not be below from")
	}
	if o.to-o.from > max {
		o.to = o.from + max
	}
	if x, ok := step["extraData"]; ok && x != nil {
		list, isList := x.([]any)
		if !isList {
			return badStep(name, "extraData must be an array of names")
		}
		for _, e := range list {
			s, isString := e.(string)
			if !isString {
				return badStep(name, "extraData must be an array of names")
			}
			o.extraData = append(o.extraData, s)
		}
	}
	o.page = true
	return nil
}

// one returns the single alert a pipeline holds (similarCases starts from one alert).
func (h *handler) one(ctx context.Context, cl cases.Caller, p *pipeline, name string) (cases.Alert, error) {
	items, err := h.collect(ctx, cl, p, name)
	if err != nil {
		return cases.Alert{}, err
	}
	if len(items) != 1 {
		return cases.Alert{}, badStep(name, "needs exactly one alert (start with getAlert), got %d", len(items))
	}
	return items[0].(cases.Alert), nil
}

// collect reads every record of the pipeline, refusing more than search.max.
func (h *handler) collect(ctx context.Context, cl cases.Caller, p *pipeline, name string) ([]any, error) {
	items, total, err := h.run(ctx, cl, p, 0, h.max)
	if err != nil {
		return nil, err
	}
	if total > int64(len(items)) {
		return nil, badStep(name, "follows %d records, more than %d: narrow the query with a filter", total, h.max)
	}
	return items, nil
}

// run reads the records of a pipeline from offset, at most limit of them, and their total.
func (h *handler) run(ctx context.Context, cl cases.Caller, p *pipeline, offset, limit int) ([]any, int64, error) {
	pg := search.Page{Offset: offset, Limit: limit, Sort: p.sort}
	if limit == 0 { // a count: one record read, for the total
		pg.Limit = 1
	}
	var items []any
	var total int64
	var err error
	collectAll := func(n int) { items = make([]any, 0, n) }
	switch p.kind {
	case kindCase:
		var l []cases.Case
		l, total, err = h.svc.Cases(ctx, cl, p.filter, pg)
		collectAll(len(l))
		for _, x := range l {
			items = append(items, x)
		}
	case kindAlert:
		var l []cases.Alert
		l, total, err = h.svc.Alerts(ctx, cl, p.filter, pg)
		collectAll(len(l))
		for _, x := range l {
			items = append(items, x)
		}
	case kindObservable:
		var l []cases.Observable
		l, total, err = h.svc.Observables(ctx, cl, cases.Parent{}, p.filter, pg)
		collectAll(len(l))
		for _, x := range l {
			items = append(items, x)
		}
	case kindTask:
		var l []cases.Task
		l, total, err = h.svc.Tasks(ctx, cl, "", p.filter, pg)
		collectAll(len(l))
		for _, x := range l {
			items = append(items, x)
		}
	case kindLog:
		var l []cases.Log
		l, total, err = h.svc.Logs(ctx, cl, "", p.filter, pg)
		collectAll(len(l))
		for _, x := range l {
			items = append(items, x)
		}
	case kindJob:
		var l []cases.Job
		l, total, err = h.svc.Jobs(ctx, cl, p.filter, pg)
		collectAll(len(l))
		for _, x := range l {
			items = append(items, x)
		}
	case kindAction:
		var l []cases.Action
		l, total, err = h.analyses.Actions(ctx, cl, p.filter, pg)
		collectAll(len(l))
		for _, x := range l {
			items = append(items, x)
		}
	case kindSimilar:
		var l []cases.SimilarCase
		l, err = h.svc.SimilarCases(ctx, cl, p.alert, p.filter)
		if err != nil {
			return nil, 0, err
		}
		sortSimilar(l, p.similarSort)
		total = int64(len(l))
		l = l[min(offset, len(l)):]
		l = l[:min(pg.Limit, len(l))]
		collectAll(len(l))
		for _, x := range l {
			items = append(items, x)
		}
	case kindLinked:
		var l []cases.LinkedCase
		if l, err = h.svc.LinkedCases(ctx, cl, p.origin, p.filter); err != nil {
			return nil, 0, err
		}
		total = int64(len(l))
		l = l[min(offset, len(l)):]
		l = l[:min(pg.Limit, len(l))]
		collectAll(len(l))
		for _, x := range l {
			items = append(items, x)
		}
	}
	if err != nil {
		return nil, 0, err
	}
	return items, total, nil
}

// finish runs the pipeline and writes its output: a number for count, else an array (X-Total for a v0 page,
// and for a v1 page whose extraData names "total").
func (h *handler) finish(c echo.Context, cl cases.Caller, p *pipeline, out output, v1 bool) error {
	ctx := c.Request().Context()
	if out.count || out.agg != nil {
		return h.finishCounting(c, cl, p, out) // query_count.go
	}
	from, limit := 0, h.max
	if out.page {
		from, limit = out.from, out.to-out.from
	}
	var items []any
	var total int64
	if limit > 0 {
		var err error
		if items, total, err = h.run(ctx, cl, p, from, limit); err != nil {
			return err
		}
	} else {
		_, t, err := h.run(ctx, cl, p, 0, 0)
		if err != nil {
			return err
		}
		total = t
	}
	extras := slices.DeleteFunc(slices.Clone(out.extraData), func(s string) bool { return s == "total" })
	for _, e := range extras {
		if !slices.Contains(extraNames[p.kind], e) {
			return badStep("page", "unknown extraData %s for %ss (known: %s)", strconv.Quote(shorten(e)), p.kind,
				strings.Join(append([]string{"total"}, extraNames[p.kind]...), ", "))
		}
	}
	if err := boundExtraData(len(items), extras); err != nil {
		return err
	}
	rendered := make([]any, 0, len(items))
	for _, it := range items {
		r, err := h.render(ctx, cl, it, v1, extras)
		if err != nil {
			return err
		}
		rendered = append(rendered, r)
	}
	if out.page && (!v1 || slices.Contains(out.extraData, "total")) {
		c.Response().Header().Set("X-Total", strconv.FormatInt(total, 10))
	}
	return c.JSON(http.StatusOK, rendered)
}

// extraNames are the extraData a page may ask for, by kind (besides "total").
var extraNames = map[kind][]string{
	kindCase:       {"taskStats", "observableStats", "alerts", "isOwner", "shareCount", "permissions", "actionRequired"},
	kindAlert:      {"caseNumber", "similarCases"},
	kindTask:       {"case", "caseId", "isOwner", "shareCount", "actionRequired"},
	kindObservable: {"seen", "permissions", "isOwner", "shareCount"},
	kindLog:        {"case", "task", "taskId", "actionCount"},
}

// render writes one record as its v0 JSON; v1 adds the bookkeeping fields under their v1 names (_createdBy,
// _createdAt, _updatedBy, _updatedAt); extraData, when asked, is an object of the named values.
func (h *handler) render(ctx context.Context, cl cases.Caller, it any, v1 bool, extras []string) (any, error) {
	var v any
	switch x := it.(type) {
	case cases.Case:
		v = h.caseJSON(cl, x, nil)
	case cases.Alert:
		r, err := h.alertWithArtifacts(ctx, x)
		if err != nil {
			return nil, err
		}
		v = r
	case cases.Observable:
		v = observableJSON(x)
	case cases.Task:
		v = taskJSON(x)
	case cases.Log:
		v = logJSON(x)
	case cases.Job:
		v = jobJSON(x)
	case cases.Action:
		v = actionJSON(x)
	case cases.SimilarCase:
		return h.similarJSON(cl, x, false), nil
	case cases.LinkedCase:
		v = h.linkedJSON(cl, x)
	}
	if !v1 && len(extras) == 0 {
		return v, nil
	}
	m, err := toMap(v)
	if err != nil {
		return nil, err
	}
	if v1 {
		for _, k := range []string{"createdBy", "createdAt", "updatedBy", "updatedAt"} {
			if x, ok := m[k]; ok {
				m["_"+k] = x
			}
		}
	}
	if len(extras) > 0 {
		ed := map[string]any{}
		for _, e := range extras {
			x, err := h.extra(ctx, cl, it, e)
			if err != nil {
				return nil, err
			}
			ed[e] = x
		}
		m["extraData"] = ed
	}
	return m, nil
}

func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	err = dec.Decode(&m)
	return m, err
}

// extra computes one extraData value of a record.
func (h *handler) extra(ctx context.Context, cl cases.Caller, it any, name string) (any, error) {
	switch x := it.(type) {
	case cases.Case:
		switch name {
		case "taskStats", "observableStats", "alerts":
			st, err := h.svc.Stats(ctx, cl, x)
			if err != nil {
				return nil, err
			}
			switch name {
			case "taskStats":
				tasks := map[string]int64{"total": 0}
				for k, n := range st.Tasks {
					tasks[k] = n
					tasks["total"] += n
				}
				return tasks, nil
			case "observableStats":
				return map[string]int64{"total": st.Observables}, nil
			}
			return mapSlice(st.Alerts, func(a cases.Alert) any { return alertJSON(a, nil) }), nil
		case "isOwner":
			return true, nil
		case "shareCount":
			return 0, nil
		case "permissions":
			return h.svc.Permissions(cl, x), nil
		case "actionRequired":
			return false, nil
		}
	case cases.Alert:
		switch name {
		case "caseNumber":
			if n, err := strconv.ParseInt(strings.TrimPrefix(x.CaseID, "~"), 10, 64); err == nil {
				return n, nil
			}
			return nil, nil
		case "similarCases":
			scs, err := h.svc.SimilarCases(ctx, cl, x, search.Node{Op: search.OpAll})
			if err != nil {
				return nil, err
			}
			return mapSlice(scs, func(sc cases.SimilarCase) similarCaseResponse { return h.similarJSON(cl, sc, false) }), nil
		}
	case cases.Task:
		switch name {
		case "case":
			cs, err := h.svc.Case(ctx, cl, x.CaseID)
			if err != nil {
				return nil, err
			}
			return h.caseJSON(cl, cs, nil), nil
		case "caseId":
			n, _ := strconv.ParseInt(strings.TrimPrefix(x.CaseID, "~"), 10, 64)
			return n, nil
		case "isOwner":
			return true, nil
		case "shareCount":
			return 0, nil
		case "actionRequired":
			return false, nil
		}
	case cases.Observable:
		switch name {
		case "seen":
			n, err := h.svc.Seen(ctx, cl, x)
			return n, err
		case "permissions":
			return h.svc.Permissions(cl, cases.Case{}), nil
		case "isOwner":
			return true, nil
		case "shareCount":
			return 0, nil
		}
	case cases.Log:
		switch name {
		case "case":
			cs, err := h.svc.Case(ctx, cl, x.CaseID)
			if err != nil {
				return nil, err
			}
			return h.caseJSON(cl, cs, nil), nil
		case "task":
			t, err := h.svc.Task(ctx, cl, x.TaskID)
			if err != nil {
				return nil, err
			}
			return taskJSON(t), nil
		case "taskId":
			return x.TaskID, nil
		case "actionCount":
			return 0, nil
		}
	}
	return nil, nil
}

// similarKey is one key of an in-memory order of similar cases.
type similarKey struct {
	field string
	desc  bool
}

// similarFields are the orders similar cases accept: fields of the case and the counts.
var similarFields = map[string]func(cases.SimilarCase) float64{
	"_createdAt":             func(s cases.SimilarCase) float64 { return float64(s.Case.CreatedAt.UnixMilli()) },
	"createdAt":              func(s cases.SimilarCase) float64 { return float64(s.Case.CreatedAt.UnixMilli()) },
	"startDate":              func(s cases.SimilarCase) float64 { return float64(s.Case.StartDate.UnixMilli()) },
	"number":                 func(s cases.SimilarCase) float64 { return float64(s.Case.Number) },
	"caseId":                 func(s cases.SimilarCase) float64 { return float64(s.Case.Number) },
	"severity":               func(s cases.SimilarCase) float64 { return float64(s.Case.Severity) },
	"tlp":                    func(s cases.SimilarCase) float64 { return float64(s.Case.TLP) },
	"similarObservableCount": func(s cases.SimilarCase) float64 { return float64(s.SimilarObservables) },
	"similarIocCount":        func(s cases.SimilarCase) float64 { return float64(s.SimilarIOCs) },
	"observableCount":        func(s cases.SimilarCase) float64 { return float64(s.Observables) },
	"iocCount":               func(s cases.SimilarCase) float64 { return float64(s.IOCs) },
}

func similarSort(specs []string) ([]similarKey, error) {
	var keys []similarKey
	for _, spec := range specs {
		for part := range strings.SplitSeq(spec, ",") {
			part = strings.TrimSpace(part)
			k := similarKey{}
			switch {
			case strings.HasPrefix(part, "-"):
				k.desc, part = true, part[1:]
			case strings.HasPrefix(part, "+"):
				part = part[1:]
			}
			if part == "" {
				continue
			}
			if _, ok := similarFields[part]; !ok {
				names := slices.Sorted(maps.Keys(similarFields))
				return nil, fmt.Errorf("unknown field %s (similar cases sort on %s)", strconv.Quote(shorten(part)),
					strings.Join(names, ", "))
			}
			k.field = part
			keys = append(keys, k)
		}
	}
	return keys, nil
}

func sortSimilar(l []cases.SimilarCase, keys []similarKey) {
	if len(keys) == 0 {
		return // the service's order: newest case first
	}
	slices.SortStableFunc(l, func(a, b cases.SimilarCase) int {
		for _, k := range keys {
			x, y := similarFields[k.field](a), similarFields[k.field](b)
			if x == y {
				continue
			}
			r := -1
			if x > y {
				r = 1
			}
			if k.desc {
				r = -r
			}
			return r
		}
		return 0
	})
}

// jobResponse is an analyzer job (case_artifact_job).
type jobResponse struct {
	meta
	AnalyzerID         string         `json:"analyzerId"`
	AnalyzerName       string         `json:"analyzerName"`
	AnalyzerDefinition string         `json:"analyzerDefinition"`
	Status             string         `json:"status"`
	StartDate          *int64         `json:"startDate"`
	EndDate            *int64         `json:"endDate"`
	AnalysisID         string         `json:"analysisId"`
	AnalysisJobID      string         `json:"analysisJobId"`
	CortexID           string         `json:"cortexId"`    // the reference system's name of analysisId
	CortexJobID        string         `json:"cortexJobId"` // and of analysisJobId
	Report             map[string]any `json:"report"`
	ObservableID       string         `json:"observableId"`
	CaseID             string         `json:"caseId"`
	Message            string         `json:"message,omitempty"` // why a Waiting job has not reached its server
}

func jobJSON(j cases.Job) jobResponse {
	return jobResponse{meta: metaOf(j.ID, "case_artifact_job", j.Meta), AnalyzerID: j.AnalyzerID,
		AnalyzerName: j.AnalyzerName, AnalyzerDefinition: j.AnalyzerDefinition, Status: j.Status,
		StartDate: nullMillis(j.StartDate), EndDate: nullMillis(j.EndDate), AnalysisID: j.AnalysisID,
		AnalysisJobID: j.AnalysisJobID, CortexID: j.AnalysisID, CortexJobID: j.AnalysisJobID, Report: j.Report, ObservableID: j.ObservableID, CaseID: j.CaseID,
		Message: j.Message}
}
