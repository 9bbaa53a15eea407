package events

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/event"
	"github.com/openir/platform/pkg/ids"
	"github.com/openir/platform/pkg/search"
)

// EndpointInput is a webhook endpoint as a request writes it (package event).
type EndpointInput = event.EndpointInput

// Webhooks manages the endpoints of organisations. The caller's permission (manageConfig in case-svc,
// org-admin in analysis-svc) is checked by the service before each call; org is always the caller's.
type Webhooks struct {
	store        WebhookStore
	sender       *Sender
	sealer       Sealer
	allowPrivate bool
	maxEndpoints int // per organisation (WebhookConfig.MaxEndpoints)
	now          func() time.Time
	ids          *ids.Generator // the bus's: test events' ids
}

func (w *Webhooks) seal(v string) (string, error) {
	if v == "" || w.sealer == nil {
		return v, nil
	}
	return w.sealer.Seal(v)
}

// apply checks in and writes it into e.
func (w *Webhooks) apply(e *Endpoint, in EndpointInput) error {
	var p []apperr.FieldError
	bad := func(name, msg string) { p = append(p, apperr.FieldError{Name: name, Message: msg}) }
	if in.Name != nil {
		if n := strings.TrimSpace(*in.Name); n == "" || len(n) > 256 {
			bad("name", "required, at most 256 bytes")
		} else {
			e.Name = n
		}
	}
	if in.URL != nil {
		if err := CheckURL(*in.URL, w.allowPrivate); err != nil {
			return err
		}
		e.URL = *in.URL
	}
	if in.Auth != nil {
		switch *in.Auth {
		case "none", "basic", "bearer":
			e.Auth = *in.Auth
		default:
			bad("auth", "none, basic or bearer")
		}
	}
	set := func(dst *string, v *string, name string) {
		if v == nil {
			return
		}
		if len(*v) > 4096 {
			bad(name, "at most 4096 bytes")
			return
		}
		sealed, err := w.seal(*v)
		if err != nil {
			bad(name, "cannot be stored")
			return
		}
		*dst = sealed
	}
	if in.Username != nil {
		e.Username = *in.Username
	}
	set(&e.Password, in.Password, "password")
	set(&e.Token, in.Token, "token")
	set(&e.Secret, in.Secret, "secret")
	if in.Filter != nil {
		if _, err := ParseFilter(in.Filter); err != nil {
			bad("filter", "not a filter over operation, objectType, objectId, rootId, requestId, user: "+filterMessage(err))
		} else if t := strings.TrimSpace(string(in.Filter)); t == "null" || t == "{}" {
			e.Filter = ""
		} else {
			e.Filter = string(in.Filter)
		}
	}
	if in.Enabled != nil {
		e.Enabled = *in.Enabled
	}
	if e.Auth == "basic" && e.Username == "" {
		bad("username", "required with basic auth")
	}
	if e.Auth == "bearer" && e.Token == "" {
		bad("token", "required with bearer auth")
	}
	if len(p) > 0 {
		return apperr.Fields(p...)
	}
	return nil
}

// Create adds a webhook with id to org, created by login.
func (w *Webhooks) Create(ctx context.Context, org, login, id string, in EndpointInput) (Endpoint, error) {
	now := w.now().UTC().Truncate(time.Millisecond)
	e := Endpoint{ID: id, Org: org, Auth: "none", Enabled: true, CreatedBy: login, CreatedAt: now}
	if in.Name == nil {
		in.Name = new(string)
		*in.Name = "webhook"
	}
	if in.URL == nil {
		return Endpoint{}, apperr.Fields(apperr.FieldError{Name: "url", Message: "required"})
	}
	if err := w.apply(&e, in); err != nil {
		return Endpoint{}, err
	}
	// Checked before the write: creations racing each other may pass the bound by their number, not more.
	if w.maxEndpoints > 0 {
		eps, err := w.store.Endpoints(ctx, org)
		if err != nil {
			return Endpoint{}, fmt.Errorf("count webhooks: %w", err)
		}
		if len(eps) >= w.maxEndpoints {
			return Endpoint{}, apperr.Errorf(apperr.BadRequest, "an organisation has at most %d webhooks (webhook.max_endpoints): delete one first", w.maxEndpoints)
		}
	}
	if err := w.store.CreateEndpoint(ctx, e); err != nil {
		return Endpoint{}, fmt.Errorf("create webhook: %w", err)
	}
	return e, nil
}

