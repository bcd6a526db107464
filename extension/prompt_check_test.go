package extension

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/executor"
)

// A prompt that cannot start is refused with an error naming the request,
// before any run_started and before anything is spooled.
func TestPromptRefusedBeforeStart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, prompt string
		opts         PromptOptions
		cliError     string
		code, msg    string
	}{
		{"missing cwd", "x", PromptOptions{RunOptions: executor.RunOptions{Cwd: "/nonexistent/dir"}}, "", CodeBadValue, `cwd "/nonexistent/dir": no such file or directory`},
		{"cwd is a file", "x", PromptOptions{RunOptions: executor.RunOptions{Cwd: file}}, "", CodeBadValue, "is not a directory"},
		{"fork without resume", "x", PromptOptions{RunOptions: executor.RunOptions{Fork: true}}, "", CodeBadValue, "fork needs resume"},
		{"no CLI", "x", PromptOptions{}, "no claude in PATH", CodeCLINotFound, "cannot run the Claude CLI: no claude in PATH (`claude-relay doctor`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(o *setup, _ *fakeForwarder) { o.CLIError = tt.cliError })
			h.prompt("p", tt.prompt, tt.opts)
			ev := h.waitError(tt.code, "req-p")
			if !strings.Contains(ev.Message, tt.msg) {
				t.Errorf("message %q, want it to contain %q", ev.Message, tt.msg)
			}
			h.cmd(Command{Action: ActionShutdown})
			if err := h.serveResult(); err != nil {
				t.Fatal(err)
			}
			for _, e := range h.events() {
				if e.Event == EventRunStarted {
					t.Errorf("run_started for a refused prompt: %+v", e)
				}
			}
			if n := len(h.fwd.Events()); n != 0 {
				t.Errorf("%d events spooled for a refused prompt", n)
			}
		})
	}
}

// A blank prompt needs no CLI: it still completes at once (seed 002).
func TestBlankPromptNeedsNoCLI(t *testing.T) {
	h := newHarness(t, func(o *setup, _ *fakeForwarder) { o.CLIError = "no claude in PATH" })
	h.prompt("blank", "  ", PromptOptions{})
	if end := h.waitEvent(EventRunCompleted, "blank"); end.Result.ExitCode != 0 {
		t.Errorf("blank prompt: %+v", end.Result)
	}
}

// approval_requested carries the whole command as its title; the model's
// description is only the message.
func TestApprovalTitleIsTheWholeCommand(t *testing.T) {
	h := newHarness(t, nil)
	h.prompt("t", "approve Bash", PromptOptions{RunOptions: executor.RunOptions{Approvals: true}})
	req := h.waitEvent(EventApprovalRequested, "t")
	if req.Title != "$ ls" || req.Message != "lists files" {
		t.Errorf("approval_requested title %q message %q", req.Title, req.Message)
	}
}

// stallExecutor reports a stall, then fails the run as stalled, as the
// executor's watchdog does.
type stallExecutor struct{}

func (stallExecutor) Run(_ context.Context, req executor.Request, obs executor.Observer, _ executor.Approver) (*executor.Result, error) {
	obs.Event(executor.Event{Kind: executor.EventStalled, RunID: req.RunID, Text: "no output for 5m0s", Seconds: 300})
	reason := "stalled: no output from the Claude CLI for 5m0s"
	return &executor.Result{Status: executor.StatusFailed, Reason: reason,
		CommandResult: executor.CommandResult{Stderr: reason, ExitCode: 1}}, executor.ErrStalled
}

func TestStalledThenFailed(t *testing.T) {
	h := newHarness(t, func(o *setup, _ *fakeForwarder) { o.Core.Executor = stallExecutor{} })
	h.prompt("st", "x", PromptOptions{})
	st := h.waitEvent(EventStalled, "st")
	if st.Reason != "no output for 5m0s" || st.Seconds != 300 {
		t.Errorf("stalled %+v", st)
	}
	if end := h.waitEvent(EventRunFailed, "st"); !strings.HasPrefix(end.Reason, "stalled") {
		t.Errorf("run_failed reason %q", end.Reason)
	}
}
