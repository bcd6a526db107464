package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/claude-relay/claude-relay/internal/launch"
	"github.com/claude-relay/claude-relay/internal/localbackend"
)

// Server is the reference backend's code: the store, the API, the
// dashboard and its Markdown, /metrics. claude-relay-server links it and
// hands it to ServerMain. claude-relay does not: Go runs the package init of
// everything an executable links, and those libraries' would cost every
// helper and hook process its start time and memory. It runs
// claude-relay-server instead, for serve (the same process, exec'd) and
// for the embedded default (a child process, localbackend.StartChild).
type Server interface {
	// Open opens serve.db (sqlite:PATH or a postgres:// URL) for serve.
	Open(ctx context.Context, db string) (localbackend.Backend, error)
	// StartEmbedded runs the embedded default in this process.
	StartEmbedded(ctx context.Context, o localbackend.Options) (*localbackend.Conn, error)
}

// execServer turns a serve command line into claude-relay-server's: it
// replaces this process (same pid, streams and signals) before anything
// has read the environment or the backend token's descriptor, which it
// inherits as they are. It returns only when args are no serve command,
// or with why it could not; serve then says so.
func execServer(args []string) error {
	if !isServe(args) {
		return nil
	}
	path, err := localbackend.ServerPath()
	if err != nil {
		return err
	}
	err = syscall.Exec(path, append([]string{path}, args...), os.Environ())
	return fmt.Errorf("cannot run %s: %w", path, err)
}

// isServe says whether args run serve, as the command tree parses them.
func isServe(args []string) bool {
	cmd, _, err := (&App{}).rootCommand().Find(args)
	return err == nil && cmd.Name() == "serve"
}

// serverCode is the reference backend's code if this executable links it,
// or the error that says where it is.
func (a *App) serverCode() (Server, error) {
	switch {
	case a.server != nil:
		return a.server, nil
	case a.serveExecErr != nil:
		return nil, a.serveExecErr
	}
	return nil, errors.New("serve runs in " + localbackend.ServerName + ", which claude-relay hands its command line to: run `claude-relay serve` itself")
}

// startEmbeddedChild starts the embedded default in claude-relay-server, a
// child of this process that lives as long as it (localbackend.StartChild).
func (a *App) startEmbeddedChild(ctx context.Context, o localbackend.Options) (*backendConn, error) {
	path, err := localbackend.ServerPath()
	if err != nil {
		return nil, fmt.Errorf("embedded backend: %w", err)
	}
	// Its working directory is ours, so that a relative sqlite: path names
	// the same file; failing that, it is the executable's own.
	dir, _ := a.Getwd()
	conn, err := localbackend.StartChild(ctx, localbackend.Child{Path: path, Dir: dir, Env: a.childEnv(), Stderr: a.Stderr,
		Options: o, LogFormat: a.loaded.Config.Log.Format, LogLevel: a.live.Level(), Secrets: a.live.Secrets})
	if err != nil {
		return nil, err
	}
	a.embedded.Store(conn)
	return conn, nil
}

// childEnv is the embedded default's environment: ours without
// claude-relay's secrets (launch.RelaySecret). It reads its options from
// its stdin, not from there.
func (a *App) childEnv() []string {
	if a.Environ == nil {
		return nil
	}
	var env []string
	for _, kv := range a.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !launch.RelaySecret(name) {
			env = append(env, kv)
		}
	}
	return env
}

// newEmbeddedBackendCmd is claude-relay-server's side of the embedded
// default: hidden, started by a claude-relay helper, never by people.
func newEmbeddedBackendCmd(a *App) *cobra.Command {
	return &cobra.Command{
		Use:    localbackend.ChildCommand,
		Short:  "The embedded default backend of the claude-relay that started it (options on stdin)",
		Hidden: true,
		Args:   cobra.NoArgs,
		// The helper hands it its resolved options: it reads no
		// configuration of its own, which could differ from the helper's.
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := localbackend.RunChild(cmd.Context(), a.Stdin, a.Stdout, a.Stderr, a.server.StartEmbedded); err != nil {
				return &ExitError{Code: exitFailure} // said on stdout, where the helper reads it
			}
			return nil
		},
	}
}
