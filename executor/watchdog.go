package executor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// The watchdog (CONTRACT §7) makes sure no run hangs: a turn that prints
// nothing for StallTimeout while no tool runs and the CLI waits for nothing
// of ours is interrupted, and killed StallGrace later if still running; a
// CLI that does not exit ExitGrace after its final result is killed.
//
// Its timers belong to the run loop (supervise); the stdout reader only
// records activity, which the loop reads when a timer fires. No goroutine
// sleeps for it.
const (
	defaultStallTimeout = 5 * time.Minute
	defaultStallGrace   = 30 * time.Second
	defaultExitGrace    = 10 * time.Second
)

// activity is what the watchdog needs to know about the CLI's output,
// written by the stdout reader and the control-request handlers, read by
// the loop.
type activity struct {
	mu      sync.Mutex
	last    time.Time                  // the last stdout line, turn start or answer we gave
	tools   map[string]json.RawMessage // tool_use IDs whose tool_result has not been seen; a plan's input
	waiting int                        // control requests of the CLI we have not answered yet
}

// mark records that the CLI has reason to be busy from now on: a line it
// printed, a turn we started, an answer we gave.
func (a *activity) mark() {
	a.mu.Lock()
	a.last = time.Now()
	a.mu.Unlock()
}

// saw records one stdout line: tool calls starting and ending. Several may
// run at once (parallel tool calls, sub-agents), so they are tracked by ID.
func (a *activity) saw(msg streamjson.Message) {
	// Most lines carry neither block: skip decoding them.
	var uses []streamjson.ToolUse
	var results []streamjson.ToolResult
	switch {
	case msg.Assistant != nil && bytes.Contains(msg.Raw, []byte(`"tool_use"`)):
		uses = msg.Assistant.ToolUses()
	case msg.User != nil && bytes.Contains(msg.Raw, []byte(`"tool_result"`)):
		results = msg.User.ToolResults()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.last = time.Now()
	for _, u := range uses {
		if a.tools == nil {
			a.tools = map[string]json.RawMessage{}
		}
		var input json.RawMessage
		if u.Name == toolExitPlanMode {
			// can_use_tool sends the plan's input empty; the plan is
			// shown from here.
			input = u.Input
		}
		a.tools[u.ID] = input
	}
	for _, r := range results {
		delete(a.tools, r.ToolUseID)
	}
	if msg.Result != nil {
		// The turn is over: a tool it interrupted gets no tool_result.
		clear(a.tools)
	}
}

// planInput is the model's input to the running ExitPlanMode call id.
func (a *activity) planInput(id string) json.RawMessage {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.tools[id]
}

// serving counts a control request of the CLI in (+1) or answered (-1):
// while we owe an answer, an approval say, the CLI's silence is ours.
func (a *activity) serving(delta int) {
	a.mu.Lock()
	a.waiting += delta
	if delta < 0 {
		a.last = time.Now()
	}
	a.mu.Unlock()
}

// quiet reports how long the CLI has been silent, and whether it is busy in
// a way that legitimately prints nothing.
func (a *activity) quiet(now time.Time) (silent time.Duration, busy bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return now.Sub(a.last), len(a.tools) > 0 || a.waiting > 0
}

// watchdog is the loop's side: its timers and what it decided. Only the
// goroutine running supervise touches it (and result, after it).
type watchdog struct {
	stall  *time.Timer
	stallC <-chan time.Time // nil until the first output, and while a stall is handled
	grace  *time.Timer
	graceC <-chan time.Time // armed from the interrupt of a stalled turn
	exit   *time.Timer
	exitC  <-chan time.Time // armed once the CLI should exit

	stalled     bool // a stall was declared and not cleared by the turn's end
	afterResult bool // the CLI was killed for not exiting after its result
}

func (w *watchdog) stop() {
	for _, t := range []*time.Timer{w.stall, w.grace, w.exit} {
		if t != nil {
			t.Stop()
		}
	}
}

// rearm sets timer t (created on first use) to fire after d.
func rearm(t **time.Timer, d time.Duration) <-chan time.Time {
	if *t == nil {
		*t = time.NewTimer(d)
	} else {
		(*t).Reset(d)
	}
	return (*t).C
}

// watchStalls starts the stall checks; called at the CLI's first output,
// before which the startup timeout is in charge.
func (r *run) watchStalls() {
	r.act.mark()
	r.wd.stallC = rearm(&r.wd.stall, r.e.opts.StallTimeout)
}

// onStallCheck runs when the stall timer fires: it declares a stall, or
// sets the timer for when the CLI's silence would reach StallTimeout.
func (r *run) onStallCheck() {
	timeout := r.e.opts.StallTimeout
	silent, busy := r.act.quiet(time.Now())
	switch {
	case !r.turnRunning() || r.lv.closed || busy:
		// Nothing to watch now; whatever ends the wait (a turn, a
		// tool_result, our answer) marks activity, so a full period from
		// the next check is never too late by more than one period.
		r.wd.stallC = rearm(&r.wd.stall, timeout)
		return
	case silent < timeout:
		r.wd.stallC = rearm(&r.wd.stall, timeout-silent)
		return
	}
	r.wd.stalled = true
	r.wd.stallC = nil
	reason := "no output for " + timeout.String()
	r.e.log.Warn("the Claude CLI stalled; interrupting its turn", "run_id", r.req.RunID, "stall_timeout", timeout)
	r.obs.Event(Event{Kind: EventStalled, RunID: r.req.RunID, Time: time.Now(), Text: reason, Seconds: timeout.Seconds()})
	// The turn ends failed, saying why in the watchdog's words rather than
	// the CLI's "error during execution".
	r.noteStop(true, wire.ByWatchdog, fmt.Sprintf("no output from the Claude CLI for %s, so the watchdog interrupted the turn "+
		"(if turns may legitimately stay silent this long, raise claude.stall_timeout)", timeout), true)
	r.w.add(writeOp{
		write: func() error {
			_, _, err := r.peer.send(streamjson.InterruptRequest{})
			return err
		},
		done: func(err error) {
			if err != nil {
				r.e.log.Debug("interrupt of a stalled turn not sent", "run_id", r.req.RunID, "err", err)
			}
		},
	})
	r.wd.graceC = rearm(&r.wd.grace, r.e.opts.StallGrace)
}

// onStallGrace runs StallGrace after a stall's interrupt. It reports
// whether the run must be killed: its turn is still running.
func (r *run) onStallGrace() bool {
	r.wd.graceC = nil
	if r.turnRunning() && !r.lv.closed {
		r.e.log.Warn("the Claude CLI still stalled after the interrupt; stopping the run", "run_id", r.req.RunID,
			"stall_grace", r.e.opts.StallGrace)
		return true
	}
	return false
}

// stallCleared is a keep-alive turn's end: a stalled turn the interrupt
// ended leaves the run alive for its next message.
func (r *run) stallCleared() {
	if !r.wd.stalled {
		return
	}
	r.wd.stalled = false
	r.wd.graceC = nil
	if r.wd.grace != nil {
		r.wd.grace.Stop()
	}
	r.wd.stallC = rearm(&r.wd.stall, r.e.opts.StallTimeout)
}

// expectExit starts the exit guard: the CLI has printed its final result
// (one-shot) or had its stdin closed (keep-alive) and should exit now.
func (r *run) expectExit() {
	if r.wd.exitC == nil {
		r.wd.exitC = rearm(&r.wd.exit, r.e.opts.ExitGrace)
	}
}

// onExitGrace kills a CLI that did not exit after its result.
func (r *run) onExitGrace(exited <-chan *os.ProcessState) outcome {
	r.e.log.Warn("the Claude CLI did not exit after its result; stopping it", "run_id", r.req.RunID, "exit_grace", r.e.opts.ExitGrace)
	r.wd.afterResult = true
	return outcome{state: r.kill(exited, r.e.opts.SignalGap)}
}

// stalledResult is the end of a run the watchdog stopped, or whose turn it
// had to interrupt: failed, whatever the CLI reported after the interrupt.
func (r *run) stalledResult(res *Result) (*Result, error) {
	err := fmt.Errorf("%w: no output from the Claude CLI for %s", ErrStalled, r.e.opts.StallTimeout)
	res.Status, res.ExitCode, res.Reason = StatusFailed, 1, err.Error()
	res.Stderr = strings.TrimSpace(err.Error() + "; the run was stopped " +
		"(if turns may legitimately stay silent this long, raise claude.stall_timeout)\n" + res.StderrTail)
	return res, err
}

// watchdogResult applies what the watchdog did to the run's Result.
func (r *run) watchdogResult(o outcome, res *Result, err error) (*Result, error) {
	switch {
	case o.cancelled || o.timedOut:
		return res, err
	case r.wd.stalled:
		return r.stalledResult(res)
	case r.wd.afterResult && res.Reason == "":
		res.Reason = fmt.Sprintf("the Claude CLI did not exit within %s after its result and was stopped; its result stands", r.e.opts.ExitGrace)
	}
	return res, err
}
