// Package query interprets case-svc's query language (POST /api/v0/query and /api/v1/query): a pipeline of
// named steps that starts from records (get… by id, list…, waitingTasks, count…, myTasks), moves to related
// ones (tasks, observables, alerts, logs, jobs, actions, case, similarCases, linkedCases), narrows them
// (filter), orders them (sort) and ends with the output (page, count, limitedCount, aggregation, or everything
// up to search.max). Filters and sorts run in the database; a step that moves on from a list first reads it
// (at most search.max records).
//
// It owns the steps' grammar (Params, BadStep, ParseFilter with the reference system's _is, _ne and _parent,
// SortSpecs, Output.SetPage), the Pipeline they build, its execution on the domain (Engine, on cases.Service,
// connector.Analyses and tally.Counter, in the caller's organisation) and the aggregations that the aggregation
// step and the _stats routes share (ParseAgg, Engine.Stats). Reading the HTTP body, rendering records as JSON
// (extraData too), and the audit and UI queries stay in api, which calls it.
package query

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/tally"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/event"
	"github.com/openir/platform/pkg/search"
)

// Engine runs the steps of queries on the domain.
type Engine struct {
	svc      *cases.Service
	tasks    *task.Service
	analyses *connector.Analyses
	tally    *tally.Counter
	max      int
}

// New returns an engine reading at most max records per list (search.max).
func New(svc *cases.Service, tasks *task.Service, analyses *connector.Analyses, counter *tally.Counter, max int) *Engine {
	return &Engine{svc: svc, tasks: tasks, analyses: analyses, tally: counter, max: max}
}

// Kind is the type of the records a pipeline holds.
type Kind string

const (
	KindCase       Kind = "case"
	KindAlert      Kind = "alert"
	KindObservable Kind = "observable"
	KindTask       Kind = "task"
	KindLog        Kind = "log"
	KindJob        Kind = "job"
	KindAction     Kind = "action"
	KindSimilar    Kind = "similarCase"
	KindLinked     Kind = "linkedCase"
	KindAudit      Kind = "audit" // audit events: filtered, sorted, paged and counted by Next, read by api
)

var kindFields = map[Kind]search.Fields{
	KindCase: cases.CaseFields, KindAlert: cases.AlertFields, KindObservable: cases.ObservableFields,
	KindTask: task.Fields, KindLog: task.LogFields, KindJob: connector.JobFields, KindSimilar: cases.CaseFields,
	KindAction: connector.ActionFields,
	KindLinked: cases.CaseFields,
	KindAudit:  event.Fields,
}

// Pipeline is the state of a query between steps: the kind of its records, their filter and order.
type Pipeline struct {
	Kind   Kind
	Filter search.Node
	Sort   []search.SortKey
	// similar cases: computed from one alert, filtered on the cases, ordered in memory
	alert       cases.Alert
	similarSort []similarKey
	// linked cases: computed from one case, filtered on the cases
	origin cases.Case
}

// And narrows the pipeline's records by n.
func (p *Pipeline) And(n search.Node) {
	if p.Filter.Op == "" || p.Filter.Op == search.OpAll {
		p.Filter = n
		return
	}
	p.Filter = search.Node{Op: search.OpAnd, Children: []search.Node{p.Filter, n}}
}

// Output is how the pipeline ends.
type Output struct {
	Count     bool
	Page      bool
	From, To  int
	ExtraData []string
	Threshold int64 // limitedCount: the largest number answered
	Agg       *Agg  // aggregation: its answer replaces the records
}

// BadStep is the 400 of a step.
func BadStep(name, format string, args ...any) error {
	return apperr.Errorf(apperr.BadRequest, "query step %s: %s", strconv.Quote(name), fmt.Sprintf(format, args...))
}

// Params checks that a step has no keys besides _name and the allowed ones.
func Params(name string, step map[string]any, allowed ...string) error {
	for _, k := range slices.Sorted(maps.Keys(step)) {
		if k != "_name" && !slices.Contains(allowed, k) {
			return BadStep(name, "unknown field %s", strconv.Quote(Shorten(k)))
		}
	}
	return nil
}

