package main

import (
	"context"
	"io"
	"os"

	"github.com/openir/platform/analysis-svc/internal/app"
	"github.com/openir/platform/pkg/conf"
)

// run builds the service from its configuration (internal/app) and serves until ctx ends. When ctx ends the
// job workers stop (their jobs go back to the queue) and long polls answer while the HTTP server drains; then
// the job events' background work stops and the database closes.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, err := app.Load(args, os.Stderr)
	if err != nil {
		return err
	}
	log := conf.Logger(stdout, cfg.Log.Level, "analysis-svc")
	a, err := app.New(ctx, cfg, log, app.Options{})
	if err != nil {
		return err
	}
	defer a.Close(ctx)
	if a.Bootstrapped {
		log.Info("created the first superadmin", "login", cfg.Bootstrap.Login)
	}
	a.Start(ctx)
	return a.Serve(ctx)
}
