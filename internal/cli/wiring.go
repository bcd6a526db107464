package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/extension"
	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/budget"
	"github.com/claude-relay/claude-relay/internal/discovery"
	"github.com/claude-relay/claude-relay/internal/host"
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
func (a *App) newExecutor(ctx context.Context, pol *policySource) (*executor.Executor, cliInfo) {
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
	opts := a.executorOptions(info)
	opts.Registry = new(a.runRegistry())
	opts.Policy = pol
	e := executor.New(opts)
	if rep, err := e.CleanupOrphans(dctx); err != nil || rep.Killed > 0 {
		a.log.Warn("cleaned up after a crashed helper", "killed", rep.Killed, "stale_runs", rep.Stale, "err", err)
	}
	return e, info
}

// executorOptions are the executor's options from the configuration, for
// the CLI info found (no run registry: newExecutor adds it).
func (a *App) executorOptions(info cliInfo) executor.Options {
	c := a.loaded.Config
	var env []string
	if a.Environ != nil {
		env = a.Environ()
	}
	return executor.Options{
		CLIPath: info.path, BaseCommand: c.Claude.Command, Model: c.Claude.Model, Args: c.Claude.Args, BaseEnv: env,
		Env: c.Claude.Env, RemoveAPIKey: c.Claude.DisableAPIKey, StartupTimeout: c.Claude.StartupTimeout, StallTimeout: c.Claude.StallTimeout, ApprovalTimeout: c.Approvals.Timeout,
		Logger: a.log, Billing: c.Claude.Billing,
	}
}

// helper is what a front end runs on: the host (internal/host: the run
// core, the forwarder, the dashboard's decisions, the drain at the end),
// built from the configuration, with the executor, the backend and the CLI
// it found.
type helper struct {
	*host.Host
	exec    *executor.Executor
	backend *backendConn
	cli     cliInfo
	policy  *policySource // the central policy, for terminal runs (the executor has it too)

	backendOnce sync.Once
}

// newHelper finds the CLI and opens the backend and the forwarder, then the
// host over them; the front end starts it with its error handler, and
// close ends it. With requireCLI, a missing CLI is an error before the
// backend and the spool are touched; without, the front end reports it.
func (a *App) newHelper(ctx context.Context, requireCLI bool) (*helper, error) {
	pol := &policySource{}
	exec, info := a.newExecutor(ctx, pol)
	if requireCLI && info.err != "" {
		return nil, fmt.Errorf("cannot run the Claude CLI: %s; `claude-relay doctor` says where it looked and how to fix it", info.err)
	}
	backend, err := a.backend(ctx)
	if err != nil {
		return nil, err
	}
	pol.c.Store(a.policyClient(backend))
	fwd, err := forwarder.Open(a.forwarderOptions(backend))
	if err != nil {
		backend.Close()
		return nil, err
	}
	a.endDeadRuns(ctx, fwd)
	c := a.loaded.Config
	h := &helper{exec: exec, backend: backend, cli: info, policy: pol}
	h.Host = host.New(host.Options{
		Forwarder: fwd,
		Core: relay.Options{Executor: exec, State: relay.NewState(c.DataDir), DefaultCwd: c.Workspace, Host: hostname(),
			CLIError: info.err, Logger: a.log, Budget: a.budgetClient(backend)},
		// Decisions made in the dashboard answer the runs' approvals too.
		Remote:       func(core *relay.Core) io.Closer { return a.remoteWaiter(backend, core) },
		Prefetch:     pol.prefetch,
		DrainTimeout: c.Forwarder.DrainTimeout,
	})
	return h, nil
}

// close ends the host with stop (runs stopped, the forwarder drained) and
// lets go of the backend; it returns how the drain went.
func (h *helper) close(stop relay.Stop) host.Closed {
	closed := h.Close(stop)
	h.backendOnce.Do(h.backend.Close)
	return closed
}

// abandon is the end on a second signal: no time for a graceful stop or a
// drain (the spool keeps what was not delivered), but no leftovers either.
func (h *helper) abandon() {
	h.StopPrefetch()
	h.exec.KillLive()
	h.backendOnce.Do(h.backend.Close)
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

// extensionServer builds the extension server over h; Serve starts h, so
// what Open found in the spool reaches the extension after ready, and so
// does everything after.
func (a *App) extensionServer(h *helper) *extension.Server {
	return extension.New(extension.Options{
		Host: h.Host, Version: version.Get().Version,
		CLIPath: h.cli.path, CLIVersion: h.cli.version, CLIError: h.cli.err,
		BackendURL: h.backend.URL, DashboardURL: h.backend.Dashboard,
		Logger: a.log, Terminal: a.terminalCommand,
	})
}

// budgetClient asks the backend the forwarder posts to, with the same
// token, for the budgets before each run and turn (issue 26).
func (a *App) budgetClient(backend *backendConn) *budget.Client {
	return budget.NewClient(budget.ClientOptions{URL: backend.URL, Token: a.forwarderOptions(backend).Token,
		Offline: a.loaded.Config.Budgets.Offline, Logger: a.log,
		CacheFile: filepath.Join(a.loaded.Config.DataDir, "budgets.json")})
}

// remoteWaiter starts the waiter that answers core's pending approvals with
// the decisions made in the backend's dashboard (CONTRACT §10). It asks the
// backend the forwarder posts to, with the same token, read afresh for each
// poll; it backs off like the forwarder does.
func (a *App) remoteWaiter(backend *backendConn, core remote.Core) *remote.Waiter {
	c := a.loaded.Config
	return remote.Start(remote.Options{Core: core, URL: backend.URL, Token: a.forwarderOptions(backend).Token,
		MinBackoff: c.Forwarder.MinBackoff, MaxBackoff: c.Forwarder.MaxBackoff, Logger: a.log})
}
