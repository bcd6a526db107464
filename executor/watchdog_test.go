package executor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/proc"
	"github.com/claude-relay/claude-relay/internal/testkit/fakecli"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// watchRun runs the fake CLI in mode with fast timings and tune's watchdog
// options.
func watchRun(t *testing.T, mode fakecli.Mode, req Request, tune func(*Options), opts ...fakecli.Option) (*Result, *recorder, error) {
	t.Helper()
	path, env := fakecli.Command(mode, opts...)
	o := Options{
		CLIPath: path, BaseEnv: append(os.Environ(), env...),
		StartupTimeout: 5 * time.Second, InterruptGrace: 300 * time.Millisecond, SignalGap: 150 * time.Millisecond,
	}
	tune(&o)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if req.Prompt == "" {
		req.Prompt = "hello"
	}
	rec := &recorder{}
	res, err := New(o).Run(ctx, req, rec, nil)
	return res, rec, err
}

func TestExitGuardStopsACLIThatOutlivesItsResult(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	res, _, err := watchRun(t, fakecli.ModeNoExit, Request{}, func(o *Options) { o.ExitGrace = 300 * time.Millisecond },
		fakecli.WithPidFile(pids))
	if err != nil || res.Status != StatusCompleted || res.ExitCode != 0 || res.Stdout != fakecli.ReplyText {
		t.Fatalf("the result stands: %+v %v", res, err)
	}
	if !strings.Contains(res.Reason, "did not exit within 300ms after its result") {
		t.Errorf("reason %q should say the CLI was stopped after its result", res.Reason)
	}
	if res.CLIExitCode != -1 {
		t.Errorf("CLI exit code %d, want -1 (killed)", res.CLIExitCode)
	}
	assertGone(t, pids)
}

func TestExitGuardKeepAliveAfterStdinClosed(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	in := make(chan Input)
	close(in) // the run ends after its first turn
	res, rec, err := watchRun(t, fakecli.ModeNoExit, Request{RunOptions: RunOptions{KeepAlive: true}, Inputs: in},
		func(o *Options) { o.ExitGrace = 300 * time.Millisecond }, fakecli.WithPidFile(pids))
	if err != nil || res.Status != StatusCompleted || len(rec.kinds(EventTurnCompleted)) != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	if !strings.Contains(res.Reason, "did not exit") {
		t.Errorf("reason %q", res.Reason)
	}
	assertGone(t, pids)
}

func TestStallInterruptsThenKills(t *testing.T) {
	// ModeIgnoreSignals answers the interrupt but its turn never ends, and
	// it ignores SIGINT and SIGTERM: only SIGKILL stops it.
	pids := filepath.Join(t.TempDir(), "pids")
	res, rec, err := watchRun(t, fakecli.ModeIgnoreSignals, Request{}, func(o *Options) {
		o.StallTimeout, o.StallGrace = 300*time.Millisecond, 300*time.Millisecond
	}, fakecli.WithPidFile(pids))
	if !errors.Is(err, ErrStalled) || res.Status != StatusFailed || res.ExitCode != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	if res.Reason != "stalled: no output from the Claude CLI for 300ms" {
		t.Errorf("reason %q", res.Reason)
	}
	if !strings.Contains(res.Stderr, "claude.stall_timeout") {
		t.Errorf("stderr %q should say what to do", res.Stderr)
	}
	stalled := rec.kinds(EventStalled)
	if len(stalled) != 1 || stalled[0].Text != "no output for 300ms" || stalled[0].Seconds != 0.3 {
		t.Fatalf("stalled events %+v", stalled)
	}
	// The interrupt was sent after the event: its answer is the last line.
	var answered bool
	for _, e := range rec.events {
		if e.Kind == EventLine && e.Message.ControlResponse != nil && e.Time.After(stalled[0].Time) {
			answered = true
		}
	}
	if !answered {
		t.Error("no interrupt answered after EventStalled")
	}
	assertGone(t, pids)
}

