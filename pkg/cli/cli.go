// Package cli is the command line both services share (spf13/cobra): `serve` (also what the binary does when
// no command is given), `backup`, `migrate`, `version`, `help`, and the commands a service adds (analysis-svc's
// `jobio`). Every command has --help. An unknown command, argument or flag, or a missing required flag, is an
// error printed with the command's usage on stderr and exit status 2: never a server start.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/openir/platform/pkg/docstore"
)

// Exit statuses of Main.
const (
	ExitOK    = 0 // done, or help asked for
	ExitError = 1 // the command failed (a configuration refused, the database unreachable…)
	ExitUsage = 2 // the command line is wrong: the usage is printed
)

// Service describes a service's binary.
type Service struct {
	Name    string // the binary's name: analysis-svc, case-svc
	Short   string // one line: what the service does
	Version string // the version /api/status reports
	// Serve runs the service until ctx ends. configArgs are the configuration arguments (--config FILE, or
	// none); the logs go to stdout.
	Serve func(ctx context.Context, configArgs []string, stdout io.Writer) error
	// Database reads the configuration from configArgs as Serve does and says where the database is
	// (backup, migrate).
	Database func(configArgs []string) (docstore.Config, error)
	Specs    []docstore.Spec // the service's collections with their indexes (migrate)
	// Commands are the service's own commands. Like every command of the tree, one without Args takes no
	// positional argument, and one with sub-commands but no Run refuses to run without a sub-command.
	Commands []*cobra.Command
}

// UsageError is a wrong command line: Main prints it with the usage and exits with ExitUsage.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Usagef returns a UsageError: for a command's own checks of its flags and arguments.
func Usagef(format string, a ...any) error { return UsageError{fmt.Errorf(format, a...)} }

// VersionLine is what `version` and `--version` print: the name, the version and the Go release.
func VersionLine(name, version string) string {
	return fmt.Sprintf("%s %s (%s %s/%s)\n", name, version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// New returns the root command of s.
func New(s Service) *cobra.Command {
	root := &cobra.Command{
		Use:               s.Name,
		Short:             s.Short,
		Long:              s.Short + ".\n\nWithout a command, " + s.Name + " serves (as `" + s.Name + " serve`).",
		Version:           s.Version,
		SilenceErrors:     true, // Main prints them, with the usage when the command line is wrong
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetVersionTemplate(VersionLine(s.Name, s.Version))
	serveRun := func(config *string) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, _ []string) error {
			return s.Serve(cmd.Context(), configArgs(*config), cmd.OutOrStdout())
		}
	}
	var rootConfig, serveConfig string
	configFlag(root, &rootConfig)
	root.RunE = serveRun(&rootConfig)
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Serve the API and run the background work until SIGINT or SIGTERM (the default command)",
		RunE:  serveRun(&serveConfig),
	}
	configFlag(serve, &serveConfig)
	version := &cobra.Command{
		Use:   "version",
		Short: "Print the version (as /api/status reports it)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := io.WriteString(cmd.OutOrStdout(), VersionLine(s.Name, s.Version))
			return err
		},
	}
	root.AddCommand(serve, backupCommand(s), migrateCommand(s), version)
	root.AddCommand(s.Commands...)
	root.SetHelpCommand(helpCommand())
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return UsageError{err} })
	strict(root)
	return root
}

// Exec is a binary's main: it runs the command line of s with the process's arguments, its context ended by
// SIGINT or SIGTERM (serve stops cleanly; jobio upload starts), and exits with Main's status.
func Exec(s Service) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, New(s), os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Main runs root with args, printing to stdout and stderr, and returns the exit status: ExitUsage (with the
// error and the usage of the command on stderr) for a wrong command line, ExitError for a failed command.
func Main(ctx context.Context, root *cobra.Command, args []string, stdout, stderr io.Writer) int {
	if args == nil {
		args = []string{} // nil would make cobra read os.Args
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(stderr, "%s: %v\n", root.Name(), err)
	if errors.As(err, new(UsageError)) {
		if cmd == nil {
			cmd = root
		}
		fmt.Fprintf(stderr, "\n%s", cmd.UsageString())
		return ExitUsage
	}
	return ExitError
}

// configFlag adds --config to cmd.
func configFlag(cmd *cobra.Command, config *string) {
	cmd.Flags().StringVar(config, "config", "", "configuration `FILE` (YAML, JSON or TOML); env variables override it")
}

// configArgs are the configuration arguments of the services' Load for config.
func configArgs(config string) []string {
	if config == "" {
		return nil
	}
	return []string{"--config", config}
}

// strict makes every command of the tree refuse what it does not expect, as a UsageError: a positional
// argument (an unknown command) where none is taken, and a missing sub-command.
func strict(cmd *cobra.Command) {
	args := cmd.Args
	if args == nil {
		args = func(c *cobra.Command, a []string) error {
			switch {
			case len(a) == 0:
				return nil
			case c.HasSubCommands():
				return fmt.Errorf("unknown command %q for %q", a[0], c.CommandPath())
			default:
				return fmt.Errorf("unexpected argument %q for %q", a[0], c.CommandPath())
			}
		}
	}
	cmd.Args = func(c *cobra.Command, a []string) error {
		if err := args(c, a); err != nil {
			return UsageError{err}
		}
		return nil
	}
	if cmd.HasSubCommands() && !cmd.Runnable() {
		names := []string{}
		for _, sub := range cmd.Commands() {
			names = append(names, sub.Name())
		}
		cmd.RunE = func(c *cobra.Command, _ []string) error {
			return Usagef("%q needs a command (%s)", c.CommandPath(), strings.Join(names, ", "))
		}
	}
	for _, sub := range cmd.Commands() {
		strict(sub)
	}
}

// helpCommand is `help [command]`: the help of a command, and an unknown topic is a wrong command line
// (cobra's own help command prints the usage but exits 0).
func helpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Args:  cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || cmd == nil || len(rest) > 0 {
				return Usagef("unknown help topic %q", strings.Join(args, " "))
			}
			cmd.InitDefaultHelpFlag()
			cmd.InitDefaultVersionFlag()
			return cmd.Help()
		},
	}
}
