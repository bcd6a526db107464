package executor

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/claude-relay/claude-relay/internal/proc"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// defaultIdleTimeout ends a keep-alive run that waits this long for its next
// message (CONTRACT §7).
const defaultIdleTimeout = 30 * time.Minute

// liveLoop is the run loop's view of a run's turns: which one runs, the sends
// waiting behind it, and whether the run is ending. Only the goroutine that
// runs supervise touches it (and result, once that goroutine is done).
//
// A keep-alive run writes one user message at a time and the next only
// after the CLI's result for it, so every result ends exactly the turn we
// started: the CLI's own queue is never used, and the turns we report are
// the turns that ran.
type liveLoop struct {
	inputs  <-chan Input
	busy    bool     // a turn runs: a user message was written and its result not yet seen
	started int      // user messages written (turns started), the prompt included
	queue   []queued // sends waiting for the running turn to end
	ending  bool     // end asked for (InputEnd, idle, Inputs closed): close stdin once the queue is done
	closed  bool     // we closed stdin (or asked the writer to)
	idle    *time.Timer
	idleC   <-chan time.Time // nil unless the idle timer is armed
}

// queued is a send waiting for its turn: its user message line and the
// interaction its turn belongs to.
type queued struct {
	line        []byte
	interaction string
}

// turnSignal carries turn ends from the stdout reader to the run loop. The
// reader only counts and nudges: it never waits for the loop.
type turnSignal struct {
	mu    sync.Mutex
	ended int
	c     chan struct{} // capacity 1: one nudge covers any number of ends
}

func newTurnSignal() *turnSignal { return &turnSignal{c: make(chan struct{}, 1)} }

func (s *turnSignal) signal() {
	s.mu.Lock()
	s.ended++
	s.mu.Unlock()
	select {
	case s.c <- struct{}{}:
	default:
	}
}

func (s *turnSignal) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended
}

// answer tells an Input's sender how it went. The sender buffers Done; a
// full or missing channel drops the answer rather than stall the run.
func answer(done chan<- error, err error) {
	if done == nil {
		return
	}
	select {
	case done <- err:
	default:
	}
}

// onInput acts on one Input (ok false: Inputs was closed).
func (r *run) onInput(in Input, ok bool) {
	if !ok {
		// Nobody can send again: waiting for idle_timeout would only keep
		// the CLI alive for nothing.
		r.lv.inputs = nil
		if r.req.KeepAlive {
			r.endLive()
		}
		return
	}
	switch in.Kind {
	case InputSend:
		r.send(in)
	case InputInterrupt:
		r.interrupt(in)
	case InputSetMode:
		r.setMode(in)
	case InputSetModel:
		r.setModel(in)
	case InputEnd:
		if r.req.KeepAlive {
			r.endLive()
		}
		// A one-shot run ends after its turn anyway.
		answer(in.Done, nil)
	default:
		answer(in.Done, fmt.Errorf("%w: unknown input kind %d for run %q", ErrBadInput, in.Kind, r.req.RunID))
	}
}

// send writes a follow-up at once when the run is idle, or queues it behind
// the running turn.
func (r *run) send(in Input) {
	switch {
	case !r.req.KeepAlive:
		answer(in.Done, fmt.Errorf("%w: run %q takes no follow-ups; start it with keep_alive to send more messages", ErrNotLive, r.req.RunID))
		return
	case r.lv.ending || r.lv.closed:
		answer(in.Done, fmt.Errorf("%w: run %q takes no more messages after end; start a new run (resume its conversation) to go on", ErrRunEnding, r.req.RunID))
		return
	}
	line, err := streamjson.UserMessageContent(in.Content)
	if err != nil {
		answer(in.Done, fmt.Errorf("%w: %w", ErrBadInput, err))
		return
	}
	if r.lv.busy {
		r.lv.queue = append(r.lv.queue, queued{line: line, interaction: in.Interaction})
		answer(in.Done, nil)
		return
	}
	r.startTurn(queued{line: line, interaction: in.Interaction}, in.Done)
}

