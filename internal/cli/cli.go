// Package cli holds the claude-relay commands. Each command is an options
// struct, a constructor and a run function: cobra only fills the options, and
// tests call the run functions or Main itself.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/logging"
)

// Exit statuses beyond a command's own.
const (
	exitFailure = 1
	exitUsage   = 2
	// exitBudget: `run` refused before anything started because a budget
	// that covers the project is exhausted, or cannot be checked under
	// budgets.offline: deny (issue 26).
	exitBudget = 3
)

// ExitError ends the process with Code after printing nothing more; the
// command has already said what went wrong.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// errUsage marks errors in the command line or configuration.
var errUsage = errors.New("usage")

// App is what every command shares: its streams, the environment it was
// given, the loaded configuration and the logger.
type App struct {
	Stdin     io.Reader
	Stdout    io.Writer
	Stderr    io.Writer
	LookupEnv func(string) (string, bool)
	Environ   func() []string // the environment runs inherit
	Getwd     func() (string, error)
	Signals   func(c chan<- os.Signal) (stop func()) // nil: none

	configFile string
	loadOpts   config.LoadOptions
	loaded     *config.Loaded
	live       *config.Live
	log        *slog.Logger

	// server is the reference backend's code in claude-relay-server
	// (ServerMain); nil in claude-relay, which hands serve to
	// claude-relay-server and starts the embedded default in it (server.go).
	server Server
	// serveExecErr is why Main could not hand a serve command line to
	// claude-relay-server.
	serveExecErr error
	// embedded is the embedded default this process started as a child,
	// told of configuration reloads (watchConfig).
	embedded atomic.Pointer[backendConn]
}

// Main runs claude-relay with args and returns the exit status. It links
// no server code: a serve command line becomes claude-relay-server's
// (execServer), and the embedded default runs in it as a child.
func Main(args []string) int {
	return mainWith(args, nil, execServer(args))
}

// ServerMain runs claude-relay-server with args: the same commands as
// Main, with srv, the reference backend, in this process.
func ServerMain(args []string, srv Server) int {
	return mainWith(args, srv, nil)
}

func mainWith(args []string, srv Server, serveExecErr error) int {
	hardenProcess(os.Stderr)
	lookup, err := tokenFromFD(os.LookupEnv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "claude-relay:", err)
		return exitUsage
	}
	app := &App{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, LookupEnv: lookup, Environ: os.Environ,
		Getwd: os.Getwd, Signals: notify, server: srv, serveExecErr: serveExecErr}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return app.Run(ctx, args)
}

// notify relays SIGINT and SIGTERM to c until stop is called.
func notify(c chan<- os.Signal) func() {
	signal.Notify(c, os.Interrupt, syscall.SIGTERM)
	return func() { signal.Stop(c) }
}

// Run executes one command line.
func (a *App) Run(ctx context.Context, args []string) int {
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(a.Stdin)
	root.SetOut(a.Stdout)
	root.SetErr(a.Stderr)
	err := root.ExecuteContext(ctx)
	var exit *ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.Code
	case errors.Is(err, errUsage), errors.Is(err, config.ErrInvalid), errors.Is(err, config.ErrConfigFile),
		errors.Is(err, config.ErrUnknownConfig), errors.Is(err, config.ErrTokenFile):
		fmt.Fprintln(a.Stderr, "claude-relay:", a.redact(err.Error()))
		return exitUsage
	default:
		fmt.Fprintln(a.Stderr, "claude-relay:", a.redact(err.Error()))
		return exitFailure
	}
}

// flagKeys binds global flags to configuration keys.
var flagKeys = map[string]string{
	"backend.url": "backend-url",
	"data_dir":    "data-dir",
	"claude.path": "claude-path",
	"log.level":   "log-level",
	"log.format":  "log-format",
}

func (a *App) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "claude-relay",
		Short: "Run Claude Code from an editor and forward everything it does to a backend",
		Example: "  claude-relay run 'fix the failing test'        # a background run, events to the embedded backend\n" +
			"  claude-relay serve                              # the dashboard of what runs stored\n" +
			"  claude-relay doctor                             # what is missing, and how to fix it",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return a.load(cmd.Root().PersistentFlags())
		},
	}
	// Unknown commands and bad flags are both usage errors (exit 2), each
	// saying what to do.
	root.Args = func(_ *cobra.Command, args []string) error {
		if len(args) > 0 {
			return fmt.Errorf("%w: unknown command %q (`claude-relay --help` lists the commands)", errUsage, args[0])
		}
		return nil
	}
	root.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %w", errUsage, flagError(err)) })
	pf := root.PersistentFlags()
	pf.StringVar(&a.configFile, "config", "", "config file (default $XDG_CONFIG_HOME/claude-relay/config.yaml)")
	pf.String("backend-url", "", "backend base URL (empty: the embedded default)")
	pf.String("data-dir", "", "data directory")
	pf.String("claude-path", "", "Claude Code CLI to run (empty: discovery)")
	pf.String("log-level", "", "debug, info, warn or error")
	pf.String("log-format", "", "text or json")
	root.AddCommand(newVersionCmd(a), newConfigCmd(a), newDoctorCmd(a), newSpoolCmd(a), newExtensionCmd(a), newRunCmd(a), newServeCmd(a), newTerminalCmd(a), newHookPostCmd(a), newHookPolicyCmd(a), newACPCmd(a), newTokenCmd(a), newAuditCmd(a))
	if a.server != nil {
		root.AddCommand(newEmbeddedBackendCmd(a))
	}
	return root
}

// flagError rewords a bad flag value for people: which flag, the value,
// and what it takes.
func flagError(err error) error {
	var iv *pflag.InvalidValueError
	if !errors.As(err, &iv) {
		return err
	}
	want := map[string]string{"int": "a whole number, e.g. 10", "bool": "true or false",
		"duration": "a duration such as 30s or 5m", "float64": "a number"}[iv.GetFlag().Value.Type()]
	if want == "" {
		return err
	}
	return fmt.Errorf("--%s %q: not %s", iv.GetFlag().Name, iv.GetValue(), want)
}

// load reads the configuration once per process and sets up logging.
func (a *App) load(flags *pflag.FlagSet) error {
	cwd, err := a.Getwd()
	if err != nil {
		return fmt.Errorf("current directory: %w", err)
	}
	a.loadOpts = config.LoadOptions{File: a.configFile, LookupEnv: a.LookupEnv, Flags: flags, FlagKeys: flagKeys, Cwd: cwd}
	l, err := config.Load(a.loadOpts)
	if err != nil {
		return err
	}
	a.loaded = l
	a.live = config.NewLive(l.Config)
	a.log = logging.New(a.Stderr, l.Config.Log.Format, a.live.Level(), a.live.Secrets)
	return nil
}

func (a *App) redact(s string) string {
	if a.live == nil {
		return s
	}
	return logging.Redact(s, a.live.Secrets())
}
