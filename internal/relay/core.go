package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/budget"
	"github.com/claude-relay/claude-relay/internal/content"
	"github.com/claude-relay/claude-relay/internal/proc"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// Executor runs one background run (executor.Executor).
type Executor interface {
	Run(ctx context.Context, req executor.Request, obs executor.Observer, ap executor.Approver) (*executor.Result, error)
}

// Spool takes every event for the backend (forwarder.Forwarder).
type Spool interface {
	Enqueue(forwarder.Event) (forwarder.Accepted, error)
}

// Options configure a Core; zero values mean the defaults.
type Options struct {
	Executor   Executor
	Spool      Spool
	State      *State // last conversation per workspace; nil: none kept
	DefaultCwd string // cwd of a request that names none
	Host       string // this machine's host name, for relay.run_started (the audit trail's machine)
	CLIError   string // why no CLI was found; non-blank prompts are refused
	Logger     *slog.Logger
	// Budget, when set, is asked before each run and each send of a live
	// run (budget.go): an exhausted budget refuses, the remaining one caps
	// --max-budget-usd.
	Budget Budget
}

// Core owns the live runs.
type Core struct {
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	runs    map[string]*Run
	closing bool
	wg      sync.WaitGroup
	ctx     context.Context
	stop    context.CancelCauseFunc

	amu sync.Mutex // guards ap; taken last
	ap  approvals
}

// New returns a Core.
func New(opts Options) *Core {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Core{opts: opts, log: opts.Logger, runs: map[string]*Run{}, ap: newApprovals()}
	c.ctx, c.stop = context.WithCancelCause(context.Background())
	return c
}

// Request is one prompt to run: the prompt options, passed to the
// executor unchanged (Cwd is DefaultCwd when empty), and what the relay
// adds.
type Request struct {
	executor.RunOptions
	RequestID     string // echoed in KindStarted
	RunID         string // generated when empty
	SessionID     string // generated when empty
	InteractionID string // generated when empty
	Prompt        string
	// Mode is how the run was started, for the backend (relay.run_started's
	// mode): wire.ModeACP for the ACP agent's runs; empty for a background
	// run of the extension or `claude-relay run`.
	Mode string

	ResumeLastSession bool // resume the cwd's last conversation when Resume is empty
	// Content is prompt content beside or instead of Prompt: text, images
	// (inline or by path) and files, built into the first user message.
	Content []content.Block
	// IdleTimeout (30m) ends a KeepAlive run when no turn runs; KeepAlive
	// keeps the run open after a result for Send, Interrupt, SetMode,
	// SetModel and End.
	IdleTimeout time.Duration
	// Idle (KeepAlive, no prompt) starts the CLI with no turn; the first
	// Send is the first turn.
	Idle bool
	// ConversationID (a UUID) is the ID a new conversation gets, so a front
	// end knows it before the CLI says it (ACP's sessionId is it).
	ConversationID string
}

// RefuseCode says why a request was refused.
type RefuseCode int

// Reasons to refuse a request.
const (
	RefuseBadValue     RefuseCode = iota + 1 // an option is wrong
	RefuseNoCLI                              // no Claude CLI to run
	RefuseShuttingDown                       // the Core is closing
	RefuseRunExists                          // the run ID is live already
	RefuseBudget                             // a budget is exhausted or cannot be checked (Err says which)
)

// RefusedError is a request the Core did not start: nothing was spooled and
// no event was sent.
type RefusedError struct {
	Code    RefuseCode
	Message string
	Err     error // the cause, when there is one (a *budget.ExhaustedError)
}

func (e *RefusedError) Error() string { return e.Message }

func (e *RefusedError) Unwrap() error { return e.Err }