// startTurn writes a user message: the CLI starts a turn at once. The run's
// record names the turn's interaction from now on, so a helper start after
// a crash ends the turn that ran.
func (r *run) startTurn(q queued, done chan<- error) {
	if q.interaction != "" && r.spool != (proc.SpoolKey{}) && q.interaction != r.spool.InteractionID {
		r.spool.InteractionID = q.interaction
		r.register()
	}
	r.lv.busy = true
	r.lv.started++
	r.stopIdle()
	r.obs.Event(Event{Kind: EventTurnStarted, RunID: r.req.RunID, Time: time.Now(), Interaction: q.interaction})
	r.act.mark() // the turn's silence counts from its start
	r.w.add(writeOp{
		write: func() error { return r.peer.writeLine(q.line) },
		done: func(err error) {
			if err != nil {
				err = fmt.Errorf("%w: the message was not delivered to the Claude CLI: %w", ErrRunEnding, err)
			}
			answer(done, err)
		},
	})
}

// turnRunning reports whether the CLI is in a turn, as far as the loop knows.
func (r *run) turnRunning() bool {
	if r.req.KeepAlive {
		return r.lv.busy
	}
	select {
	case <-r.resultSeen:
		return false
	default:
		return true
	}
}

// interrupt stops the running turn without stopping the run: the CLI ends the
// turn with a result (error_during_execution) and, in a keep-alive run,
// waits for the next message.
func (r *run) interrupt(in Input) {
	if in.DropQueued {
		for _, q := range r.lv.queue {
			r.obs.Event(Event{Kind: EventTurnDropped, RunID: r.req.RunID, Time: time.Now(), Interaction: q.interaction})
		}
		r.lv.queue = nil
	}
	if !r.turnRunning() || r.lv.closed {
		answer(in.Done, nil) // nothing runs: nothing to stop
		return
	}
	// An approval pending for the stopped turn is moot; its Approver is told
	// (ctx ends) and the CLI gets a denial it no longer waits for.
	r.cancelPendingApprovals()
	// The CLI ends the turn as an error during execution: it was stopped.
	r.noteStop(true, in.By, stoppedBy(in.By), false)
	r.w.add(writeOp{
		write: func() error {
			_, err := r.peer.call(streamjson.InterruptRequest{}, func(*streamjson.ControlResponse, error) {})
			return err
		},
		done: func(err error) {
			if err != nil {
				err = fmt.Errorf("%w: interrupt not delivered to the Claude CLI: %w", ErrRunEnding, err)
			}
			answer(in.Done, err)
		},
	})
}

// setMode asks the CLI for a permission mode; EventModeChanged and Done follow
// its answer.
func (r *run) setMode(in Input) {
	mode := in.Mode
	if mode == "" {
		answer(in.Done, fmt.Errorf("%w: set_mode needs a permission mode (%s)", ErrBadInput, streamjson.ModeList()))
		return
	}
	r.control(in.Done, streamjson.SetPermissionModeRequest{Mode: mode}, "permission mode "+string(mode), func() {
		r.modeConfirmed(mode)
	})
}

// setModel asks the CLI for another model for the next requests.
func (r *run) setModel(in Input) {
	what := "model " + in.Model
	if in.Model == "" {
		what = "the default model"
	}
	r.control(in.Done, streamjson.SetModelRequest{Model: in.Model}, what, nil)
}

// control sends a control request from the loop; Done gets nil when the CLI
// confirms (after ok runs), or an error naming what the CLI said.
func (r *run) control(done chan<- error, req any, what string, ok func()) {
	if r.lv.closed {
		answer(done, fmt.Errorf("%w: run %q is closing; %s not set", ErrRunEnding, r.req.RunID, what))
		return
	}
	r.w.add(writeOp{
		write: func() error {
			_, err := r.peer.call(req, func(resp *streamjson.ControlResponse, err error) {
				switch {
				case err != nil:
					answer(done, fmt.Errorf("%w (%s)", err, what))
				case resp.Subtype == streamjson.ResponseError:
					answer(done, fmt.Errorf("%w: %s: %s", ErrCLIRefused, what, resp.Error))
				default:
					if ok != nil {
						ok()
					}
					answer(done, nil)
				}
			})
			return err
		},
		done: func(err error) {
			if err != nil {
				answer(done, fmt.Errorf("%w: %s not delivered to the Claude CLI: %w", ErrRunEnding, what, err))
			}
		},
	})
}

// endLive ends a keep-alive run after the running turn and the queued sends.
func (r *run) endLive() {
	r.lv.ending = true
	r.closeWhenDone()
}

// closeWhenDone closes stdin once an ending run has nothing left to run: the
// CLI then exits.
func (r *run) closeWhenDone() {
	if r.lv.ending && !r.lv.busy && len(r.lv.queue) == 0 {
		r.closeStdin()
	}
}