// Update changes a webhook of org.
func (w *Webhooks) Update(ctx context.Context, org, id string, in EndpointInput) (Endpoint, error) {
	e, err := w.store.Endpoint(ctx, org, id)
	if err != nil {
		return Endpoint{}, err
	}
	if err := w.apply(&e, in); err != nil {
		return Endpoint{}, err
	}
	e.UpdatedAt = w.now().UTC().Truncate(time.Millisecond)
	if err := w.store.UpdateEndpoint(ctx, e); err != nil {
		return Endpoint{}, err
	}
	return e, nil
}

// Endpoint returns a webhook of org.
func (w *Webhooks) Endpoint(ctx context.Context, org, id string) (Endpoint, error) {
	return w.store.Endpoint(ctx, org, id)
}

// Endpoints lists the webhooks of org.
func (w *Webhooks) Endpoints(ctx context.Context, org string) ([]Endpoint, error) {
	return w.store.Endpoints(ctx, org)
}

// Delete removes a webhook of org; its pending deliveries stay in the outbox, unsent.
func (w *Webhooks) Delete(ctx context.Context, org, id string) error {
	return w.store.DeleteEndpoint(ctx, org, id)
}

// Deliveries lists the recent deliveries of a webhook of org, newest first.
func (w *Webhooks) Deliveries(ctx context.Context, org, id string, p search.Page) ([]Delivery, int64, error) {
	if _, err := w.store.Endpoint(ctx, org, id); err != nil {
		return nil, 0, err
	}
	return w.store.Deliveries(ctx, org, id, p)
}

// Resend makes a delivery of org go out again (dead, delivered or pending).
func (w *Webhooks) Resend(ctx context.Context, org, endpoint, id string) (Delivery, error) {
	if !strings.HasSuffix(id, ":"+endpoint) {
		return Delivery{}, ErrDeliveryNotFound
	}
	d, err := w.store.Resend(ctx, org, id, w.now().UTC().Truncate(time.Millisecond))
	if err != nil {
		return Delivery{}, err
	}
	w.sender.Forget(endpoint)
	w.sender.Kick()
	return d, nil
}

// TestOperation is the operation of the event a webhook's test sends.
const TestOperation = "Test"

// Test queues a test delivery to a webhook of org, asked by login, whatever the webhook's filter: an event of
// operation Test and objectType webhook naming the webhook, in the body every delivery has. It goes out as
// any other delivery (signed, retried, in order behind the webhook's pending ones); the deliveries list shows
// its outcome. A disabled webhook sends nothing and is refused.
func (w *Webhooks) Test(ctx context.Context, org, login, id string) (Delivery, error) {
	ep, err := w.store.Endpoint(ctx, org, id)
	if err != nil {
		return Delivery{}, err
	}
	if !ep.Enabled {
		return Delivery{}, apperr.New(apperr.BadRequest, "the webhook is disabled: enable it to test it")
	}
	now := w.now().UTC().Truncate(time.Millisecond)
	e := Event{ID: w.ids.New(now), Operation: TestOperation, ObjectType: "webhook", ObjectID: ep.ID, RootID: ep.ID,
		User: login, Org: org, Date: now, Details: map[string]any{"test": true},
		Object: map[string]any{"id": ep.ID, "name": ep.Name, "url": ep.URL}}
	ep.Filter = "" // a test goes whatever the filter
	ds, err := deliveries(e, []Endpoint{ep})
	if err != nil || len(ds) != 1 {
		return Delivery{}, fmt.Errorf("test delivery: %v", err)
	}
	if err := w.store.Enqueue(ctx, ds); err != nil {
		return Delivery{}, fmt.Errorf("queue the test delivery: %w", err)
	}
	w.sender.Kick()
	return ds[0], nil
}

func filterMessage(err error) string {
	if e := apperr.As(err); e != nil {
		return e.Message
	}
	return "invalid"
}

// NewEndpointID returns a random endpoint id (a service with its own id scheme passes its own to Create).
func NewEndpointID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
