package webui

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/pkg/search"
)

// respondersView is the responders section of an object's page: the responders its type accepts (run with
// one click) and the actions already run on it, with their operations and report.
type respondersView struct {
	ObjectType, ObjectID string
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

// responders is the section for an object of type objectType (case, case_artifact, case_task, alert); empty
// without a connector. offer lists the responders the type accepts (the analysis servers are asked; a page
// with several objects of one type asks once and shares the list).
func (h *Handler) responders(ctx context.Context, cl identity.Caller, objectType, objectID string, offer bool) (respondersView, error) {
	v := respondersView{ObjectType: objectType, ObjectID: objectID, CanRun: cl.Can(identity.ManageAction)}
	if h.s.Connector == nil {
		return v, nil
	}
	actions, _, err := h.s.Connector.ActionsOf(ctx, cl, objectType, objectID, search.Page{Limit: 50})
	if err != nil {
		return v, err
	}
	for _, a := range actions {
		av := actionView{Action: a}
		if a.Operations != "" {
			_ = json.Unmarshal([]byte(a.Operations), &av.Ops) // a stored value: shown as text when it is not JSON
		}
		if a.Report != "" {
			_ = json.Unmarshal([]byte(a.Report), &av.Result)
		}
		v.Actions = append(v.Actions, av)
	}
	if v.CanRun && offer {
		if v.Responders, v.Warnings, err = h.s.Connector.Workers(ctx, cl, true, "thehive:"+objectType); err != nil {
			return v, err
		}
		sort.Slice(v.Responders, func(a, b int) bool { return v.Responders[a].Name < v.Responders[b].Name })
	}
	return v, nil
}
