// Command analysis-svc runs analyzers and responders for many organizations and keeps their jobs and
// reports, behind the REST API of spec/analysis-api.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/openir/platform/analysis-svc/internal/app"
	"github.com/openir/platform/analysis-svc/internal/runner/kubernetes/jobio"
	"github.com/openir/platform/analysis-svc/internal/store"
	"github.com/openir/platform/pkg/dbcmd"
	"github.com/openir/platform/pkg/docstore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if args := os.Args[1:]; dbcmd.Is(args) { // backup, migrate
		err = dbcmd.Run(ctx, "analysis-svc", args, databaseConfig, store.Specs(), os.Stdout)
	} else if len(args) > 0 && args[0] == "jobio" { // inside a kubernetes runner's pod: SIGTERM ends ctx
		err = jobio.Main(ctx, args[1:], os.Stderr)
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