// closeStdin closes the CLI's stdin after whatever the writer still holds.
func (r *run) closeStdin() {
	if r.lv.closed {
		return
	}
	r.lv.closed = true
	r.stopIdle()
	// No turn runs (a run closes stdin only between turns): EOF should
	// make the CLI exit.
	r.expectExit()
	r.w.add(writeOp{write: func() error { r.peer.close(); return nil }})
}

// onTurnsEnded moves a keep-alive run on after results: the next queued send,
// the end, or waiting (idle timer).
func (r *run) onTurnsEnded() {
	r.lv.busy = r.lv.started > r.turns.count()
	if r.lv.busy || r.lv.closed {
		return
	}
	r.stallCleared()
	if len(r.lv.queue) > 0 {
		next := r.lv.queue[0]
		r.lv.queue = r.lv.queue[1:]
		r.startTurn(next, nil)
		return
	}
	if r.lv.ending {
		r.closeStdin()
		return
	}
	r.armIdle()
}

// onIdle ends a keep-alive run that waited IdleTimeout for a message.
func (r *run) onIdle() {
	r.lv.idleC = nil
	if !r.lv.busy && len(r.lv.queue) == 0 {
		r.e.log.Info("live run idle; ending it", "run_id", r.req.RunID, "idle_timeout", r.idleTimeout())
		r.endLive()
	}
}

func (r *run) idleTimeout() time.Duration {
	if r.req.IdleTimeout > 0 {
		return r.req.IdleTimeout
	}
	return defaultIdleTimeout
}

func (r *run) armIdle() {
	if r.lv.idle == nil {
		r.lv.idle = time.NewTimer(r.idleTimeout())
	} else {
		r.lv.idle.Reset(r.idleTimeout())
	}
	r.lv.idleC = r.lv.idle.C
}

func (r *run) stopIdle() {
	if r.lv.idle != nil {
		r.lv.idle.Stop()
	}
	r.lv.idleC = nil
}

// turnEnded reports a keep-alive run's result as the end of one turn. It
// runs on the stdout reader, after the observer saw the result line.
func (r *run) turnEnded() {
	res := r.agg.endTurn()
	turn := r.agg.results
	if stop := r.takeStop(); stop.why != "" && res.Status == StatusFailed {
		// The CLI calls a stopped turn an error during execution; say what
		// happened, keeping what the CLI said in Stderr.
		res.Reason, res.StoppedBy = stop.why, stop.by
		res.Stderr = strings.TrimSpace(stop.why + "\n" + res.Stderr)
		if !stop.timedOut {
			res.Status, res.ExitCode = StatusInterrupted, 130
		}
	}
	if res.LimitNotice != "" {
		r.obs.Event(Event{Kind: EventLimitNotice, RunID: r.req.RunID, Time: time.Now(), Text: res.LimitNotice})
	}
	r.obs.Event(Event{Kind: EventTurnCompleted, RunID: r.req.RunID, Time: time.Now(), Turn: turn, TurnResult: res})
	r.turns.signal()
}

// stoppedBy says who stopped a turn, for people.
func stoppedBy(by wire.By) string {
	switch by {
	case "":
		return "the turn was stopped"
	case wire.ByTTY:
		return "stopped at the terminal"
	case wire.ByExtension:
		return "stopped from the editor"
	case wire.ByACP:
		return "stopped by the ACP client (session/cancel)"
	case wire.ByDashboard:
		return "stopped from the dashboard"
	}
	return "stopped by " + string(by)
}

// liveResult is a keep-alive run's end once it had at least one result: the
// turns summed, completed unless the CLI died in a turn or on its own.
func (r *run) liveResult(res *Result) (*Result, error) {
	if ended := r.turns.count(); r.lv.started > ended {
		res.Status, res.ExitCode = StatusFailed, res.CLIExitCode
		if res.ExitCode <= 0 {
			res.ExitCode = 1
		}
		res.Stderr = firstNonEmpty(res.StderrTail, ErrNoResult.Error())
		res.Reason = fmt.Sprintf("%s for turn %d (exit status %d)", ErrNoResult, ended+1, res.CLIExitCode)
		return res, fmt.Errorf("%w: turn %d, exit status %d", ErrNoResult, ended+1, res.CLIExitCode)
	}
	if !r.lv.closed && res.CLIExitCode != 0 {
		res.Status, res.ExitCode = StatusFailed, 1
		res.Reason = fmt.Sprintf("the Claude CLI exited with status %d while the live run waited for its next message", res.CLIExitCode)
		res.Stderr = strings.TrimSpace(res.Reason + "\n" + res.StderrTail)
		return res, fmt.Errorf("%w: exit status %d between turns", ErrNoResult, res.CLIExitCode)
	}
	res.Status, res.ExitCode = StatusCompleted, 0
	return res, nil
}

