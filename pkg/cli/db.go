package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openir/platform/pkg/docstore"
)

// backupCommand is `backup --out FILE`: a consistent online snapshot of the embedded database.
func backupCommand(s Service) *cobra.Command {
	var config, out string
	cmd := &cobra.Command{
		Use:   "backup --out FILE",
		Short: "Write a consistent snapshot of the embedded database (also while the service runs)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return Usagef("backup: --out FILE is required")
			}
			cfg, err := s.Database(configArgs(config))
			if err != nil {
				return err
			}
			return Backup(cmd.Context(), s.Name, cfg, out, cmd.OutOrStdout())
		},
	}
	configFlag(cmd, &config)
	cmd.Flags().StringVar(&out, "out", "", "the snapshot `FILE` to write (must not exist)")
	return cmd
}

// migrateCommand is `migrate --to URI`: a copy of the service's whole database to MongoDB.
func migrateCommand(s Service) *cobra.Command {
	var config, to, name string
	cmd := &cobra.Command{
		Use:   "migrate --to URI",
		Short: "Copy the whole database to MongoDB and verify the copy (safe to re-run; stop the service first)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if to == "" {
				return Usagef("migrate: --to URI is required")
			}
			if !strings.HasPrefix(to, "mongodb://") && !strings.HasPrefix(to, "mongodb+srv://") {
				return Usagef("migrate: --to %q: want a mongodb:// URI", to)
			}
			cfg, err := s.Database(configArgs(config))
			if err != nil {
				return err
			}
			return Migrate(cmd.Context(), s.Name, cfg, to, name, s.Specs, cmd.OutOrStdout())
		},
	}
	configFlag(cmd, &config)
	cmd.Flags().StringVar(&to, "to", "", "the target database `URI` (mongodb://…)")
	cmd.Flags().StringVar(&name, "name", "", "the target database `NAME` (default: database.name)")
	return cmd
}

// Backup writes a snapshot of the database of cfg to out.
func Backup(ctx context.Context, service string, cfg docstore.Config, out string, stdout io.Writer) error {
	if err := docstore.BackupFile(ctx, cfg, out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: snapshot of %s written to %s\n", service, cfg.Name, out)
	return nil
}

// Migrate copies every collection of specs from the database of cfg to the MongoDB at to (database name, or
// cfg's when empty) and verifies the copy.
func Migrate(ctx context.Context, service string, cfg docstore.Config, to, name string, specs []docstore.Spec, stdout io.Writer) error {
	if to == cfg.URI {
		return errors.New("migrate: the target is the database the service uses")
	}
	target := cfg
	target.URI = to
	if name != "" {
		target.Name = name
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
