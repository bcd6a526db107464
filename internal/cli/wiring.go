package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/extension"
	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/discovery"
	"github.com/claude-relay/claude-relay/internal/proc"
	"github.com/claude-relay/claude-relay/internal/relay"
	"github.com/claude-relay/claude-relay/internal/remote"
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
	if c.Claude.Command != "" {
		// claude.command is the CLI (a pinned npx, say): nothing to discover.
		info.path = c.Claude.Command
	} else if res, err := discovery.Find(dctx, a.discoveryOptions(c.Claude.Path)); err != nil {
		info.err = err.Error()
	} else {
		info.path, info.version = res.Path, res.Version
	}
	var env []string
	if a.Environ != nil {
		env = a.Environ()
	}
	e := executor.New(executor.Options{
		CLIPath: info.path, BaseCommand: c.Claude.Command, Model: c.Claude.Model, Args: c.Claude.Args, BaseEnv: env,
		Env: c.Claude.Env, RemoveAPIKey: c.Claude.DisableAPIKey, StartupTimeout: c.Claude.StartupTimeout, StallTimeout: c.Claude.StallTimeout, ApprovalTimeout: c.Approvals.Timeout,
		Registry: new(a.runRegistry()), Logger: a.log,
	})
	if rep, err := e.CleanupOrphans(dctx); err != nil || rep.Killed > 0 {
		a.log.Warn("cleaned up after a crashed helper", "killed", rep.Killed, "stale_runs", rep.Stale, "err", err)
	}
	return e, info
}

// helper is what a front end runs on: the executor, the forwarder (opened,
// not started: the front end sets its error handler first), the backend.
type helper struct {
	exec    *executor.Executor
	fwd     *forwarder.Forwarder
	backend *backendConn
	cli     cliInfo
}

// newHelper finds the CLI and opens the backend and the forwarder. With
// requireCLI, a missing CLI is an error before the backend and the spool are
// touched; without, the front end reports it.
func (a *App) newHelper(ctx context.Context, requireCLI bool) (*helper, error) {
	exec, info := a.newExecutor(ctx)
	if requireCLI && info.err != "" {
		return nil, fmt.Errorf("cannot run the Claude CLI: %s; `claude-relay doctor` says where it looked and how to fix it", info.err)
	}
	backend, err := a.backend(ctx)
	if err != nil {
		return nil, err
	}
	fwd, err := forwarder.Open(a.forwarderOptions(backend))
	if err != nil {
		backend.Close()
		return nil, err
	}
	a.endDeadRuns(ctx, fwd)
	return &helper{exec: exec, fwd: fwd, backend: backend, cli: info}, nil
}

// deadRunGap is the pause between SIGINT, SIGTERM and SIGKILL when stopping
// what a dead helper left running: the executor's default.
const deadRunGap = 2 * time.Second

// runRegistry is the data dir's record of live runs (internal/proc).
func (a *App) runRegistry() proc.Registry {
	return proc.Registry{Dir: filepath.Join(a.loaded.Config.DataDir, "runs")}
}

// endDeadRuns stops what helpers that died on this data dir left running
// and spools relay.run_failed (reason helper_exited) for their runs through
// fwd, so that no session stays "running" for ever. Every helper start and
// `spool flush` calls it once fwd is open and before it delivers: only the
// process holding a run's spool can continue its numbering. It returns how
// many runs it ended.
func (a *App) endDeadRuns(ctx context.Context, fwd *forwarder.Forwarder) int {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	reg := a.runRegistry()
	if rep, err := reg.Cleanup(ctx, deadRunGap); err != nil || rep.Killed > 0 {
		a.log.Warn("cleaned up after a crashed helper", "killed", rep.Killed, "stale_runs", rep.Stale, "err", err)
	}
	n, err := relay.EndDeadRuns(ctx, reg, fwd, deadRunGap)
	if n > 0 {
		a.log.Warn("posted relay.run_failed (helper_exited) for runs of a helper that died", "runs", n)
	}
	if err != nil {
		a.log.Warn("cannot end every run of a helper that died; the next start tries again", "err", err)
	}
	return n
}

// extensionServer builds the extension server over h and starts the
// forwarder: what Open found in the spool reaches the server (and the
// extension, after ready), and so does everything after.
func (a *App) extensionServer(h *helper) *extension.Server {
	c := a.loaded.Config
	s := extension.New(extension.Options{
		Executor: h.exec, Forwarder: h.fwd, State: relay.NewState(c.DataDir), Version: version.Get().Version,
		CLIPath: h.cli.path, CLIVersion: h.cli.version, CLIError: h.cli.err,
		BackendURL: h.backend.URL, DashboardURL: h.backend.Dashboard, DefaultCwd: c.Workspace,
		DrainTimeout: c.Forwarder.DrainTimeout, Logger: a.log, Terminal: a.terminalCommand,
		Remote: func(core *relay.Core) io.Closer { return a.remoteWaiter(h, core) },
	})
	h.fwd.OnError(s.ReportForwarderError)
	h.fwd.Start()
	return s
}

// remoteWaiter starts the waiter that answers core's pending approvals with
// the decisions made in the backend's dashboard (CONTRACT §10). It asks the
// backend the forwarder posts to, with the same token, read afresh for each
// poll; it backs off like the forwarder does.
func (a *App) remoteWaiter(h *helper, core remote.Core) *remote.Waiter {
	c := a.loaded.Config
	return remote.Start(remote.Options{Core: core, URL: h.backend.URL, Token: a.forwarderOptions(h.backend).Token,
		MinBackoff: c.Forwarder.MinBackoff, MaxBackoff: c.Forwarder.MaxBackoff, Logger: a.log})
}