// setStartMode asks the CLI for the mode the run starts in; a refusal is
// logged (the run goes on in the CLI's own mode, which it reports).
func (r *run) setStartMode(mode streamjson.PermissionMode) error {
	_, err := r.peer.call(streamjson.SetPermissionModeRequest{Mode: mode}, func(resp *streamjson.ControlResponse, err error) {
		if err == nil && resp.Subtype == streamjson.ResponseError {
			r.e.log.Warn("the Claude CLI refused the permission mode", "run_id", r.req.RunID, "mode", mode, "error", resp.Error)
		}
	})
	return err
}

// infoParts joins the CLI's answers to initialize (its commands, models,
// account and so on: CONTRACT §7 session_info) and to ModesQuestion into
// one EventSessionInfo, sent when both are in. Both answers come on the
// stdout reader, or with an error when the CLI is gone.
type infoParts struct {
	r    *run
	held []byte // the first prompt, written once the starting mode is known
	// mode is the mode the run starts in: the request's, else the CLI's
	// configured one (set by initialized).
	mode streamjson.PermissionMode

	mu    sync.Mutex
	n     int
	info  json.RawMessage // nil: initialize failed, so no event
	modes []streamjson.PermissionMode
}

func (p *infoParts) initialized(resp *streamjson.ControlResponse, err error) {
	var info json.RawMessage
	switch {
	case err != nil:
	case resp.Subtype == streamjson.ResponseError:
		p.r.e.log.Warn("the Claude CLI refused initialize", "run_id", p.r.req.RunID, "error", resp.Error)
	case len(bytes.TrimSpace(resp.Response)) > 0:
		info = bytes.Clone(resp.Response)
	}
	if p.r.req.PermissionMode == "" {
		p.configuredMode(info)
	}
	// After the held prompt is queued: the verdict opens the gate to it.
	if p.r.checkBilling(info) {
		info = nil // a refused run has no session: no session_info
	}
	p.done(func() { p.info = info })
}

// configuredMode takes the mode the CLI's settings start it in, then lets
// the held prompt go. Settings that start it in bypassPermissions are
// overruled: they are files the agent's user can write, and running
// everything unasked must be asked for by the request itself.
func (p *infoParts) configuredMode(info json.RawMessage) {
	var r struct {
		Mode streamjson.PermissionMode `json:"current_permission_mode"`
	}
	_ = json.Unmarshal(info, &r)
	p.mode = cmp.Or(r.Mode, streamjson.PermissionModeDefault)
	if p.mode == streamjson.PermissionModeBypassPermissions {
		p.r.e.log.Warn("the Claude CLI's settings start it in bypassPermissions; starting in default instead (name the permission mode to run unasked)",
			"run_id", p.r.req.RunID)
		p.mode = streamjson.PermissionModeDefault
		p.r.w.add(writeOp{write: func() error { return p.r.setStartMode(p.mode) }})
	}
	if p.held != nil {
		first := p.held
		p.r.w.add(writeOp{write: func() error { return p.r.peer.writeLine(first) }})
	}
}

func (p *infoParts) modesAnswered(resp *streamjson.ControlResponse, err error) {
	if err != nil {
		resp = nil
	}
	p.done(func() { p.modes = streamjson.AcceptedModes(resp) })
}

func (p *infoParts) done(set func()) {
	p.mu.Lock()
	set()
	p.n++
	ready := p.n == 2 && p.info != nil
	p.mu.Unlock()
	if ready {
		p.r.obs.Event(Event{Kind: EventSessionInfo, RunID: p.r.req.RunID, Time: time.Now(), SessionInfo: p.info, Modes: p.modes, Mode: p.mode})
	}
}

// observeMode follows the permission mode the CLI reports (system init and
// status lines): a change it made itself, such as leaving plan mode after an
// approved plan, is reported like one we asked for.
func (r *run) observeMode(m streamjson.PermissionMode) {
	if m == "" {
		return
	}
	r.mu.Lock()
	prev := r.mode
	r.mode = m
	r.mu.Unlock()
	if prev != "" && prev != m {
		r.obs.Event(Event{Kind: EventModeChanged, RunID: r.req.RunID, Time: time.Now(), Mode: m})
	}
}

