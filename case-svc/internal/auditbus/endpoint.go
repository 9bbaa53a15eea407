package auditbus

import (
	"context"

	"github.com/openir/platform/case-svc/internal/audit"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/events"
	"github.com/openir/platform/pkg/search"
)

// webhooks checks that webhooks are configured and that the caller has manageConfig.
func (s *Service) webhooks(c identity.Caller) error {
	if s.bus.Webhooks() == nil {
		return events.ErrNoWebhooks
	}
	return c.Require(identity.ManageConfig)
}

// CreateEndpoint adds a webhook to the caller's organisation (manageConfig).
func (s *Service) CreateEndpoint(ctx context.Context, c identity.Caller, in audit.EndpointInput) (audit.Endpoint, error) {
	if err := s.webhooks(c); err != nil {
		return audit.Endpoint{}, err
	}
	return s.bus.Webhooks().Create(ctx, c.Org, c.Login, record.NewID(s.now()), in)
}

// UpdateEndpoint changes a webhook of the caller's organisation.
func (s *Service) UpdateEndpoint(ctx context.Context, c identity.Caller, id string, in audit.EndpointInput) (audit.Endpoint, error) {
	if err := s.webhooks(c); err != nil {
		return audit.Endpoint{}, err
	}
	return s.bus.Webhooks().Update(ctx, c.Org, id, in)
}

// Endpoint returns a webhook of the caller's organisation.
func (s *Service) Endpoint(ctx context.Context, c identity.Caller, id string) (audit.Endpoint, error) {
	if err := s.webhooks(c); err != nil {
		return audit.Endpoint{}, err
	}
	return s.bus.Webhooks().Endpoint(ctx, c.Org, id)
}

// Endpoints lists the webhooks of the caller's organisation.
func (s *Service) Endpoints(ctx context.Context, c identity.Caller) ([]audit.Endpoint, error) {
	if err := s.webhooks(c); err != nil {
		return nil, err
	}
	return s.bus.Webhooks().Endpoints(ctx, c.Org)
}

// DeleteEndpoint removes a webhook; its pending deliveries stay in the outbox, unsent.
func (s *Service) DeleteEndpoint(ctx context.Context, c identity.Caller, id string) error {
	if err := s.webhooks(c); err != nil {
		return err
	}
	return s.bus.Webhooks().Delete(ctx, c.Org, id)
}

// Deliveries lists the recent deliveries of a webhook, newest first.
func (s *Service) Deliveries(ctx context.Context, c identity.Caller, id string, p search.Page) ([]audit.Delivery, int64, error) {
	if err := s.webhooks(c); err != nil {
		return nil, 0, err
	}
	return s.bus.Webhooks().Deliveries(ctx, c.Org, id, p)
}

// Resend makes a delivery of the caller's organisation go out again (dead, delivered or pending).
func (s *Service) Resend(ctx context.Context, c identity.Caller, endpoint, id string) (audit.Delivery, error) {
	if err := s.webhooks(c); err != nil {
		return audit.Delivery{}, err
	}
	return s.bus.Webhooks().Resend(ctx, c.Org, endpoint, id)
}

// TestEndpoint queues a test delivery (operation Test, objectType webhook) to an enabled webhook of the
// caller's organisation, whatever its filter.
func (s *Service) TestEndpoint(ctx context.Context, c identity.Caller, id string) (audit.Delivery, error) {
	if err := s.webhooks(c); err != nil {
		return audit.Delivery{}, err
	}
	return s.bus.Webhooks().Test(ctx, c.Org, c.Login, id)
}
