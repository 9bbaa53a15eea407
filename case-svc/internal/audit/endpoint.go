package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
)

// EndpointInput is a webhook endpoint as a request writes it; nil fields are left as they are on update.
type EndpointInput struct {
	Name     *string
	URL      *string
	Auth     *string
	Username *string
	Password *string
	Token    *string
	Secret   *string
	Filter   json.RawMessage // nil: unchanged
	Enabled  *bool
}

var errNoWebhooks = apperr.New(apperr.NotFound, "webhooks are not configured")

func (s *Service) webhooks(c cases.Caller) error {
	if s.hooks == nil {
		return errNoWebhooks
	}
	return c.Require(cases.ManageConfig)
}

func (s *Service) seal(v string) (string, error) {
	if v == "" || s.sender == nil || s.sender.sealer == nil {
		return v, nil
	}
	return s.sender.sealer.Seal(v)
}

// apply checks in and writes it into e.
func (s *Service) apply(e *Endpoint, in EndpointInput) error {
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
		if err := CheckURL(*in.URL, s.cfg.Webhooks.AllowPrivate); err != nil {
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
		sealed, err := s.seal(*v)
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

// CreateEndpoint adds a webhook to the caller's organisation (manageConfig).
func (s *Service) CreateEndpoint(ctx context.Context, c cases.Caller, in EndpointInput) (Endpoint, error) {
	if err := s.webhooks(c); err != nil {
		return Endpoint{}, err
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	e := Endpoint{ID: cases.NewID(now), Org: c.Org, Auth: "none", Enabled: true, CreatedBy: c.Login, CreatedAt: now}
	if in.Name == nil {
		in.Name = new(string)
		*in.Name = "webhook"
	}
	if in.URL == nil {
		return Endpoint{}, apperr.Fields(apperr.FieldError{Name: "url", Message: "required"})
	}
	if err := s.apply(&e, in); err != nil {
		return Endpoint{}, err
	}
	if err := s.hooks.CreateEndpoint(ctx, e); err != nil {
		return Endpoint{}, fmt.Errorf("create webhook: %w", err)
	}
	return e, nil
}

// UpdateEndpoint changes a webhook of the caller's organisation.
func (s *Service) UpdateEndpoint(ctx context.Context, c cases.Caller, id string, in EndpointInput) (Endpoint, error) {
	if err := s.webhooks(c); err != nil {
		return Endpoint{}, err
	}
	e, err := s.hooks.Endpoint(ctx, c.Org, id)
	if err != nil {
		return Endpoint{}, err
	}
	if err := s.apply(&e, in); err != nil {
		return Endpoint{}, err
	}
	e.UpdatedAt = s.now().UTC().Truncate(time.Millisecond)
	if err := s.hooks.UpdateEndpoint(ctx, e); err != nil {
		return Endpoint{}, err
	}
	return e, nil
}

// Endpoint returns a webhook of the caller's organisation.
func (s *Service) Endpoint(ctx context.Context, c cases.Caller, id string) (Endpoint, error) {
	if err := s.webhooks(c); err != nil {
		return Endpoint{}, err
	}
	return s.hooks.Endpoint(ctx, c.Org, id)
}

// Endpoints lists the webhooks of the caller's organisation.
func (s *Service) Endpoints(ctx context.Context, c cases.Caller) ([]Endpoint, error) {
	if err := s.webhooks(c); err != nil {
		return nil, err
	}
	return s.hooks.Endpoints(ctx, c.Org)
}

// DeleteEndpoint removes a webhook; its pending deliveries stay in the outbox, unsent.
func (s *Service) DeleteEndpoint(ctx context.Context, c cases.Caller, id string) error {
	if err := s.webhooks(c); err != nil {
		return err
	}
	return s.hooks.DeleteEndpoint(ctx, c.Org, id)
}

// Deliveries lists the recent deliveries of a webhook, newest first.
func (s *Service) Deliveries(ctx context.Context, c cases.Caller, id string, p search.Page) ([]Delivery, int64, error) {
	if err := s.webhooks(c); err != nil {
		return nil, 0, err
	}
	if _, err := s.hooks.Endpoint(ctx, c.Org, id); err != nil {
		return nil, 0, err
	}
	return s.hooks.Deliveries(ctx, c.Org, id, p)
}

// Resend makes a delivery of the caller's organisation go out again (dead, delivered or pending).
func (s *Service) Resend(ctx context.Context, c cases.Caller, endpoint, id string) (Delivery, error) {
	if err := s.webhooks(c); err != nil {
		return Delivery{}, err
	}
	if !strings.HasSuffix(id, ":"+endpoint) {
		return Delivery{}, ErrDeliveryNotFound
	}
	d, err := s.hooks.Resend(ctx, c.Org, id, s.now().UTC().Truncate(time.Millisecond))
	if err != nil {
		return Delivery{}, err
	}
	if s.sender != nil {
		select {
		case s.sender.kick <- struct{}{}:
		default:
		}
	}
	return d, nil
}

func filterMessage(err error) string {
	if e := apperr.As(err); e != nil {
		return e.Message
	}
	return "invalid"
}
