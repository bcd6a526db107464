package executor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/claude-relay/claude-relay/internal/billing"
	"github.com/claude-relay/claude-relay/internal/ndjson"
	"github.com/claude-relay/claude-relay/internal/proc"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// run is one CLI process and the goroutines that serve it. Run owns it: every
// goroutine started here has ended when Run returns.
type run struct {
	e        *Executor
	req      Request
	obs      Observer
	approver Approver
	peer     *peer
	tree     proc.Tree
	agg      aggregator
	stderr   tail

	mu           sync.Mutex
	approvals    map[string]context.CancelFunc // pending can_use_tool, by control request ID
	policyAsks   map[string]policyAsk          // tool calls the central policy asks about, by tool_use_id
	approvalStop approvalStop                  // an approval's deny stopped the turn
	asking       atomic.Bool                   // the Approver decides tools: Approvals, or a plan approved into default
	mode         streamjson.PermissionMode     // as the CLI last reported or confirmed it; "" until then

	lv    liveLoop     // turns and Inputs, owned by the loop (supervise)
	turns *turnSignal  // results, from the stdout reader to the loop
	w     *stdinWriter // the loop's writes to stdin

	approvalCtx    context.Context // ends on interrupt and exit: no approval outlives the run
	cancelApproval context.CancelFunc
	handlers       sync.WaitGroup             // control-request handlers
	gotOutput      chan struct{}              // closed at the first stdout line
	resultSeen     chan struct{}              // closed at the result line
	refused        chan *billing.RefusedError // the billing guard's refusal, to the loop (capacity 1)

	act activity // the CLI's output and what it waits for, for the watchdog
	wd  watchdog // the watchdog's timers, owned by the loop

	recorded time.Time     // when the run was first registered; the loop's
	spool    proc.SpoolKey // where the run's events go now (Request.Spool, then each turn's); the loop's
}

// Run executes one request to its end and returns its Result, which is never
// nil. The error is non-nil exactly when the run failed. Cancelling ctx stops
// the run (interrupt, then signals to the whole process tree); the run then
// ends as cancelled whatever the CLI reports.
func (e *Executor) Run(ctx context.Context, req Request, obs Observer, approver Approver) (*Result, error) {
	start := time.Now()
	if req.RunID == "" {
		req.RunID = uuid.NewString()
	}
	if obs == nil {
		obs = ObserverFunc(func(Event) {})
	}
	if strings.TrimSpace(req.Prompt) == "" && !req.Idle {
		// Seed 002: an empty command completes at once; no CLI is started.
		return &Result{Status: StatusCompleted}, nil
	}
	if err := validate(req); err != nil {
		return failed(start, err), err
	}
	if len(req.Content) > 0 {
		if _, err := streamjson.UserMessageContent(req.Content); err != nil {
			err = badRequest("content", "content: %v", err)
			return failed(start, err), err
		}
	}
	program, args, env, err := e.command(req)
	if err != nil {
		return failed(start, err), err
	}
	r := &run{e: e, req: req, obs: obs, approver: approver,
		approvals: map[string]context.CancelFunc{}, policyAsks: map[string]policyAsk{}, gotOutput: make(chan struct{}), resultSeen: make(chan struct{}),
		refused: make(chan *billing.RefusedError, 1),
		lv:      liveLoop{inputs: req.Inputs, busy: !req.Idle, started: 1}, turns: newTurnSignal(), w: newStdinWriter(), spool: req.Spool}
	if req.Idle {
		r.lv.started = 0
	}
	r.asking.Store(req.Approvals)
	r.approvalCtx, r.cancelApproval = context.WithCancel(context.Background())
	defer r.cancelApproval()
	res, err := r.execute(ctx, start, program, args, env)
	res.DurationMS = time.Since(start).Milliseconds()
	return res, err
}

func failed(start time.Time, err error) *Result {
	return &Result{Status: StatusFailed, Reason: err.Error(),
		CommandResult: CommandResult{Stderr: err.Error(), ExitCode: 1, DurationMS: time.Since(start).Milliseconds()}}
}

// pipes are the CLI's stdio. We make them ourselves rather than use
// cmd.StdoutPipe so that Wait never closes a pipe we are still reading, and we
// can stop reading when a tool that inherited the pipe keeps it open.
type pipes struct {
	stdinR, stdinW, stdoutR, stdoutW, stderrR, stderrW *os.File
}

