package executor

import (
	"context"
	"log/slog"
	"time"

	"github.com/claude-relay/claude-relay/internal/billing"
	"github.com/claude-relay/claude-relay/internal/ndjson"
	"github.com/claude-relay/claude-relay/internal/proc"
)

// Options configure an Executor; zero values mean the defaults.
type Options struct {
	CLIPath      string            // the Claude CLI to run
	BaseCommand  string            // replaces CLIPath, shell-split (for example "npx -y @anthropic-ai/claude-code@2.1.330")
	Model        string            // default model (claude.model)
	Args         []string          // extra arguments for every run (claude.args)
	BaseEnv      []string          // the environment runs start from (the helper's own)
	Env          map[string]string // claude.env, over BaseEnv
	RemoveAPIKey bool              // drop ANTHROPIC_API_KEY, so the CLI uses its own login
	// Billing is claude.billing: a run whose credentials it does not allow
	// is stopped before its first API request (billing.go).
	Billing billing.Policy

	StartupTimeout  time.Duration // no stdout within this: kill and fail (30s)
	ApprovalTimeout time.Duration // an unanswered approval is denied (10m)
	InterruptGrace  time.Duration // after interrupt, wait this long before signals (5s)
	SignalGap       time.Duration // between SIGINT, SIGTERM and SIGKILL (2s)
	MaxLine         int           // longest stdout line accepted (ndjson.DefaultMax)

	// The watchdog (CONTRACT §7). StallTimeout: a turn with no CLI output
	// this long while no tool runs and no request of the CLI waits for us
	// is stalled: EventStalled, then an interrupt (5m). StallGrace: a
	// stalled turn still running this long after the interrupt gets the
	// run killed as failed (30s). ExitGrace: a CLI still running this long
	// after its final result (one-shot), or after its stdin was closed
	// (keep-alive), is killed; its result stands (10s).
	StallTimeout time.Duration
	StallGrace   time.Duration
	ExitGrace    time.Duration

	// Policy is the central policy (serve.policy), enforced by a PreToolUse
	// hook in every run; nil: none (policy.go).
	Policy PolicySource

	Registry *proc.Registry // records live runs so a later start can kill what a crash left; nil: none
	Logger   *slog.Logger
}

// Executor starts runs. It is safe for concurrent use: runs are independent.
type Executor struct {
	opts Options
	log  *slog.Logger
}

// New returns an Executor with opts, defaults filled in.
func New(opts Options) *Executor {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&opts.StartupTimeout, 30*time.Second)
	def(&opts.ApprovalTimeout, 10*time.Minute)
	def(&opts.InterruptGrace, 5*time.Second)
	def(&opts.SignalGap, 2*time.Second)
	def(&opts.StallTimeout, defaultStallTimeout)
	def(&opts.StallGrace, defaultStallGrace)
	def(&opts.ExitGrace, defaultExitGrace)
	if opts.MaxLine <= 0 {
		opts.MaxLine = ndjson.DefaultMax
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Executor{opts: opts, log: log}
}

// CleanupOrphans kills what runs of a crashed helper left behind (recorded in
// the Registry) and removes their records, but those naming a Spool key: their
// runs' ends are still to be posted (relay.EndDeadRuns). Call it once at start.
func (e *Executor) CleanupOrphans(ctx context.Context) (proc.CleanupReport, error) {
	if e.opts.Registry == nil {
		return proc.CleanupReport{}, nil
	}
	return e.opts.Registry.Cleanup(ctx, e.opts.SignalGap)
}

// KillLive kills, at once and without grace, every run this process has
// live: for a forced exit (a second Ctrl-C), which leaves no time for the
// interrupt-then-signals stop but must still leave no process behind.
func (e *Executor) KillLive() int {
	if e.opts.Registry == nil {
		return 0
	}
	return e.opts.Registry.KillOwn()
}