// Shorten cuts a client's string to 64 bytes for an error message.
func Shorten(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// Start runs the first step, which must name where the query starts.
func (e *Engine) Start(ctx context.Context, cl identity.Caller, name string, step map[string]any) (*Pipeline, error) {
	if p, ok, err := startCounting(cl, name, step); ok {
		return p, err
	}
	lists := map[string]Kind{"listCase": KindCase, "listAlert": KindAlert, "listObservable": KindObservable,
		"listTask": KindTask, "listLog": KindLog, "listJob": KindJob, "listAction": KindAction}
	if k, ok := lists[name]; ok {
		return &Pipeline{Kind: k, Filter: search.Node{Op: search.OpAll}}, Params(name, step)
	}
	if name == "waitingTasks" {
		return &Pipeline{Kind: KindTask, Filter: waiting()}, Params(name, step)
	}
	gets := map[string]Kind{"getCase": KindCase, "getAlert": KindAlert, "getObservable": KindObservable,
		"getTask": KindTask, "getLog": KindLog, "getJob": KindJob, "getAction": KindAction}
	k, ok := gets[name]
	if !ok {
		if IsStep(name) {
			return nil, BadStep(name, "a query cannot start with it (start with get…, list… or waitingTasks)")
		}
		return nil, BadStep(name, "unknown step")
	}
	if err := Params(name, step, "idOrName"); err != nil {
		return nil, err
	}
	id, ok := step["idOrName"].(string)
	if !ok || id == "" {
		return nil, BadStep(name, "idOrName must be a non-empty string")
	}
	p := &Pipeline{Kind: k}
	var err error
	switch k {
	case KindCase:
		var cs cases.Case
		cs, err = e.svc.Case(ctx, cl, id)
		id = cs.ID
	case KindAlert:
		var a cases.Alert
		a, err = e.svc.Alert(ctx, cl, id)
		id = a.ID
	case KindObservable:
		_, err = e.svc.Observable(ctx, cl, id)
	case KindTask:
		_, err = e.tasks.Task(ctx, cl, id)
	case KindLog:
		_, err = e.tasks.Log(ctx, cl, id)
	case KindJob:
		_, err = e.analyses.AnalyzerJob(ctx, cl, id)
	case KindAction:
		_, err = e.analyses.Action(ctx, cl, id)
	}
	if err != nil {
		return nil, err
	}
	p.Filter = search.Node{Op: search.OpEq, Path: "_id", Value: id}
	return p, nil
}

func waiting() search.Node {
	return search.Node{Op: search.OpEq, Path: "status", Value: task.Waiting}
}

var stepNames = []string{"listCase", "listAlert", "listObservable", "listTask", "listLog", "listJob", "listAction", "getAction", "actions", "waitingTasks",
	"getCase", "getAlert", "getObservable", "getTask", "getLog", "getJob", "tasks", "observables", "alerts", "logs",
	"jobs", "case", "similarCases", "linkedCases", "filter", "sort", "page", "count", "listAudit", "listAuditFromObject", "audits",
	"countCase", "countAlert", "countUnreadAlert", "countImportedAlert", "countRelatedAlert", "countTask", "countCaseObservable",
	"countAlertObservable", "myTasks", "limitedCount", "aggregation", "currentUser", "listUser", "listOrganisation",
	"getOrganisation", "listCustomField", "listCaseTemplate", "listProfile", "listObservableType", "users", "assignableUsers"}

// IsStep reports whether name is a step of the query language.
func IsStep(name string) bool { return slices.Contains(stepNames, name) }

// traversals: from which kinds a step moves to which, through which stored reference.
var traversals = map[string]struct {
	from []Kind
	to   Kind
}{
	"tasks":        {[]Kind{KindCase}, KindTask},
	"waitingTasks": {[]Kind{KindCase}, KindTask},
	"observables":  {[]Kind{KindCase, KindAlert}, KindObservable},
	"alerts":       {[]Kind{KindCase}, KindAlert},
	"logs":         {[]Kind{KindTask}, KindLog},
	"jobs":         {[]Kind{KindObservable}, KindJob},
	"actions":      {[]Kind{KindCase, KindTask, KindLog, KindAlert, KindObservable}, KindAction},
	"case":         {[]Kind{KindAlert, KindTask, KindObservable, KindLog, KindJob}, KindCase},
}

// Next runs a step after the first.
func (e *Engine) Next(ctx context.Context, cl identity.Caller, p *Pipeline, out *Output, name string, step map[string]any) error {
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
		n, err := ParseFilter(name, q, kindFields[p.Kind])
		if err != nil {
			return err
		}
		p.And(n)
		return nil
	case "sort":
		if err := Params(name, step, "_fields"); err != nil {
			return err
		}
		return p.setSort(name, step["_fields"])
	case "page":
		if err := Params(name, step, "from", "to", "extraData", "withStats", "withParents"); err != nil {
			return err
		}
		return out.SetPage(name, step, e.max)
	case "count":
		out.Count = true
		return Params(name, step)
	case "linkedCases":
		if err := Params(name, step); err != nil {
			return err
		}
		if p.Kind != KindCase {
			return BadStep(name, "applies to cases, not to %ss", p.Kind)
		}
		items, err := e.Collect(ctx, cl, p, name)
		if err != nil {
			return err
		}
		if len(items) != 1 {
			return BadStep(name, "needs exactly one case (start with getCase), got %d", len(items))
		}
		*p = Pipeline{Kind: KindLinked, origin: items[0].(cases.Case), Filter: search.Node{Op: search.OpAll}}
		return nil
	case "similarCases":
		if err := Params(name, step, "caseFilter"); err != nil {
			return err
		}
		if p.Kind != KindAlert {
			return BadStep(name, "applies to alerts, not to %ss", p.Kind)
		}
		alert, err := e.one(ctx, cl, p, name)
		if err != nil {
			return err
		}
		*p = Pipeline{Kind: KindSimilar, alert: alert, Filter: search.Node{Op: search.OpAll}}
		if cf, ok := step["caseFilter"]; ok && cf != nil {
			n, err := ParseFilter(name, cf, cases.CaseFields)
			if err != nil {
				return err
			}
			p.And(n)
		}
		return nil
	}
	t, ok := traversals[name]
	if !ok {
		if IsStep(name) {
			return BadStep(name, "only the first step may start a query")
		}
		return BadStep(name, "unknown step")
	}
	if err := Params(name, step); err != nil {
		return err
	}
	if !slices.Contains(t.from, p.Kind) {
		return BadStep(name, "does not apply to %ss", p.Kind)
	}
	t0 := p.Kind
	items, err := e.Collect(ctx, cl, p, name)
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
		path = task.PathTaskID
	case name == "jobs":
		path = connector.PathObservableID
	case name == "actions":
		path = "objectId"
	case name == "observables" && p.Kind == KindAlert:
		path = cases.PathAlertID
	}
	ids := []any{}
	for _, it := range items {
		id := RecordID(it)
		if name == "case" {
			id = caseOf(it)
		}
		if id != "" && !slices.Contains(ids, any(id)) {
			ids = append(ids, id)
		}
	}
	*p = Pipeline{Kind: t.to, Filter: search.Node{Op: search.OpIn, Path: path, Values: ids}}
	if name == "waitingTasks" {
		p.And(waiting())
	}
	if name == "actions" { // the responder history of the records
		p.And(search.Node{Op: search.OpEq, Path: "objectType", Value: actionObjectTypes[t0]})
	}
	return nil
}