func openPipes() (*pipes, error) {
	var p pipes
	var err error
	if p.stdinR, p.stdinW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	if p.stdoutR, p.stdoutW, err = os.Pipe(); err != nil {
		p.closeAll()
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	if p.stderrR, p.stderrW, err = os.Pipe(); err != nil {
		p.closeAll()
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	return &p, nil
}

func (p *pipes) closeChildEnds() {
	for _, f := range []*os.File{p.stdinR, p.stdoutW, p.stderrW} {
		if f != nil {
			f.Close()
		}
	}
}

func (p *pipes) closeAll() {
	p.closeChildEnds()
	for _, f := range []*os.File{p.stdinW, p.stdoutR, p.stderrR} {
		if f != nil {
			f.Close()
		}
	}
}

func (r *run) execute(ctx context.Context, start time.Time, program string, args, env []string) (*Result, error) {
	p, err := openPipes()
	if err != nil {
		return failed(start, err), err
	}
	defer p.closeAll()
	// The token tells this start's processes from those of another helper's
	// run with the same (client-chosen) ID, which our cleanup must not kill.
	token := proc.NewToken()
	cmd := exec.Command(program, args...)
	cmd.Env, cmd.Dir = proc.WithToken(env, token), r.req.Cwd
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.stdinR, p.stdoutW, p.stderrW
	cmd.SysProcAttr = proc.SysProcAttr()
	if err := cmd.Start(); err != nil {
		err = fmt.Errorf("start the Claude CLI %s: %w", program, err)
		return failed(start, err), err
	}
	p.closeChildEnds()
	r.tree = proc.Tree{PGID: cmd.Process.Pid, RunID: r.req.RunID, Token: token}
	r.tree.Root, _ = proc.Lookup(cmd.Process.Pid)
	r.register()
	defer r.unregister()
	r.obs.Event(Event{Kind: EventStarted, RunID: r.req.RunID, Time: time.Now(), PID: cmd.Process.Pid, Argv: append([]string{program}, args...)})

	exited := make(chan *os.ProcessState, 1)
	go func() {
		cmd.Wait() //nolint:errcheck // the state says all we need
		exited <- cmd.ProcessState
	}()
	r.peer = newPeer(p.stdinW)
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); r.readStdout(p.stdoutR) }()
	go func() { defer readers.Done(); r.readStderr(p.stderrR) }()
	go r.w.run()
	r.begin()

	outcome := r.supervise(ctx, exited)
	r.cancelApproval()
	r.w.shutdown(p.stdinW, func() {
		r.e.log.Warn("CLI stdin still blocked after exit; closing it", "run_id", r.req.RunID)
	})
	r.peer.close()
	r.cleanupLeftovers()
	r.finishReading(&readers, p)
	r.handlers.Wait()
	// The reader is done: no control response can come any more.
	r.peer.abandon(ErrNoAnswer)
	res, err := r.result(outcome)
	return r.watchdogResult(outcome, res, err)
}

// begin sends initialize, the question of which modes the CLI takes, the
// permission mode and the prompt at once, as the official SDKs do; the CLI
// reads them in order. A request that names no mode starts in the CLI's
// configured one, which initialize's answer tells: the prompt waits for it
// (infoParts.initialized).
func (r *run) begin() {
	var first []byte
	if !r.req.Idle { // an idle start has no first turn: the first send is
		first = streamjson.UserMessage(r.req.Prompt)
		if len(r.req.Content) > 0 {
			first, _ = streamjson.UserMessageContent(r.req.Content) // checked by Run
		}
	}
	mode := permissionMode(r.req)
	info := &infoParts{r: r, mode: r.req.PermissionMode}
	if mode == "" {
		info.held = first
	}
	if r.guarding() {
		// Every user message waits for the billing verdict (billing.go).
		r.w.hold()
	}
	steps := []func() error{
		func() error {
			_, err := r.peer.call(streamjson.InitializeRequest{Hooks: r.hooks()}, info.initialized)
			return err
		},
		func() error {
			_, err := r.peer.call(streamjson.ModesQuestion, info.modesAnswered)
			return err
		},
	}
	if mode != "" {
		steps = append(steps, func() error {
			return r.setStartMode(mode)
		})
		switch {
		case first == nil:
		case r.guarding():
			r.w.add(writeOp{write: func() error { return r.peer.writeLine(first) }})
		default:
			steps = append(steps, func() error { return r.peer.writeLine(first) })
		}
	}
	for _, step := range steps {
		if err := step(); err != nil {
			// The CLI died at once; its exit and stderr tell the story.
			r.e.log.Debug("write to CLI failed", "run_id", r.req.RunID, "err", err)
			return
		}
	}
}

