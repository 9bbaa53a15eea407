package connector

import (
	"context"

	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/search"
)

// ActionsOf returns the responder actions run on an object of the caller's organisation, newest first (the
// reference system's GET /api/connector/cortex/action/{type}/{id}). The caller checks first that the object is
// the organisation's; objectType is normalised (case_task, case_task_log, case, alert, case_artifact).
func (a *Analyses) ActionsOf(ctx context.Context, c identity.Caller, objectType, objectID string, p search.Page) ([]Action, int64, error) {
	typ, err := NormalizeObjectType(objectType)
	if err != nil {
		return nil, 0, err
	}
	if len(p.Sort) == 0 {
		p.Sort = []search.SortKey{{Path: "startDate", Desc: true}}
	}
	return a.actions.Actions(ctx, search.Node{Op: search.OpAnd, Children: []search.Node{
		{Op: search.OpEq, Path: "objectId", Value: objectID}, record.InOrg(c.Org), {Op: search.OpEq, Path: "objectType", Value: typ}}}, p)
}

// ActionFields is the allow-list of action searches (the query API's listAction, actions).
var ActionFields = search.Fields{
	"_id": {Path: "_id"}, "id": {Path: "_id"}, "responderId": {Path: "responderId"}, "responderName": {Path: "responderName"},
	"responderDefinition": {Path: "responderDefinition"}, "status": {Path: "status"},
	"startDate": {Path: "startDate", Type: search.Number}, "endDate": {Path: "endDate", Type: search.Number},
	"objectType": {Path: "objectType"}, "objectId": {Path: "objectId"}, "analysisId": {Path: "analysisId"},
	"cortexId": {Path: "analysisId"}, "analysisJobId": {Path: "analysisJobId"}, "cortexJobId": {Path: "analysisJobId"},
	"createdAt": {Path: "createdAt", Type: search.Number}, "createdBy": {Path: "createdBy"},
	"_createdAt": {Path: "createdAt", Type: search.Number}, "_createdBy": {Path: "createdBy"},
}

// Actions lists and searches the responder actions of the caller's organisation.
func (a *Analyses) Actions(ctx context.Context, c identity.Caller, f search.Node, p search.Page) ([]Action, int64, error) {
	return a.actions.Actions(ctx, record.And(f, record.InOrg(c.Org)), p)
}
