package main

import (
	"context"
	"io"
	"time"

	"github.com/openir/platform/case-svc/internal/api"
	"github.com/openir/platform/pkg/conf"
	"github.com/openir/platform/pkg/mongox"
	"github.com/openir/platform/pkg/web"
)

// run wires the service and serves until ctx ends.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, err := loadConfig(args, stdout)
	if err != nil {
		return err
	}
	log := conf.Logger(stdout, cfg.Log.Level, "case-svc")
	db, err := mongox.Open(ctx, mongox.Config{URI: cfg.Database.URI, Name: cfg.Database.Name, Path: cfg.Database.Path}, log)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = db.Close(cctx)
	}()
	log.Info("database ready", "embedded", db.Embedded, "name", cfg.Database.Name)
	names := make([]string, len(cfg.Analysis.Servers))
	for i, s := range cfg.Analysis.Servers {
		names[i] = s.Name // never log keys
	}
	log.Info("analysis servers", "names", names)

	e := api.New(web.Options{Log: log, BodyLimit: cfg.HTTP.BodyLimit, Ready: db.Ping})
	return web.Serve(ctx, log, e, web.ServeConfig{Addr: cfg.HTTP.Addr, TLSCert: cfg.HTTP.TLS.Cert, TLSKey: cfg.HTTP.TLS.Key})
}
