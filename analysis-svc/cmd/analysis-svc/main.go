// Command analysis-svc runs analyzers and responders for many organizations and keeps their jobs and
// reports, behind the REST API of spec/analysis-api.md.
package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/openir/platform/analysis-svc/internal/api"
	"github.com/openir/platform/analysis-svc/internal/app"
	"github.com/openir/platform/analysis-svc/internal/runner/kubernetes/jobio"
	"github.com/openir/platform/analysis-svc/internal/store"
	"github.com/openir/platform/pkg/cli"
	"github.com/openir/platform/pkg/docstore"
)

func main() { cli.Exec(service()) }

// service is the command line: serve (the default), backup, migrate, version, help, and jobio.
func service() cli.Service {
	return cli.Service{
		Name:     "analysis-svc",
		Short:    "analysis-svc runs analyzers and responders for many organizations and keeps their jobs and reports",
		Version:  api.Version,
		Serve:    run,
		Database: databaseConfig,
		Specs:    store.Specs(),
		Commands: []*cobra.Command{jobioCommand()},
	}
}

// jobioCommand is `jobio fetch|upload [--dir DIR]`, run inside a kubernetes runner's pod (SIGTERM ends the
// context, which starts the upload).
func jobioCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "jobio",
		Short: "The job folder's transfer in a kubernetes runner's pod (fetch, upload)",
		Long:  jobio.Help,
	}
	for _, verb := range []struct{ name, short string }{
		{"fetch", "Download the job's input/ into DIR and create DIR/output (the pod's init container)"},
		{"upload", "Wait for SIGTERM, then upload DIR/output (the pod's sidecar)"},
	} {
		var dir string
		sub := &cobra.Command{
			Use:   verb.name,
			Short: verb.short,
			Long:  jobio.Help,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return jobio.Run(cmd.Context(), verb.name, dir, cmd.ErrOrStderr())
			},
		}
		sub.Flags().StringVar(&dir, "dir", "/job", "the job folder `DIR` (the pod's emptyDir)")
		cmd.AddCommand(sub)
	}
	return cmd
}

// databaseConfig reads the configuration (file and env, as for serving) and says where the database is.
func databaseConfig(args []string) (docstore.Config, error) {
	cfg, err := app.Load(args, os.Stderr)
	if err != nil {
		return docstore.Config{}, err
	}
	return docstore.Config{URI: cfg.Database.URI, Name: cfg.Database.Name, Path: cfg.Database.Path}, nil
}
