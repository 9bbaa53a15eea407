// Package audit is the domain of case-svc's audit trail: what an audit record is (one event per change of a
// case, task, log, observable, alert, template, custom field, user, organisation, job, action, analyzer set
// or rule, on package event's record), who makes the changes of a request (WithActor, set by the API), and
// the service the API serves the trail, the live streams and the webhooks from (Service). It links no
// database: the service is built in package auditbus, the adapter that records the stores' writes on
// pkg/events's bus (with its durable webhook outbox), and wired in package app.
package audit

import (
	"context"

	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/pkg/event"
	"github.com/openir/platform/pkg/search"
)

// Operations of an event.
const (
	Creation = event.Creation
	Update   = event.Update
	Delete   = event.Delete
)

// Event is one change (package event).
type Event = event.Event

// Fields is the allow-list of audit searches and sorts (package event's).
var Fields = event.Fields

// Object types of events, as the reference system's v0 API names them.
const (
	TypeCase        = "case"
	TypeTask        = "case_task"
	TypeLog         = "case_task_log"
	TypeObservable  = "case_artifact"
	TypeAlert       = "alert"
	TypeTemplate    = "caseTemplate"
	TypeCustomField = "customField"
	TypeUser        = "user"
	TypeOrg         = "organisation"
	TypeJob         = "case_artifact_job"
	TypeAction      = "action"
	TypeAnalyzerSet = "analyzerSet" // automation (docs/automation.md)
	TypeRule        = "rule"
	TypeFiring      = "ruleFiring" // a rule's firing, recorded when a budget holds it
)

// The webhooks' records live in package event, one home for both services.
type (
	// Endpoint is a webhook of an organisation.
	Endpoint = event.Endpoint
	// Delivery is one event to send to one endpoint: a row of the durable outbox.
	Delivery = event.Delivery
	// EndpointInput is a webhook endpoint as a request writes it.
	EndpointInput = event.EndpointInput
)

// Pending is the status of a delivery not yet delivered (package event).
const Pending = event.Pending

// Actor is who makes the changes of a request.
type Actor struct {
	User      string
	Org       string
	RequestID string
}

type actorKey struct{}

// WithActor returns ctx carrying the actor of its changes.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorOf returns the actor ctx carries.
func ActorOf(ctx context.Context) (Actor, bool) {
	a, ok := ctx.Value(actorKey{}).(Actor)
	return a, ok
}

// Renderer writes a domain record (cases.Case, task.Task…) as the API shows it.
type Renderer func(v any) map[string]any

// Service is the audit trail as the API and the web interface use it: its searches, the batching of a
// request's records, the live streams and the webhooks of an organisation. Package auditbus implements it.
type Service interface {
	// Events lists the events of the organisation org matching f (newest first unless p sorts).
	Events(ctx context.Context, org string, f search.Node, p search.Page) ([]Event, int64, error)
	// Batch returns ctx collecting the events of the changes made with it, and the function that writes
	// them in one call, which a request calls once its changes are made and before it answers.
	Batch(ctx context.Context) (context.Context, func() error)
	// SetRenderer sets how records are written into events (the API's rendering).
	SetRenderer(r Renderer)

	// CreateStream opens a live stream of the events of org for user and returns its id (pkg/events.Hub).
	CreateStream(user, org string) (string, error)
	// PollStream waits up to the refresh interval for events of stream id (user's) and returns them (none
	// when the interval passed without any).
	PollStream(ctx context.Context, id, user string) ([]Event, error)

	// The webhooks of the caller's organisation (manageConfig); each fails when webhooks are off.
	CreateEndpoint(ctx context.Context, c identity.Caller, in EndpointInput) (Endpoint, error)
	UpdateEndpoint(ctx context.Context, c identity.Caller, id string, in EndpointInput) (Endpoint, error)
	Endpoint(ctx context.Context, c identity.Caller, id string) (Endpoint, error)
	Endpoints(ctx context.Context, c identity.Caller) ([]Endpoint, error)
	DeleteEndpoint(ctx context.Context, c identity.Caller, id string) error
	Deliveries(ctx context.Context, c identity.Caller, id string, p search.Page) ([]Delivery, int64, error)
	Resend(ctx context.Context, c identity.Caller, endpoint, id string) (Delivery, error)
	// TestEndpoint queues a test delivery to an enabled webhook, whatever its filter (events.Webhooks.Test).
	TestEndpoint(ctx context.Context, c identity.Caller, id string) (Delivery, error)
}
