package webui

import (
	"context"
	"net/http"
	"net/url"
	"sort"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/pkg/events"
	"github.com/openir/platform/pkg/search"
	"github.com/openir/platform/pkg/web"
	"github.com/openir/platform/pkg/webui"
)

// casePage is a case with one of its tabs: details, tasks, observables, activity.
type casePage struct {
	webui.Page
	Case      cases.Case
	Stats     cases.Stats
	Tab       string
	Tabs      []webui.Link
	Can       perms
	Users     []identity.User
	Linked    []cases.LinkedCase
	LinkedCut bool // the links' bounds were reached: more cases may share observables
	// tasks
	Groups []taskGroup
	// observables
	Observables observablesView
	// activity
	Activity []events.Event
	// details
	Responders respondersView
	Fields     []customfield.Field // the custom fields the edit form offers
}

// perms are the caller's write permissions the page shows controls for (the API refuses the rest anyway).
type perms struct {
	Case, Task, Observable, Analyse, Action bool
}

func permsOf(cl identity.Caller) perms {
	return perms{Case: cl.Can(identity.ManageCase), Task: cl.Can(identity.ManageTask),
		Observable: cl.Can(identity.ManageObservable), Analyse: cl.Can(identity.ManageAnalyse),
		Action: cl.Can(identity.ManageAction)}
}

type taskGroup struct {
	Name  string
	Tasks []taskView
}

type taskView struct {
	task.Task
	Logs          []task.Log
	LogResponders []respondersView // of each log, in the order of Logs
	Responders    respondersView
}

// observablesView is the observables tab's table, also rendered alone as the live region's fragment.
type observablesView struct {
	CaseID      string
	List        []observableRow
	Analyzers   []connector.ServerWorkers
	Warnings    []string
	Can         perms
	Types       []string
	ServerCount int
	Query       url.Values // the tab's filters
}