// outcome is how supervision ended.
type outcome struct {
	state     *os.ProcessState
	cancelled bool   // ctx ended while a turn ran or waited: the run was stopped
	closed    bool   // ctx ended while a keep-alive run was idle: it was closed, as End would
	why       string // with cancelled: the cancel's cause, for people
	by        wire.By
	timedOut  bool
	refused   *billing.RefusedError // the billing guard stopped the run before its first API request
}

// supervise waits for the CLI to exit, enforcing the startup timeout and
// the watchdog and turning a cancel into interrupt-then-signals. It is the
// run loop: it reads Inputs and moves a keep-alive run from turn to turn.
func (r *run) supervise(ctx context.Context, exited <-chan *os.ProcessState) outcome {
	startup := time.NewTimer(r.e.opts.StartupTimeout)
	defer startup.Stop()
	defer r.stopIdle()
	defer r.wd.stop()
	gotOutput := r.gotOutput
	if r.req.Idle {
		r.armIdle()
	}
	var turnEnds, resultSeen <-chan struct{}
	if r.req.KeepAlive {
		turnEnds = r.turns.c
	} else {
		resultSeen = r.resultSeen
	}
	for {
		select {
		case in, ok := <-r.lv.inputs:
			r.onInput(in, ok)
		case <-turnEnds:
			r.onTurnsEnded()
		case <-resultSeen:
			// A one-shot run's stdin is closed at its result: the CLI
			// should exit now.
			resultSeen = nil
			r.expectExit()
		case <-r.lv.idleC:
			r.onIdle()
		case st := <-exited:
			return outcome{state: st}
		case refused := <-r.refused:
			// Nothing but control requests reached the CLI: stop it.
			return outcome{state: r.kill(exited, r.e.opts.SignalGap), refused: refused}
		case <-gotOutput:
			startup.Stop()
			gotOutput = nil
			r.watchStalls()
		case <-r.wd.stallC:
			r.onStallCheck()
		case <-r.wd.graceC:
			if r.onStallGrace() {
				return outcome{state: r.kill(exited, r.e.opts.SignalGap)}
			}
		case <-r.wd.exitC:
			return r.onExitGrace(exited)
		case <-startup.C:
			r.e.log.Warn("no output from the Claude CLI; killing it", "run_id", r.req.RunID, "timeout", r.e.opts.StartupTimeout)
			return outcome{state: r.kill(exited, 0), timedOut: true}
		case <-ctx.Done():
			return r.cancel(ctx, exited)
		}
	}
}

// Stop is a cancel's cause (context.WithCancelCause): who stopped the run
// and why, in words for people. A run cancelled with another cause (or
// none) is reported with its text.
type Stop struct {
	By  wire.By
	Why string // "closed by the client": " during a turn" is added when a turn ran
}

func (s *Stop) Error() string { return s.Why }

// cancel ends the run because ctx ended. A keep-alive run with no turn
// running or queued is closed as End would close it: nothing was lost, so
// it completes. Otherwise the running turn is stopped (and reported
// interrupted, with the cause) and the run is cancelled.
func (r *run) cancel(ctx context.Context, exited <-chan *os.ProcessState) outcome {
	stop := Stop{Why: "cancelled"}
	var cause *Stop
	switch err := context.Cause(ctx); {
	case errors.As(err, &cause):
		stop = *cause
	case err != nil && !errors.Is(err, context.Canceled):
		stop.Why = err.Error()
	}
	if r.req.KeepAlive && !r.lv.busy && len(r.lv.queue) == 0 {
		return outcome{state: r.stop(exited), closed: true}
	}
	if r.req.KeepAlive {
		stop.Why += " during a turn"
	}
	r.noteStop(true, stop.By, stop.Why, false)
	return outcome{state: r.stop(exited), cancelled: true, why: stop.Why, by: stop.By}
}

