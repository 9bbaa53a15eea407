package main

import (
	"context"
	"io"
	"os"

	"github.com/openir/platform/case-svc/internal/app"
	"github.com/openir/platform/pkg/conf"
)

// run builds the service from its configuration (internal/app) and serves until ctx ends, then shuts down in
// order: the HTTP server drains, the connector's tracker stops, then the events' background work, then the
// database closes.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, err := app.Load(args, os.Stderr)
	if err != nil {
		return err
	}
	log := conf.Logger(stdout, cfg.Log.Level, "case-svc")
	a, err := app.New(ctx, cfg, log, app.Options{})
	if err != nil {
		return err
	}
	defer a.Close(ctx)
	if a.Bootstrapped {
		log.Info("created the first platform administrator", "login", cfg.Bootstrap.Login)
	}
	a.Start()
	return a.Serve(ctx)
}