func refuse(code RefuseCode, format string, args ...any) error {
	return &RefusedError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// badValue is the refusal of a request the executor's rules refuse, in
// their words.
func badValue(err error) error {
	if bad, ok := errors.AsType[*executor.RequestError](err); ok {
		return refuse(RefuseBadValue, "%s", bad.Problem)
	}
	return refuse(RefuseBadValue, "%v", err)
}

// checkMode refuses a permission mode set_mode cannot switch to, as a
// run's permission_mode is refused.
func checkMode(mode string) error {
	if err := executor.CheckMode(streamjson.PermissionMode(mode)); err != nil {
		return badValue(err)
	}
	return nil
}

// Start validates req and starts it; its events go to sink. A refused
// request returns a *RefusedError before anything is spooled.
func (c *Core) Start(req Request, sink Sink) (*Run, error) {
	if err := c.check(&req); err != nil {
		return nil, err
	}
	var grant budget.Grant
	if strings.TrimSpace(req.Prompt) != "" || len(req.Content) > 0 || req.Idle {
		g, err := c.checkBudget(req.Cwd)
		// An idle run (ACP's session/new) runs no turn: its first send is
		// checked, so only a prompt is refused here.
		if err != nil && !req.Idle {
			return nil, err
		}
		grant = g
		limitBudget(&req, grant)
	}
	er, rec, err := c.executorRequest(req)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return nil, refuse(RefuseShuttingDown, "shutting down: no new runs")
	}
	if _, dup := c.runs[req.RunID]; dup {
		c.mu.Unlock()
		return nil, refuse(RefuseRunExists, "run %q is already live", req.RunID)
	}
	ctx, cancel := context.WithCancelCause(c.ctx)
	lc := NewLifecycle(c.opts.Spool, c.opts.State, Frame{RunID: req.RunID, SessionID: req.SessionID, InteractionID: req.InteractionID,
		Cwd: req.Cwd, Mode: req.Mode, Host: c.opts.Host}, c.log)
	r := &Run{c: c, id: req.RunID, session: req.SessionID, lc: lc, started: time.Now(),
		ctx: ctx, cancel: cancel, sink: sink, in: make(chan executor.Input, inputs), pending: map[string]pendingApproval{}}
	if req.KeepAlive {
		r.live = &live{pending: map[string]wire.PromptRecord{}}
	}
	er.Inputs = r.in
	c.runs[r.id] = r
	c.wg.Add(1)
	// Under mu, so Live counts reach every sink in order.
	sink.Event(Event{Kind: KindStarted, RunID: r.id, SessionID: r.session, InteractionID: req.InteractionID, RequestID: req.RequestID,
		Cwd: req.Cwd, Live: len(c.runs)})
	c.mu.Unlock()

	r.spooled(lc.Started(wire.RunStarted{PromptRecord: rec, Idle: req.Idle, Model: req.Model, PermissionMode: string(req.PermissionMode), Resume: req.Resume, Fork: req.Fork, Continue: req.Continue,
		Approvals: req.Approvals}))
	r.postUnchecked(req.InteractionID, grant)
	go func() {
		defer c.wg.Done()
		res, err := c.opts.Executor.Run(ctx, er, r, r)
		cancel(nil)
		r.mu.Lock()
		r.inputsClosed = true // no input counts after this Wait starts
		r.mu.Unlock()
		r.waiters.Wait() // every outcome of an input is told before the end
		r.finish(res, err)
	}()
	return r, nil
}

// executorRequest builds what the executor runs, and what relay.run_started
// records of its prompt, refusing what it would refuse before anything
// starts.
func (c *Core) executorRequest(req Request) (executor.Request, wire.PromptRecord, error) {
	er := executor.Request{RunOptions: req.RunOptions, RunID: req.RunID, Prompt: req.Prompt, IdleTimeout: req.IdleTimeout,
		Idle: req.Idle, SessionID: req.ConversationID, Spool: proc.SpoolKey{SessionID: req.SessionID, InteractionID: req.InteractionID}}
	if er.KeepAlive && er.IdleTimeout <= 0 {
		er.IdleTimeout = idleTimeout
	}
	// The record of a prompt given as text alone; the CLI gets it whole.
	rec := wire.RecordPrompt(req.Prompt, nil)
	if len(req.Content) > 0 {
		msg, err := content.Prepare(req.Prompt, req.Content, req.Cwd, content.Limits{})
		if err != nil {
			return er, rec, refuse(RefuseBadValue, "%v", err)
		}
		er.Content, rec = msg.Content, msg.Record
		// The executor sends Content and completes a blank Prompt at once
		// (seed 002): it gets a summary, which is never blank.
		er.Prompt = content.Summary(req.Prompt, req.Content, req.Cwd)
	}
	if strings.TrimSpace(er.Prompt) == "" && !er.Idle {
		return er, rec, nil // seed 002: completes at once, nothing to check
	}
	// The options were checked by check; what is the request's own here.
	if err := executor.ValidateOwn(er); err != nil {
		return er, rec, badValue(err)
	}
	return er, rec, nil
}

// Frame is f with this core's defaults filled in (relay.Frame.Fill), for a
// run that starts elsewhere (a visible terminal) as for its own.
func (c *Core) Frame(f Frame) Frame {
	f.Fill(c.opts.DefaultCwd)
	if f.Host == "" {
		f.Host = c.opts.Host
	}
	return f
}

