package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/extension"
	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/discovery"
	"github.com/claude-relay/claude-relay/internal/proc"
	"github.com/claude-relay/claude-relay/internal/version"
)

// cliInfo is what discovery found, for the ready event and doctor.
type cliInfo struct {
	path, version, err string
}

// newExecutor finds the CLI and builds the executor; it also kills what a
// crashed helper left behind, once, at start.
func (a *App) newExecutor(ctx context.Context) (*executor.Executor, cliInfo) {
	c := a.loaded.Config
	var info cliInfo
	dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if res, err := discovery.Find(dctx, a.discoveryOptions(c.Claude.Path)); err != nil {
		info.err = err.Error()
	} else {
		info.path, info.version = res.Path, res.Version
	}
	var env []string
	if a.Environ != nil {
		env = a.Environ()
	}
	e := executor.New(executor.Options{
		CLIPath: info.path, Model: c.Claude.Model, Args: c.Claude.Args, BaseEnv: env, Env: c.Claude.Env,
		StartupTimeout: c.Claude.StartupTimeout, ApprovalTimeout: c.Approvals.Timeout,
		Registry: &proc.Registry{Dir: filepath.Join(c.DataDir, "runs")}, Logger: a.log,
	})
	if rep, err := e.CleanupOrphans(dctx); err != nil || rep.Killed > 0 {
		a.log.Warn("cleaned up after a crashed helper", "killed", rep.Killed, "stale_runs", rep.Stale, "err", err)
	}
	return e, info
}

// helper is an extension server with its forwarder and backend.
type helper struct {
	exec    *executor.Executor
	srv     *extension.Server
	fwd     *forwarder.Forwarder
	backend *backendConn
}

// newHelper wires executor, forwarder and backend into an extension server.
// With requireCLI, a missing CLI is an error before the backend and the
// spool are touched; without, the ready event reports it.
func (a *App) newHelper(ctx context.Context, requireCLI bool) (*helper, error) {
	exec, info := a.newExecutor(ctx)
	if requireCLI && info.err != "" {
		return nil, fmt.Errorf("cannot run the Claude CLI: %s; `claude-relay doctor` says where it looked and how to fix it", info.err)
	}
	backend, err := a.backend(ctx)
	if err != nil {
		return nil, err
	}
	var srv atomic.Pointer[extension.Server]
	fo := a.forwarderOptions(backend)
	fo.OnError = func(e forwarder.Error) {
		if s := srv.Load(); s != nil {
			s.ReportForwarderError(e)
		}
	}
	fwd, err := forwarder.Open(fo)
	if err != nil {
		backend.Close()
		return nil, err
	}
	c := a.loaded.Config
	s := extension.New(extension.Options{
		Executor: exec, Forwarder: fwd, State: extension.NewState(c.DataDir), Version: version.Get().Version,
		CLIPath: info.path, CLIVersion: info.version, CLIError: info.err,
		BackendURL: backend.URL, DashboardURL: backend.Dashboard, DefaultCwd: c.Workspace,
		DrainTimeout: c.Forwarder.DrainTimeout, Logger: a.log, Terminal: a.terminalCommand,
	})
	srv.Store(s)
	return &helper{exec: exec, srv: s, fwd: fwd, backend: backend}, nil
}