// modeConfirmed records a mode the CLI accepted through set_permission_mode.
func (r *run) modeConfirmed(m streamjson.PermissionMode) {
	r.mu.Lock()
	r.mode = m
	r.mu.Unlock()
	r.obs.Event(Event{Kind: EventModeChanged, RunID: r.req.RunID, Time: time.Now(), Mode: m})
}

func (r *run) currentMode() streamjson.PermissionMode {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mode
}

// planModeDenial keeps plan mode a plan when nobody approves tools: in plan
// mode the CLI asks can_use_tool for every tool that changes something
// (decision_reason_type "mode"), and allowing it, as a run without
// approvals does, would write the file anyway. With approvals the user
// decides. Leaving plan mode (ExitPlanMode) and asking the user a question
// stay allowed.
func (r *run) planModeDenial(c *streamjson.CanUseToolRequest) (streamjson.PermissionResult, bool) {
	if r.currentMode() != streamjson.PermissionModePlan || (r.asking.Load() && r.approver != nil) {
		return streamjson.PermissionResult{}, false
	}
	switch c.ToolName {
	case "ExitPlanMode", "AskUserQuestion":
		return streamjson.PermissionResult{}, false
	}
	return streamjson.PermissionDeny("Plan mode is on, so "+c.ToolName+" was not run: nothing may change yet. "+
		"Finish the plan, then call ExitPlanMode to propose it.", false), true
}

// cancelPendingApprovals ends the approvals the running turn waits for.
func (r *run) cancelPendingApprovals() {
	r.mu.Lock()
	cancels := make([]func(), 0, len(r.approvals))
	for _, cancel := range r.approvals {
		cancels = append(cancels, cancel)
	}
	r.mu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
}

// writeOp is one write to the CLI's stdin for the run loop; done (optional)
// gets the write's error, or ErrNoAnswer when the run ended first.
type writeOp struct {
	write func() error
	done  func(error)
}

func (op writeOp) finish(err error) {
	if op.done != nil {
		op.done(err)
	}
}

// stdinWriter writes the run loop's lines in order on a goroutine of its
// own: a CLI that stops reading its stdin (a full pipe) must never stall the
// loop, which has to stay free to cancel the run.
type stdinWriter struct {
	mu      sync.Mutex
	ops     []writeOp
	stopped bool
	held    bool          // hold: ops queue up unwritten until open
	wake    chan struct{} // capacity 1
	stop    chan struct{}
	done    chan struct{}
}

func newStdinWriter() *stdinWriter {
	return &stdinWriter{wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// add queues op; after shutdown it is answered with ErrNoAnswer at once.
func (w *stdinWriter) add(op writeOp) {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		op.finish(ErrNoAnswer)
		return
	}
	w.ops = append(w.ops, op)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// hold keeps every op queued, unwritten, until open (the billing guard).
func (w *stdinWriter) hold() {
	w.mu.Lock()
	w.held = true
	w.mu.Unlock()
}

// open writes what hold kept, and everything after it.
func (w *stdinWriter) open() {
	w.mu.Lock()
	w.held = false
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *stdinWriter) take() []writeOp {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.held && !w.stopped {
		return nil
	}
	ops := w.ops
	w.ops = nil
	return ops
}

// run writes until shutdown; what is left then is answered, not written.
func (w *stdinWriter) run() {
	defer close(w.done)
	for {
		select {
		case <-w.stop:
			w.mu.Lock()
			w.stopped = true
			w.mu.Unlock()
			for _, op := range w.take() {
				op.finish(ErrNoAnswer)
			}
			return
		case <-w.wake:
		}
		for _, op := range w.take() {
			select {
			case <-w.stop:
				op.finish(ErrNoAnswer)
			default:
				op.finish(op.write())
			}
		}
	}
}

// shutdown stops the writer and waits for it. A write stuck on a pipe that
// something other than the dead CLI still holds open is cut by closing
// stdin under it.
func (w *stdinWriter) shutdown(stdin *os.File, warn func()) {
	close(w.stop)
	select {
	case <-w.done:
	case <-time.After(2 * time.Second):
		warn()
		stdin.Close()
		<-w.done
	}
}