// caseOf returns the case a record belongs to.
func caseOf(it any) string {
	switch x := it.(type) {
	case cases.Alert:
		return x.CaseID
	case task.Task:
		return x.CaseID
	case cases.Observable:
		return x.CaseID
	case task.Log:
		return x.CaseID
	case connector.Job:
		return x.CaseID
	}
	return ""
}

// ParseFilter parses a filter in the search DSL, plus the reference system's _is, _ne and _parent.
func ParseFilter(name string, q any, fields search.Fields) (search.Node, error) {
	q, err := RewriteFilter(q)
	if err != nil {
		return search.Node{}, err
	}
	n, err := search.Parse(q, fields)
	if err != nil {
		return search.Node{}, BadStep(name, "%s", MessageOf(err))
	}
	return n, nil
}

// MessageOf is the client-safe message of an error.
func MessageOf(err error) string {
	if e := apperr.As(err); e != nil && e.Kind != apperr.Internal {
		return e.Message
	}
	return "invalid"
}

// RecordID is the id of a record of a pipeline.
func RecordID(it any) string {
	switch x := it.(type) {
	case cases.Case:
		return x.ID
	case cases.Alert:
		return x.ID
	case cases.Observable:
		return x.ID
	case task.Task:
		return x.ID
	case task.Log:
		return x.ID
	case connector.Job:
		return x.ID
	}
	return ""
}