// Fragment is the live fragment's URL with the tab's filters.
func (v observablesView) Fragment() string {
	q := url.Values{}
	for _, k := range []string{"dataType", "tags", "ioc", "sighted", "data"} {
		if s := v.Query.Get(k); s != "" {
			q.Set(k, s)
		}
	}
	u := "/ui/cases/" + v.CaseID + "/observables"
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

type observableRow struct {
	cases.Observable
	Jobs []connector.Job // the latest job of each analyzer, newest first
}

func (h *Handler) casePage(c echo.Context) error {
	ctx := c.Request().Context()
	cl := route.Caller(c)
	cs, err := h.s.Cases.Case(ctx, cl, web.Param(c, "caseId"))
	if err != nil {
		return err
	}
	st, err := h.s.Cases.Stats(ctx, cl, cs)
	if err != nil {
		return err
	}
	p := casePage{Page: h.base(c, "#"+itoa(cs.Number)+" "+cs.Title), Case: cs, Stats: st, Can: permsOf(cl)}
	p.Current = "Cases"
	p.Tab = c.QueryParam("tab")
	base := "/ui/cases/" + cs.ID
	var open int64
	for s, n := range st.Tasks {
		if s == task.Waiting || s == task.InProgress {
			open += n
		}
	}
	p.Tabs = []webui.Link{{Name: "Details", Href: base, ID: ""},
		{Name: "Tasks", Href: base + "?tab=tasks", ID: "tasks", Badge: itoa(open)},
		{Name: "Observables", Href: base + "?tab=observables", ID: "observables", Badge: itoa(st.Observables)},
		{Name: "Activity", Href: base + "?tab=activity", ID: "activity"}}
	switch p.Tab {
	case "":
		if p.Linked, p.LinkedCut, err = h.s.Cases.LinkedCases(ctx, cl, cs, search.Node{Op: search.OpAll}); err != nil {
			return err
		}
		if p.Responders, err = h.responders(ctx, cl, "case", cs.ID, cs.ID, true); err != nil {
			return err
		}
		if p.Can.Case {
			if p.Users, err = h.assignable(c); err != nil {
				return err
			}
			if p.Fields, _, err = h.s.CustomFields.List(ctx, cl, search.Node{Op: search.OpAll}, search.Page{Limit: 200,
				Sort: []search.SortKey{{Path: "_id"}}}); err != nil {
				return err
			}
		}
	case "tasks":
		if p.Groups, err = h.taskGroups(ctx, cl, cs.ID); err != nil {
			return err
		}
		if err := h.taskResponders(ctx, cl, cs.ID, p.Groups); err != nil {
			return err
		}
		if p.Can.Task {
			if p.Users, err = h.assignable(c); err != nil {
				return err
			}
		}
	case "observables":
		if p.Observables, err = h.observables(ctx, cl, cs.ID, c.QueryParams(), true); err != nil {
			return err
		}
	case "activity":
		if h.s.Events != nil {
			if p.Activity, _, err = h.s.Events.Events(ctx, cl.Org, eq("rootId", cs.ID),
				search.Page{Limit: 200, Sort: []search.SortKey{{Path: "date", Desc: true}}}); err != nil {
				return err
			}
		}
	default:
		return errBadTab
	}
	return h.pages.Render(c, http.StatusOK, "case", "", p)
}

// taskGroups lists a case's tasks by group (in their order) with their logs, oldest log first.
// maxLogs is how many task logs the tasks tab shows (the oldest first).
const maxLogs = 5000

func (h *Handler) taskGroups(ctx context.Context, cl identity.Caller, caseID string) ([]taskGroup, error) {
	ts, _, err := h.s.Tasks.List(ctx, cl, caseID, search.Node{Op: search.OpAll},
		search.Page{Limit: 1000, Sort: []search.SortKey{{Path: "order"}, {Path: "createdAt"}}})
	if err != nil {
		return nil, err
	}
	// The logs of all the tasks in one request (by task: a log keeps its task through a merge).
	byTask := map[string][]task.Log{}
	if len(ts) > 0 {
		ids := make([]any, len(ts))
		for i, t := range ts {
			ids[i] = t.ID
		}
		logs, _, err := h.s.Tasks.Logs(ctx, cl, "", search.Node{Op: search.OpIn, Path: task.PathTaskID, Values: ids},
			search.Page{Limit: maxLogs, Sort: []search.SortKey{{Path: "date"}, {Path: "_id"}}})
		if err != nil {
			return nil, err
		}
		for _, l := range logs {
			byTask[l.TaskID] = append(byTask[l.TaskID], l)
		}
	}
	var groups []taskGroup
	index := map[string]int{}
	for _, t := range ts {
		logs := byTask[t.ID]
		i, ok := index[t.Group]
		if !ok {
			i = len(groups)
			index[t.Group] = i
			groups = append(groups, taskGroup{Name: t.Group})
		}
		groups[i].Tasks = append(groups[i].Tasks, taskView{Task: t, Logs: logs})
	}
	return groups, nil
}

// observables is a case's observables tab: each observable with its analyzers' latest jobs and, when asked,
// the analyzers the caller may run.
func (h *Handler) observables(ctx context.Context, cl identity.Caller, caseID string, q url.Values, withAnalyzers bool) (observablesView, error) {
	v := observablesView{CaseID: caseID, Can: permsOf(cl), Types: cases.ObservableTypes(), Query: q}
	// The tab's filters (in the URL, kept by the live fragment): data type, tag, IOC, sighted, a value part.
	var parts []search.Node
	for _, k := range []string{"dataType", "tags"} {
		if s := q.Get(k); s != "" {
			parts = append(parts, eq(k, s))
		}
	}
	for _, k := range []string{"ioc", "sighted"} {
		if s := q.Get(k); s != "" {
			parts = append(parts, eq(k, s == "true"))
		}
	}
	if s := q.Get("data"); s != "" {
		parts = append(parts, search.Node{Op: search.OpLike, Path: "data", Value: s})
	}
	// The analyzers offered are a request to each analysis server: asked first, read last, so that its round
	// trip overlaps the reads of the database.
	type offered struct {
		ws       []connector.ServerWorkers
		warnings []string
		err      error
	}
	var analyzers chan offered
	if withAnalyzers && h.s.Connector != nil && v.Can.Analyse {
		analyzers = make(chan offered, 1)
		go func() {
			var o offered
			o.ws, o.warnings, o.err = h.s.Connector.Workers(ctx, cl, false, "")
			analyzers <- o
		}()
	}
	list, _, err := h.s.Cases.Observables(ctx, cl, cases.Parent{Case: caseID}, and(parts...),
		search.Page{Limit: 2000, Sort: []search.SortKey{{Path: "createdAt"}}})
	if err != nil {
		return v, err
	}
	v.List = make([]observableRow, len(list))
	for i, o := range list {
		v.List[i].Observable = o
	}
	if h.s.Connector == nil || !v.Can.Analyse {
		return v, nil
	}
	jobs, _, err := h.s.Connector.Jobs(ctx, cl, eq("case", caseID), search.Page{Limit: 5000,
		Sort: []search.SortKey{{Path: "startDate", Desc: true}}})
	if err != nil {
		return v, err
	}
	byObs := map[string]int{}
	for i, r := range v.List {
		byObs[r.ID] = i
	}
	seen := map[string]bool{}
	for _, j := range jobs {
		i, ok := byObs[j.ObservableID]
		if !ok || seen[j.ObservableID+"|"+j.AnalyzerName] {
			continue
		}
		seen[j.ObservableID+"|"+j.AnalyzerName] = true
		v.List[i].Jobs = append(v.List[i].Jobs, j)
	}
	if analyzers != nil {
		o := <-analyzers
		if o.err != nil {
			return v, o.err
		}
		v.Analyzers, v.Warnings = o.ws, o.warnings
		sort.Slice(v.Analyzers, func(a, b int) bool { return v.Analyzers[a].Name < v.Analyzers[b].Name })
	}
	return v, nil
}

// caseObservablesFragment is the observables table alone: the live region of the tab re-renders from it when
// a job of the case ends.
func (h *Handler) caseObservablesFragment(c echo.Context) error {
	ctx := c.Request().Context()
	cl := route.Caller(c)
	cs, err := h.s.Cases.Case(ctx, cl, web.Param(c, "caseId"))
	if err != nil {
		return err
	}
	v, err := h.observables(ctx, cl, cs.ID, c.QueryParams(), false)
	if err != nil {
		return err
	}
	return h.pages.Render(c, http.StatusOK, "case", "observable-table", v)
}

// taskResponders fills the responders sections of the tasks and their logs: the actions of all the tasks in
// one request and of all the logs in another, the responders each type accepts asked once.
func (h *Handler) taskResponders(ctx context.Context, cl identity.Caller, caseID string, groups []taskGroup) error {
	var taskIDs, logIDs []string
	for _, g := range groups {
		for _, t := range g.Tasks {
			taskIDs = append(taskIDs, t.ID)
			for _, l := range t.Logs {
				logIDs = append(logIDs, l.ID)
			}
		}
	}
	tasks, offeredTasks, err := h.respondersOf(ctx, cl, "case_task", taskIDs, caseID, len(taskIDs) > 0)
	if err != nil {
		return err
	}
	logs, offeredLogs, err := h.respondersOf(ctx, cl, "case_task_log", logIDs, caseID, len(logIDs) > 0)
	if err != nil {
		return err
	}
	for gi := range groups {
		for ti := range groups[gi].Tasks {
			tv := &groups[gi].Tasks[ti]
			tv.Responders = tasks[tv.ID]
			tv.Responders.Responders, tv.Responders.Warnings = offeredTasks.Responders, offeredTasks.Warnings
			tv.LogResponders = make([]respondersView, len(tv.Logs))
			for li, l := range tv.Logs {
				lv := logs[l.ID]
				lv.Responders, lv.Warnings = offeredLogs.Responders, offeredLogs.Warnings
				tv.LogResponders[li] = lv
			}
		}
	}
	return nil
}