// LastConversation is the conversation last run in cwd, which
// resume_last_session resumes; "" when none is known.
func (c *Core) LastConversation(cwd string) string {
	if c.opts.State == nil {
		return ""
	}
	return c.opts.State.Last(cwd)
}

// check fills req's defaults and says why it cannot start, in words a user
// can act on.
func (c *Core) check(req *Request) error {
	f := c.Frame(Frame{RunID: req.RunID, SessionID: req.SessionID, InteractionID: req.InteractionID, Cwd: req.Cwd})
	req.RunID, req.SessionID, req.InteractionID, req.Cwd = f.RunID, f.SessionID, f.InteractionID, f.Cwd
	if req.Mode != "" && req.Mode != wire.ModeACP {
		return refuse(RefuseBadValue, "mode %q (allowed: %s, or none for a background run)", req.Mode, wire.ModeACP)
	}
	if req.ResumeLastSession && req.Resume == "" {
		req.Resume = c.LastConversation(req.Cwd)
	}
	// The options' own rules, for a blank prompt too (it needs no CLI, but
	// a mistake in its options is still one).
	if err := req.RunOptions.Validate(); err != nil {
		return badValue(err)
	}
	// A blank prompt completes without the CLI (seed 002), so it needs none.
	if c.opts.CLIError != "" && (strings.TrimSpace(req.Prompt) != "" || len(req.Content) > 0 || req.Idle) {
		return refuse(RefuseNoCLI, "cannot run the Claude CLI: %s (`claude-relay doctor` says where it looked and how to fix it)", c.opts.CLIError)
	}
	return nil
}

// ErrUnknownRun: no live run has the ID.
var ErrUnknownRun = errors.New("no live run")

// Cancel stops the run runID (every run when runID is empty): interrupt,
// then signals to its whole process tree. Its KindEnded follows.
func (c *Core) Cancel(runID string, stop Stop) error {
	c.mu.Lock()
	var targets []*Run
	for id, r := range c.runs {
		if runID == "" || id == runID {
			targets = append(targets, r)
		}
	}
	c.mu.Unlock()
	if runID != "" && len(targets) == 0 {
		return fmt.Errorf("%w %q", ErrUnknownRun, runID)
	}
	for _, r := range targets {
		r.cancel(&stop)
	}
	return nil
}

// Stop says who stopped a run and why (executor.Stop): the run's end and
// its stopped turn are reported with it.
type Stop = executor.Stop

// Causes of the stops the front ends make.
var (
	// StopClosed: the client went away (closed stdin, session/close,
	// shutdown). An idle live run closed so completes; one in a turn is
	// cancelled "closed by the client during a turn".
	StopClosed = Stop{Why: "closed by the client"}
)

// ErrUnknownApproval: no pending approval has the ID.
var ErrUnknownApproval = errors.New("no pending approval")

// Answer decides a pending approval; runID, when set, narrows the search.
// A reply that does not fit the approval is an ErrBadReply and leaves it
// pending. The first answer wins: a reply to an approval that was decided
// already is a *DecidedError saying by whom and how (while the Core still
// remembers it; else a plain ErrUnknownApproval).
func (c *Core) Answer(runID, approvalID string, rep Reply) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, r := range c.runs {
		if runID != "" && id != runID {
			continue
		}
		if found, err := r.answer(approvalID, rep); found {
			return err
		}
	}
	if d, ok := c.decidedOf(approvalID); ok {
		return &DecidedError{ApprovalID: approvalID, Decided: d}
	}
	return fmt.Errorf("%w %q (answered, timed out or cancelled?)", ErrUnknownApproval, approvalID)
}

// RunInfo describes a live run.
type RunInfo struct {
	RunID, SessionID, InteractionID string
	StartedAt                       time.Time
	PendingApprovals                int
}

// Runs lists the live runs.
func (c *Core) Runs() []RunInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]RunInfo, 0, len(c.runs))
	for _, r := range c.runs {
		out = append(out, r.info())
	}
	return out
}

// Close refuses new runs, closes the live ones (StopClosed) and waits until
// each has delivered its KindEnded. It is idempotent.
func (c *Core) Close() { c.CloseFor(StopClosed) }

// CloseFor is Close with another cause: the runs it stops say so.
func (c *Core) CloseFor(stop Stop) {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	c.stop(&stop)
	c.wg.Wait()
}
