package webui

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/pkg/search"
	"github.com/openir/platform/pkg/web"
)

// respondersView is the responders section of an object's page: the responders its type accepts (run with
// one click) and the actions already run on it, with their operations and report.
type respondersView struct {
	ObjectType, ObjectID string
	Root                 string // the case or alert whose events may change the actions (the live region's root)
	CanRun               bool
	Responders           []connector.ServerWorkers
	Warnings             []string
	Actions              []actionView
}

type actionView struct {
	connector.Action
	Ops    any // the operations, decoded for the tree
	Result any // the report, decoded
}

// Pending says whether an action has not ended yet: its list is then a live region, re-rendered as it ends.
func (v respondersView) Pending() bool {
	for _, a := range v.Actions {
		if a.Status == connector.JobWaiting || a.Status == connector.JobInProgress {
			return true
		}
	}
	return false
}

// Fragment is the URL of the actions list alone (the live region's source).
func (v respondersView) Fragment() string {
	return "/ui/actions/" + url.PathEscape(v.ObjectType) + "/" + url.PathEscape(v.ObjectID)
}

// maxActions is how many actions of one object a page lists (the newest).
const maxActions = 50

// responders is the section for an object of type objectType (case, case_artifact, case_task, case_task_log),
// whose events have the root root; empty without a connector. offer lists the responders the type accepts
// (the analysis servers are asked).
func (h *Handler) responders(ctx context.Context, cl identity.Caller, objectType, objectID, root string, offer bool) (respondersView, error) {
	all, offered, err := h.respondersOf(ctx, cl, objectType, []string{objectID}, root, offer)
	if err != nil {
		return respondersView{}, err
	}
	v := all[objectID]
	v.Responders, v.Warnings = offered.Responders, offered.Warnings
	return v, nil
}

// respondersOf is the responders section of each of several objects of one type, their actions read in one
// request; offered holds the responders the type accepts when offer is set (asked once for all the objects).
func (h *Handler) respondersOf(ctx context.Context, cl identity.Caller, objectType string, ids []string, root string,
	offer bool) (map[string]respondersView, respondersView, error) {
	out := make(map[string]respondersView, len(ids))
	canRun := cl.Can(identity.ManageAction)
	for _, id := range ids {
		out[id] = respondersView{ObjectType: objectType, ObjectID: id, Root: root, CanRun: canRun}
	}
	offered := respondersView{ObjectType: objectType, Root: root, CanRun: canRun}
	if h.s.Connector == nil || len(ids) == 0 {
		return out, offered, nil
	}
	typ, err := connector.NormalizeObjectType(objectType)
	if err != nil {
		return nil, offered, err
	}
	vals := make([]any, len(ids))
	for i, id := range ids {
		vals[i] = id
	}
	actions, _, err := h.s.Connector.Actions(ctx, cl, and(
		search.Node{Op: search.OpIn, Path: "objectId", Values: vals}, eq("objectType", typ)),
		search.Page{Limit: maxActions * len(ids), Sort: []search.SortKey{{Path: "startDate", Desc: true}}})
	if err != nil {
		return nil, offered, err
	}
	for _, a := range actions {
		v := out[a.ObjectID]
		if len(v.Actions) == maxActions {
			continue
		}
		av := actionView{Action: a}
		if a.Operations != "" {
			_ = json.Unmarshal([]byte(a.Operations), &av.Ops) // a stored value: shown as text when it is not JSON
		}
		if a.Report != "" {
			_ = json.Unmarshal([]byte(a.Report), &av.Result)
		}
		v.Actions = append(v.Actions, av)
		out[a.ObjectID] = v
	}
	if canRun && offer {
		if offered.Responders, offered.Warnings, err = h.s.Connector.Workers(ctx, cl, true, "thehive:"+typ); err != nil {
			return nil, offered, err
		}
		sort.Slice(offered.Responders, func(a, b int) bool { return offered.Responders[a].Name < offered.Responders[b].Name })
	}
	return out, offered, nil
}

// actionsFragment is the actions of one object alone: the live region of a responders section re-renders
// from it while an action runs. An object the caller may not read is not found, as through the API.
func (h *Handler) actionsFragment(c echo.Context) error {
	ctx := c.Request().Context()
	cl := route.Caller(c)
	typ, err := connector.NormalizeObjectType(web.Param(c, "objectType"))
	if err != nil {
		return err
	}
	id := web.Param(c, "objectId")
	switch typ {
	case "case":
		_, err = h.s.Cases.Case(ctx, cl, id)
	case "alert":
		_, err = h.s.Cases.Alert(ctx, cl, id)
	case "case_artifact":
		_, err = h.s.Cases.Observable(ctx, cl, id)
	case "case_task":
		_, err = h.s.Tasks.Task(ctx, cl, id)
	case "case_task_log":
		_, err = h.s.Tasks.Log(ctx, cl, id)
	}
	if err != nil {
		return err
	}
	v, err := h.responders(ctx, cl, typ, id, "", false)
	if err != nil {
		return err
	}
	return h.pages.Render(c, http.StatusOK, "case", "actions", v.Actions)
}