// setSort reads _fields: [{"field": "asc"|"desc"}, "+field", "-field", "field", ...].
func (p *Pipeline) setSort(name string, v any) error {
	specs, err := SortSpecs(name, v)
	if err != nil {
		return err
	}
	if p.Kind == KindLinked {
		return BadStep(name, "linked cases come newest first and take no sort")
	}
	if p.Kind == KindSimilar {
		keys, err := similarSort(specs)
		if err != nil {
			return BadStep(name, "%s", err.Error())
		}
		p.similarSort = keys
		return nil
	}
	keys, err := search.ParseSort(specs, kindFields[p.Kind])
	if err != nil {
		return BadStep(name, "%s", MessageOf(err))
	}
	p.Sort = keys
	return nil
}

// SetPage reads a page step {from, to, extraData} (a page of at most max records).
func (o *Output) SetPage(name string, step map[string]any, max int) error {
	num := func(k string, def int) (int, error) {
		v, ok := step[k]
		if !ok || v == nil {
			return def, nil
		}
		n, isNum := v.(json.Number)
		i, err := strconv.Atoi(n.String())
		if !isNum || err != nil || i < 0 {
			return 0, BadStep(name, "%s must be a non-negative integer", k)
		}
		return i, nil
	}
	var err error
	if o.From, err = num("from", 0); err != nil {
		return err
	}
	if o.To, err = num("to", o.From+search.DefaultLimit); err != nil {
		return err
	}
	if o.To < o.From {
		return BadStep(name, "to must not be below from")
	}
	if o.To-o.From > max {
		o.To = o.From + max
	}
	if x, ok := step["extraData"]; ok && x != nil {
		list, isList := x.([]any)
		if !isList {
			return BadStep(name, "extraData must be an array of names")
		}
		for _, e := range list {
			s, isString := e.(string)
			if !isString {
				return BadStep(name, "extraData must be an array of names")
			}
			o.ExtraData = append(o.ExtraData, s)
		}
	}
	o.Page = true
	return nil
}

// one returns the single alert a pipeline holds (similarCases starts from one alert).
func (e *Engine) one(ctx context.Context, cl identity.Caller, p *Pipeline, name string) (cases.Alert, error) {
	items, err := e.Collect(ctx, cl, p, name)
	if err != nil {
		return cases.Alert{}, err
	}
	if len(items) != 1 {
		return cases.Alert{}, BadStep(name, "needs exactly one alert (start with getAlert), got %d", len(items))
	}
	return items[0].(cases.Alert), nil
}

// Collect reads every record of the pipeline, refusing more than search.max.
func (e *Engine) Collect(ctx context.Context, cl identity.Caller, p *Pipeline, name string) ([]any, error) {
	items, total, err := e.Run(ctx, cl, p, 0, e.max)
	if err != nil {
		return nil, err
	}
	if total > int64(len(items)) {
		return nil, BadStep(name, "follows %d records, more than %d: narrow the query with a filter", total, e.max)
	}
	return items, nil
}

