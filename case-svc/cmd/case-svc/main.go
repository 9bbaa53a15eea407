// Command case-svc keeps security cases, alerts, observables, tasks and case templates, and drives analysis
// servers through its connector, behind the REST API of spec/case-api.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/openir/platform/case-svc/internal/app"
	"github.com/openir/platform/case-svc/internal/store"
	"github.com/openir/platform/pkg/dbcmd"
	"github.com/openir/platform/pkg/docstore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if args := os.Args[1:]; dbcmd.Is(args) { // backup, migrate
		err = dbcmd.Run(ctx, "case-svc", args, databaseConfig, store.Specs(), os.Stdout)
	} else {
		err = run(ctx, args, os.Stdout)
	}
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// databaseConfig reads the configuration (file and env, as for serving) and says where the database is.
func databaseConfig(args []string) (docstore.Config, error) {
	cfg, err := app.Load(args, os.Stderr)
	if err != nil {
		return docstore.Config{}, err
	}
	return docstore.Config{URI: cfg.Database.URI, Name: cfg.Database.Name, Path: cfg.Database.Path}, nil
}