// stop is the cancel path (seed 000 §10): interrupt over the protocol, end
// pending approvals, give the CLI InterruptGrace to finish, then signals.
func (r *run) stop(exited <-chan *os.ProcessState) *os.ProcessState {
	r.cancelApproval()
	// Through the writer: a CLI that stopped reading must not stall the stop.
	r.w.add(writeOp{
		write: func() error {
			_, _, err := r.peer.send(streamjson.InterruptRequest{})
			return err
		},
		done: func(err error) {
			if err != nil {
				r.e.log.Debug("interrupt not sent", "run_id", r.req.RunID, "err", err)
			}
		},
	})
	var turnEnds <-chan struct{}
	if r.req.KeepAlive {
		// A keep-alive run keeps stdin open after results: EOF, once no turn
		// runs, is what lets the CLI exit.
		if r.lv.busy {
			turnEnds = r.turns.c
		} else {
			r.closeStdin()
		}
	}
	grace := time.NewTimer(r.e.opts.InterruptGrace)
	defer grace.Stop()
	// A local copy: the reader still selects on r.resultSeen.
	resultSeen := r.resultSeen
	for {
		select {
		case st := <-exited:
			return st
		case <-resultSeen:
			// The CLI has answered the interrupt with its result; EOF on stdin
			// (closed when the result arrived) lets it exit.
			resultSeen = nil
		case <-turnEnds:
			turnEnds = nil
			r.closeStdin()
		case <-grace.C:
			return r.kill(exited, r.e.opts.SignalGap)
		}
	}
}

// kill escalates SIGINT → SIGTERM → SIGKILL over the whole tree and waits
// for the CLI's exit.
func (r *run) kill(exited <-chan *os.ProcessState, gap time.Duration) *os.ProcessState {
	ctx, cancel := context.WithTimeout(context.Background(), 3*gap+5*time.Second)
	defer cancel()
	if gap == 0 {
		proc.KillNow(r.tree)
	} else if err := proc.KillAll(ctx, r.tree, gap); err != nil {
		r.e.log.Warn("processes survived the kill", "run_id", r.req.RunID, "err", err)
	}
	select {
	case st := <-exited:
		return st
	case <-ctx.Done():
		// Unreachable unless the kernel refuses SIGKILL (an unkillable D-state
		// process); report what we know rather than hang.
		return nil
	}
}

// cleanupLeftovers kills what the run left once the CLI is gone: tools in
// sessions of their own, background commands. The process group is not
// signalled here, since the CLI's pid (the group ID) may already be reused.
func (r *run) cleanupLeftovers() {
	t := r.tree
	t.PGID = 0
	ctx, cancel := context.WithTimeout(context.Background(), 3*r.e.opts.SignalGap+5*time.Second)
	defer cancel()
	if err := proc.KillAll(ctx, t, min(r.e.opts.SignalGap, 500*time.Millisecond)); err != nil {
		r.e.log.Warn("leftover processes survived", "run_id", r.req.RunID, "err", err)
	}
}

// finishReading waits for the readers to drain the pipes. A process that
// inherited stdout and outlived the kill could hold it open forever, so after
// a grace period the read ends are closed under the readers.
func (r *run) finishReading(readers *sync.WaitGroup, p *pipes) {
	done := make(chan struct{})
	go func() { readers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		r.e.log.Warn("CLI output still open after exit; closing it", "run_id", r.req.RunID)
		p.stdoutR.Close()
		p.stderrR.Close()
		<-done
	}
}

func (r *run) register() {
	if r.e.opts.Registry == nil {
		return
	}
	if r.recorded.IsZero() {
		r.recorded = time.Now()
	}
	self, _ := proc.Lookup(os.Getpid())
	rec := proc.Record{RunID: r.req.RunID, Token: r.tree.Token, Helper: self, CLI: r.tree.Root, PGID: r.tree.PGID, Started: r.recorded,
		Spool: r.spool}
	if err := r.e.opts.Registry.Register(rec); err != nil {
		r.e.log.Warn("cannot record the run; a crash could leave it running", "run_id", r.req.RunID, "err", err)
	}
}

func (r *run) unregister() {
	if r.e.opts.Registry != nil {
		if err := r.e.opts.Registry.Unregister(r.req.RunID); err != nil {
			r.e.log.Warn("cannot remove the run record", "run_id", r.req.RunID, "err", err)
		}
	}
}