// Run reads the records of a pipeline from offset, at most limit of them, and their total.
func (e *Engine) Run(ctx context.Context, cl identity.Caller, p *Pipeline, offset, limit int) ([]any, int64, error) {
	pg := search.Page{Offset: offset, Limit: limit, Sort: p.Sort}
	if limit == 0 { // a Count: one record read, for the total
		pg.Limit = 1
	}
	var items []any
	var total int64
	var err error
	collectAll := func(n int) { items = make([]any, 0, n) }
	switch p.Kind {
	case KindCase:
		var l []cases.Case
		l, total, err = e.svc.Cases(ctx, cl, p.Filter, pg)
		collectAll(len(l))
		for _, x := range l {
			items = append(items, x)
		}
	case KindAlert:
		var l []cases.Alert
		l, total, err = e.svc.Alerts(ctx, cl, p.Filter, pg)
		collectAll(len(l))
		for _, x := range l {
			items = append(items, x)
		}
	case KindObservable:
		var l []cases.Observable
		l, total, err = e.svc.Observables(ctx, cl, cases.Parent{}, p.Filter, pg)
		collectAll(len(l))
		for _, x := range l {
			items = append(items, x)
		}
	case KindTask:
		var l []task.Task
		l, total, err = e.tasks.List(ctx, cl, "", p.Filter, pg)
		collectAll(len(l))
		for _, x := range l {
			items = append(items, x)
		}
	case KindLog:
		var l []task.Log
		l, total, err = e.tasks.Logs(ctx, cl, "", p.Filter, pg)
		collectAll(len(l))
		for _, x := range l {
			items = append(items, x)
		}
	case KindJob:
		var l []connector.Job
		l, total, err = e.analyses.Jobs(ctx, cl, p.Filter, pg)
		collectAll(len(l))
		for _, x := range l {
			items = append(items, x)
		}
	case KindAction:
		var l []connector.Action
		l, total, err = e.analyses.Actions(ctx, cl, p.Filter, pg)
		collectAll(len(l))
		for _, x := range l {
			items = append(items, x)
		}
	case KindSimilar:
		var l []cases.SimilarCase
		l, err = e.svc.SimilarCases(ctx, cl, p.alert, p.Filter)
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
	case KindLinked:
		var l []cases.LinkedCase
		if l, _, err = e.svc.LinkedCases(ctx, cl, p.origin, p.Filter); err != nil { // bounded as GET …/links is
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

// SortSpecs reads a sort step's _fields: [{"field": "asc"|"desc"}, "+field", "-field", "field", ...].
func SortSpecs(name string, v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, BadStep(name, `_fields must be an array such as [{"name": "asc"}]`)
	}
	var specs []string
	for _, x := range list {
		switch f := x.(type) {
		case string:
			specs = append(specs, f)
		case map[string]any:
			if len(f) != 1 {
				return nil, BadStep(name, `each of _fields is one {"field": "asc" or "desc"}`)
			}
			for field, dir := range f {
				d, _ := dir.(string)
				switch strings.ToLower(d) {
				case "asc":
					specs = append(specs, "+"+field)
				case "desc":
					specs = append(specs, "-"+field)
				default:
					return nil, BadStep(name, "the order of %s must be asc or desc", strconv.Quote(Shorten(field)))
				}
			}
		default:
			return nil, BadStep(name, `each of _fields is one {"field": "asc" or "desc"}`)
		}
	}
	return specs, nil
}

// Build runs the steps of a query of records in order and returns its pipeline and how it ends: nothing may
// follow page, count or aggregation, and a count… step ends the query.
func (e *Engine) Build(ctx context.Context, cl identity.Caller, raw []any) (*Pipeline, Output, error) {
	var p *Pipeline
	var out Output
	for i, r := range raw {
		step, ok := r.(map[string]any)
		if !ok {
			return nil, Output{}, apperr.Errorf(apperr.BadRequest, "query step %d is not an object", i+1)
		}
		name, _ := step["_name"].(string)
		if name == "" {
			return nil, Output{}, apperr.Errorf(apperr.BadRequest, "query step %d has no _name", i+1)
		}
		if out.Page || out.Count || out.Agg != nil {
			return nil, Output{}, BadStep(name, "nothing may follow page, count or aggregation")
		}
		if p == nil {
			var err error
			if p, err = e.Start(ctx, cl, name, step); err != nil {
				return nil, Output{}, err
			}
			out.Count = IsCountStart(name) // count… steps end the query (count.go)
			continue
		}
		if err := e.Next(ctx, cl, p, &out, name, step); err != nil {
			return nil, Output{}, err
		}
	}
	return p, out, nil
}

// actionObjectTypes: the objectType of the actions of each kind of record (the step "actions").
var actionObjectTypes = map[Kind]string{KindCase: "case", KindTask: "case_task", KindLog: "case_task_log", KindAlert: "alert",
	KindObservable: "case_artifact"}
