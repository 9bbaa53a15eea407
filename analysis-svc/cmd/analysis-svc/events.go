package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/openir/platform/analysis-svc/internal/api"
	"github.com/openir/platform/analysis-svc/internal/jobevent"
	"github.com/openir/platform/analysis-svc/internal/store"
	"github.com/openir/platform/pkg/auth"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/events"
)

// eventBus builds the job events' log, streams and webhooks (pkg/events; README, Events). The repair sweep
// asks the job store what became of a job whose JobFinished event a crash left held.
func eventBus(ctx context.Context, cfg config, db *docstore.DB, keys *auth.Keyring, log *slog.Logger) (*events.Bus, error) {
	l, err := events.NewEventLog(ctx, db, store.EventSpec())
	if err != nil {
		return nil, err
	}
	hooks, err := events.NewOutbox(ctx, db)
	if err != nil {
		return nil, err
	}
	jobs, err := store.NewJobStore(ctx, db)
	if err != nil {
		return nil, err
	}
	confirm := jobevent.Wrap(jobs, nil, api.JobObject).Confirm
	return events.NewBus(l, hooks, keys, events.NewMetrics("analysis", "job"), events.Config{
		Retention: cfg.Events.Retention, Poll: cfg.Stream.Poll, Refresh: cfg.Stream.Refresh, Log: log, Confirm: confirm,
		RepairAllAtStart: db.Embedded(),
		Webhooks: events.WebhookConfig{AllowPrivate: cfg.Webhook.AllowPrivate, MaxAttempts: cfg.Webhook.MaxAttempts,
			Timeout: cfg.Webhook.Timeout, BackoffMin: cfg.Webhook.BackoffMin, BackoffMax: cfg.Webhook.BackoffMax,
			UserAgent: "analysis-svc-webhook"}}, time.Now), nil
}