func TestStallAnsweredByTheCLIStillFailsAOneShotRun(t *testing.T) {
	// ModeSlow ends its turn at the interrupt with error_during_execution
	// and exits: the run failed because it stalled, not for that error.
	res, rec, err := watchRun(t, fakecli.ModeSlow, Request{}, func(o *Options) {
		o.StallTimeout = 300 * time.Millisecond
	}, fakecli.WithLineDelay(time.Minute))
	if !errors.Is(err, ErrStalled) || res.Status != StatusFailed || !strings.HasPrefix(res.Reason, "stalled: ") {
		t.Fatalf("%+v %v", res, err)
	}
	if len(rec.kinds(EventStalled)) != 1 || res.CLIExitCode != 0 {
		t.Fatalf("stalled %d, exit %d: the CLI should have ended on the interrupt", len(rec.kinds(EventStalled)), res.CLIExitCode)
	}
}

func TestStallOfALiveTurnLeavesTheRunAlive(t *testing.T) {
	in := make(chan Input)
	close(in) // end after the (interrupted) turn
	res, rec, err := watchRun(t, fakecli.ModeSlow, Request{RunOptions: RunOptions{KeepAlive: true}, Inputs: in}, func(o *Options) {
		o.StallTimeout = 300 * time.Millisecond
	}, fakecli.WithLineDelay(time.Minute))
	if err != nil || res.Status != StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	turns := rec.kinds(EventTurnCompleted)
	if len(rec.kinds(EventStalled)) != 1 || len(turns) != 1 || turns[0].TurnResult.Subtype != "error_during_execution" {
		t.Fatalf("stalled %d, turns %+v", len(rec.kinds(EventStalled)), turns)
	}
	// The turn failed in the watchdog's words, not the CLI's.
	if tr := turns[0].TurnResult; tr.Status != StatusFailed || tr.StoppedBy != wire.ByWatchdog ||
		!strings.HasPrefix(tr.Reason, "no output from the Claude CLI for 300ms, so the watchdog interrupted the turn") {
		t.Errorf("the stalled turn %+v", tr)
	}
}

func TestHealthyRunsAreNotStalled(t *testing.T) {
	// Lines 200ms apart, well within the timeout.
	res, rec, err := watchRun(t, fakecli.ModeSlow, Request{}, func(o *Options) {
		o.StallTimeout = 2 * time.Second
	}, fakecli.WithLineDelay(200*time.Millisecond))
	if err != nil || res.Status != StatusCompleted || len(rec.kinds(EventStalled)) != 0 {
		t.Fatalf("%+v %v", res, err)
	}
}

// processGone waits for pid to be gone.
func processGone(t *testing.T, pid int) {
	t.Helper()
	if !poll.Within(10*time.Second, func() bool {
		p, err := proc.Lookup(pid)
		return err != nil || !proc.Alive(p)
	}) {
		t.Fatalf("the Claude CLI (pid %d) outlived the run", pid)
	}
}

func TestRealStalledStreamFailsTheRun(t *testing.T) {
	// The API starts the reply and then sends nothing: the CLI prints
	// nothing either.
	turn := mockapi.TextTurn("this reply never comes")
	turn.DeltaDelay = time.Hour
	env := newRealEnv(t, mockapi.Script{turn}, func(o *Options) {
		o.StallTimeout, o.StallGrace = 2*time.Second, 2*time.Second
	})
	res, rec := env.run(t, Request{Prompt: "say something"}, nil)
	if res.Status != StatusFailed || res.ExitCode != 1 || res.Reason != "stalled: no output from the Claude CLI for 2s" {
		t.Fatalf("result %+v", res)
	}
	if s := rec.kinds(EventStalled); len(s) != 1 || s[0].Seconds != 2 {
		t.Fatalf("stalled events %+v", s)
	}
	started := rec.kinds(EventStarted)
	if len(started) != 1 {
		t.Fatalf("started events %+v", started)
	}
	processGone(t, started[0].PID)
}

func TestRealLongToolIsNotAStall(t *testing.T) {
	env := newRealEnv(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo start && sleep 5", "description": "Wait a while"}),
		mockapi.TextTurn("Waited."),
	}, func(o *Options) { o.StallTimeout = 2 * time.Second })
	res, rec := env.run(t, Request{Prompt: "wait"}, nil)
	if res.Status != StatusCompleted || res.Stdout != "Waited." || len(rec.kinds(EventStalled)) != 0 {
		t.Fatalf("a running tool is not a stall: %+v, stalled %+v", res, rec.kinds(EventStalled))
	}
}