// readStdout reports every line in order and serves control requests.
func (r *run) readStdout(f io.Reader) {
	lr := ndjson.NewReader(f, r.e.opts.MaxLine)
	first := true
	for {
		line, err := lr.Next()
		if line == nil && err != nil {
			return
		}
		if first {
			first = false
			close(r.gotOutput)
		}
		if err != nil {
			r.act.mark()
			r.obs.Event(Event{Kind: EventMalformed, RunID: r.req.RunID, Time: time.Now(), Line: bytes.Clone(line), Err: err})
			continue
		}
		if len(bytes.TrimSpace(line)) == 0 {
			r.act.mark()
			continue
		}
		msg, derr := streamjson.Decode(line)
		if derr != nil {
			r.act.mark()
			r.obs.Event(Event{Kind: EventMalformed, RunID: r.req.RunID, Time: time.Now(), Line: bytes.Clone(line), Err: derr})
			continue
		}
		r.act.saw(msg)
		r.obs.Event(Event{Kind: EventLine, RunID: r.req.RunID, Time: time.Now(), Line: msg.Raw, Message: msg})
		r.handle(msg)
	}
}

// handle acts on one decoded line after the observer has seen it.
func (r *run) handle(msg streamjson.Message) {
	r.agg.add(msg)
	switch {
	case msg.ControlRequest != nil:
		r.serve(msg.ControlRequest)
	case msg.ControlResponse != nil:
		// Whoever asked reports a refusal in its own words (the modes
		// question expects one); an answer nobody waits for is noise.
		if !r.peer.resolve(msg.ControlResponse) {
			r.e.log.Debug("a control response nobody waits for", "run_id", r.req.RunID, "id", msg.ControlResponse.RequestID)
		}
	case msg.ControlCancelRequest != nil:
		r.cancelApprovalByID(msg.ControlCancelRequest.RequestID)
	case msg.System != nil:
		r.observeMode(msg.System.PermissionMode)
	case msg.Result != nil && r.req.KeepAlive:
		// A live run stays open: the loop decides what comes next.
		r.turnEnded()
		select {
		case <-r.resultSeen:
		default:
			close(r.resultSeen)
		}
	case msg.Result != nil:
		if notice := r.agg.limitNotice; notice != "" {
			r.obs.Event(Event{Kind: EventLimitNotice, RunID: r.req.RunID, Time: time.Now(), Text: notice})
		}
		// One prompt per run: closing stdin after the result lets the CLI
		// exit. Never earlier: hooks and approvals need stdin until here.
		r.peer.close()
		select {
		case <-r.resultSeen:
		default:
			close(r.resultSeen)
		}
	}
}

// serve answers a control request. Approvals may wait minutes, so every
// request is answered on its own goroutine; the reader never blocks on one.
func (r *run) serve(cr *streamjson.ControlRequest) {
	r.handlers.Add(1)
	// Counted before the reader goes on, so the watchdog never sees the
	// CLI idle while it waits for this answer.
	r.act.serving(1)
	go func() {
		defer r.handlers.Done()
		defer r.act.serving(-1)
		var err error
		switch req := cr.Request.(type) {
		case *streamjson.CanUseToolRequest:
			if deny, ok := r.planModeDenial(req); ok {
				err = r.peer.respond(cr.RequestID, deny)
				break
			}
			err = r.peer.respond(cr.RequestID, r.decide(r.approvalCtx, cr.RequestID, req))
		case *streamjson.HookCallbackRequest:
			err = r.peer.respond(cr.RequestID, r.hookAnswer(r.approvalCtx, req))
		default:
			err = r.peer.respondError(cr.RequestID, "unsupported control request "+cr.Subtype())
		}
		if err != nil && !errors.Is(err, errPeerClosed) {
			r.e.log.Warn("cannot answer the CLI", "run_id", r.req.RunID, "err", err)
		}
	}()
}

// readStderr reports stderr lines, ANSI stripped, and keeps the tail.
func (r *run) readStderr(f io.Reader) {
	lr := ndjson.NewReader(f, 1<<20)
	for {
		line, err := lr.Next()
		if line == nil && err != nil {
			return
		}
		text := stripANSI(string(line))
		if strings.TrimSpace(text) == "" {
			continue
		}
		r.stderr.add(text)
		r.obs.Event(Event{Kind: EventStderr, RunID: r.req.RunID, Time: time.Now(), Text: text})
	}
}
