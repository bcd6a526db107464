package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
	"github.com/claude-relay/claude-relay/internal/testkit/tmux"
)

// ttyApproval is `claude-relay run` on a tmux terminal, answered by a test.
type ttyApproval struct {
	*tmux.Session
	t        *testing.T
	cwd      string
	exitFile string
}

func startTTYRun(t *testing.T, cli *realcli.CLI, api *mockapi.Server, cwd string, env []string, args ...string) *ttyApproval {
	t.Helper()
	tmux.Require(t)
	s, exitFile := ttyRunEnv(t, cli, api, cwd, env, args...)
	return &ttyApproval{Session: s, t: t, cwd: cwd, exitFile: exitFile}
}

// waitScreen waits until the screen shows want.
func (r *ttyApproval) waitScreen(want string) {
	r.t.Helper()
	if !r.WaitFor(extTimeout, func(scr string) bool { return strings.Contains(scr, want) }) {
		r.Fail("the screen never showed %q", want)
	}
}

// answer types a line.
func (r *ttyApproval) answer(s string) {
	r.Keys("-l", s)
	r.Keys("Enter")
}

func (r *ttyApproval) exit() string { return waitExit(r.Session, r.exitFile) }

// `run --approvals` on a real terminal asks with the whole command, not the
// model's description of it, and runs the tool on y.
func TestRunApprovalOnTTYShowsTheWholeCommand(t *testing.T) {
	cli := realcli.RealCLI(t)
	command := "echo harmless-looking-prefix " + strings.Repeat("padding-", 30) + "end && echo ran-it > approved.txt"
	api := mockapi.New(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": command, "description": "Run echo harmless-looking-prefix"}),
		mockapi.TextTurn("tty done"),
	})
	r := startTTYRun(t, cli, api, trustedDir(t, cli), nil, "--approvals", "--max-turns=4", "run it")
	r.waitScreen("Allow Bash? [y]es / [a]lways / [e]dit / [n]o")
	scr := strings.ReplaceAll(r.Screen(), "\n", "")
	if !strings.Contains(scr, "? $ "+command+" — Run echo harmless-looking-prefix") {
		r.Fail("the question does not show the whole command")
	}
	r.answer("y")
	if got := r.exit(); got != "exit=0" {
		r.Fail("run ended with %s", got)
	}
	if !strings.Contains(r.Screen(), "tty done") {
		r.Fail("no answer on the screen")
	}
	if b, err := os.ReadFile(filepath.Join(r.cwd, "approved.txt")); err != nil || strings.TrimSpace(string(b)) != "ran-it" {
		t.Errorf("the approved command did not run: %v %q", err, b)
	}
}

// [e]dit opens $EDITOR on the input; the edited command is what runs.
func TestRunApprovalEditOnTTY(t *testing.T) {
	cli := realcli.RealCLI(t)
	api := mockapi.New(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo original > out.txt", "description": "Write it"}),
		mockapi.TextTurn("edited done"),
	})
	editor := filepath.Join(t.TempDir(), "editor.sh")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\nsed -i 's/original/edited-by-user/' \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := startTTYRun(t, cli, api, trustedDir(t, cli), []string{"EDITOR=" + editor}, "--approvals", "--max-turns=4", "write it")
	r.waitScreen("[e]dit")
	r.answer("e")
	r.waitScreen("will run: $ echo edited-by-user > out.txt")
	if got := r.exit(); got != "exit=0" {
		r.Fail("run ended with %s", got)
	}
	if b, err := os.ReadFile(filepath.Join(r.cwd, "out.txt")); err != nil || strings.TrimSpace(string(b)) != "edited-by-user" {
		t.Errorf("out.txt = %q, %v; want the edited command's output", b, err)
	}
}

// [a]lways: the same command runs again without a second question.
func TestRunApprovalAlwaysOnTTY(t *testing.T) {
	cli := realcli.RealCLI(t)
	api := mockapi.New(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "npm test", "description": "Test"}),
		mockapi.ToolTurn("Bash", map[string]any{"command": "npm test", "description": "Test again"}),
		mockapi.TextTurn("always done"),
	})
	cwd := trustedDir(t, cli)
	if err := os.WriteFile(filepath.Join(cwd, "package.json"), []byte(`{"name":"t","version":"1.0.0","scripts":{"test":"echo tested-ok"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := startTTYRun(t, cli, api, cwd, nil, "--approvals", "--max-turns=6", "test twice")
	r.waitScreen("[a]lways")
	r.answer("a")
	if got := r.exit(); got != "exit=0" {
		r.Fail("run ended with %s", got)
	}
	if n := strings.Count(r.Screen(), "Allow Bash?"); n != 1 {
		r.Fail("asked %d times", n)
	}
	results := api.ToolResults()
	if len(results) != 2 || !strings.Contains(results[1].Content, "tested-ok") {
		t.Errorf("tool results %+v", results)
	}
}

// A plan asks on the terminal without --approvals: keep planning with a
// reason, then accept edits.
func TestRunPlanApprovalOnTTY(t *testing.T) {
	cli := realcli.RealCLI(t)
	cwd := trustedDir(t, cli)
	api := mockapi.New(t, mockapi.Script{
		mockapi.ToolTurn("ExitPlanMode", map[string]any{"plan": "Write out.txt"}),
		mockapi.ToolTurn("ExitPlanMode", map[string]any{"plan": "Test first, then write out.txt"}),
		mockapi.ToolTurn("Write", map[string]any{"file_path": filepath.Join(cwd, "out.txt"), "content": "planned\n"}),
		mockapi.TextTurn("plan done"),
	})
	r := startTTYRun(t, cli, api, cwd, nil, "--permission-mode=plan", "--max-turns=6", "plan it")
	r.waitScreen("Approve the plan? [a]ccept edits / [d]efault: ask before each edit / [k]eep planning")
	if !strings.Contains(r.Screen(), "Plan: Write out.txt") {
		r.Fail("the plan is not shown")
	}
	r.answer("k")
	r.waitScreen("What should change?")
	r.answer("add a test step")
	r.waitScreen("Plan: Test first, then write out.txt")
	r.answer("a")
	if got := r.exit(); got != "exit=0" {
		r.Fail("run ended with %s", got)
	}
	if _, err := os.Stat(filepath.Join(cwd, "out.txt")); err != nil {
		t.Errorf("the write after the accepted plan: %v", err)
	}
	if results := api.ToolResults(); len(results) == 0 || !strings.Contains(results[0].Content, "add a test step") {
		t.Errorf("the model did not hear why: %+v", results)
	}
}

// The model's question is asked on the terminal, options numbered; the
// answer reaches the model.
func TestRunQuestionOnTTY(t *testing.T) {
	cli := realcli.RealCLI(t)
	api := mockapi.New(t, mockapi.Script{
		mockapi.ToolTurn("AskUserQuestion", map[string]any{"questions": []any{map[string]any{
			"question": "Which color?", "header": "Color", "multiSelect": false,
			"options": []any{map[string]any{"label": "Red", "description": "warm"}, map[string]any{"label": "Blue", "description": "cool"}},
		}}}),
		mockapi.TextTurn("question done"),
	})
	r := startTTYRun(t, cli, api, trustedDir(t, cli), nil, "--max-turns=4", "ask me")
	r.waitScreen("2. Blue — cool")
	r.answer("2")
	if got := r.exit(); got != "exit=0" {
		r.Fail("run ended with %s", got)
	}
	if results := api.ToolResults(); len(results) != 1 || !strings.Contains(results[0].Content, `"Which color?"="Blue"`) {
		t.Errorf("tool results %+v", results)
	}
}
