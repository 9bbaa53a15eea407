// Package event is the record of a change both services tell (case-svc's audit trail, analysis-svc's job
// events): its fields, its operations and the names searches and sorts give them, and the records of the
// webhooks that receive events (Endpoint, Delivery, EndpointInput). It links nothing else, so a domain package
// that names events or webhooks (automation's rules, the query language, case-svc's audit) links no database; package
// events (the bus, streams, webhooks and their stores) builds on it.
package event

import (
	"time"

	"github.com/openir/platform/pkg/search"
)

// Operations of an event.
const (
	Creation = "Creation"
	Update   = "Update"
	Delete   = "Delete"
)

// Event is one change: what changed (objectType, objectId, rootId: the object it belongs to), how
// (operation and the changed attributes in Details), the object after the change, who, in which request and
// organisation, and when.
type Event struct {
	ID         string
	Operation  string
	ObjectType string
	ObjectID   string
	RootID     string
	Details    map[string]any
	Object     map[string]any
	User       string
	RequestID  string
	Org        string
	Date       time.Time
}

// Fields is the allow-list of searches and sorts on events, as pkg/events' log stores them.
var Fields = search.Fields{
	"_id": {Path: "_id"}, "id": {Path: "_id"}, "operation": {Path: "operation"}, "objectType": {Path: "objectType"},
	"objectId": {Path: "objectId"}, "rootId": {Path: "rootId"}, "requestId": {Path: "requestId"},
	"user": {Path: "user"}, "createdBy": {Path: "user"}, "_createdBy": {Path: "user"},
	"date": {Path: "date", Type: search.Number}, "startDate": {Path: "date", Type: search.Number},
	"createdAt": {Path: "date", Type: search.Number}, "_createdAt": {Path: "date", Type: search.Number},
}
