// Package dbcmd owns the database sub-commands both services offer beside serving: `backup` (a consistent
// online snapshot of the embedded database) and `migrate` (a copy of a service's whole database to another
// engine, verified and safe to re-run).
package dbcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/openir/platform/pkg/docstore"
)

// Is reports whether args start with one of the sub-commands of Run.
func Is(args []string) bool {
	return len(args) > 0 && (args[0] == "backup" || args[0] == "migrate")
}

// Run runs the sub-command of args for service: load reads the service's configuration from the
// configuration arguments (--config FILE, or none) and returns where its database is; specs are the service's
// collections with their indexes.
func Run(ctx context.Context, service string, args []string, load func(configArgs []string) (docstore.Config, error),
	specs []docstore.Spec, stdout io.Writer) error {
	if !Is(args) {
		return errors.New("usage: backup --out FILE | migrate --to URI")
	}
	cmd := args[0]
	fs := flag.NewFlagSet(service+" "+cmd, flag.ContinueOnError)
	fs.SetOutput(stdout)
	config := fs.String("config", "", "configuration file (YAML), as for serving")
	var out, to, name string
	switch cmd {
	case "backup":
		fs.StringVar(&out, "out", "", "the snapshot file to write (must not exist)")
	case "migrate":
		fs.StringVar(&to, "to", "", "the target database URI (mongodb://…)")
		fs.StringVar(&name, "name", "", "the target database name (default: database.name)")
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	var cargs []string
	if *config != "" {
		cargs = []string{"--config", *config}
	}
	cfg, err := load(cargs)
	if err != nil {
		return err
	}
	switch cmd {
	case "backup":
		if out == "" {
			return errors.New("backup: --out FILE is required")
		}
		if err := docstore.BackupFile(ctx, cfg, out); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: snapshot of %s written to %s\n", service, cfg.Name, out)
		return nil
	default:
		if to == "" {
			return errors.New("migrate: --to URI is required")
		}
		if to == cfg.URI {
			return errors.New("migrate: the target is the database the service uses")
		}
		target := cfg
		target.URI = to
		if name != "" {
			target.Name = name
		}
		if !strings.HasPrefix(to, "mongodb://") && !strings.HasPrefix(to, "mongodb+srv://") {
			return fmt.Errorf("migrate: --to %q: want a mongodb:// URI", to)
		}
		src, err := docstore.Open(ctx, cfg, nil)
		if err != nil {
			return fmt.Errorf("migrate: open the source (stop the service first): %w", err)
		}
		defer src.Close(context.WithoutCancel(ctx))
		dst, err := docstore.Open(ctx, target, nil)
		if err != nil {
			return fmt.Errorf("migrate: open the target: %w", err)
		}
		defer dst.Close(context.WithoutCancel(ctx))
		if _, err := docstore.Migrate(ctx, src, dst, specs, stdout); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		fmt.Fprintf(stdout, "%s: every collection copied and verified; set database.uri to the target and start the service\n", service)
		return nil
	}
}
