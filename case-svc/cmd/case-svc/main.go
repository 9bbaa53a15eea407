// Command case-svc keeps security cases, alerts, observables, tasks and case templates, and drives analysis
// servers through its connector, behind the REST API of spec/case-api.md.
package main

import (
	"os"

	"github.com/openir/platform/case-svc/internal/api"
	"github.com/openir/platform/case-svc/internal/app"
	"github.com/openir/platform/case-svc/internal/store"
	"github.com/openir/platform/pkg/cli"
	"github.com/openir/platform/pkg/docstore"
)

func main() { cli.Exec(service()) }

// service is the command line: serve (the default), backup, migrate, version and help.
func service() cli.Service {
	return cli.Service{
		Name:     "case-svc",
		Short:    "case-svc keeps security cases, alerts, observables, tasks and case templates, and drives analysis servers",
		Version:  api.Version,
		Serve:    run,
		Database: databaseConfig,
		Specs:    store.Specs(),
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
