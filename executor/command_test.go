package executor

import (
	"bytes"
	"errors"
	"log/slog"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/internal/launch"
	"github.com/claude-relay/claude-relay/internal/proc"
	"github.com/claude-relay/claude-relay/internal/streamjson"
)

func TestCommandArgs(t *testing.T) {
	e := New(Options{CLIPath: "/bin/claude", Model: "default-model", Args: []string{"--config-arg"}})
	tests := []struct {
		name string
		req  Request
		want []string
		not  []string
	}{
		{"defaults", Request{RunID: "r"}, []string{"-p", "--verbose", "--permission-prompt-tool", "--model=default-model", "--config-arg"}, []string{"--resume", "--continue"}},
		{"user values cannot become flags", Request{RunID: "r", Model: "--dangerously-skip-permissions", AppendSystemPrompt: "-x"},
			[]string{"--model=--dangerously-skip-permissions", "--append-system-prompt=-x"}, []string{"--dangerously-skip-permissions"}},
		{"resume and fork", Request{RunID: "r", Resume: "abc", Fork: true, MaxTurns: 4}, []string{"--resume=abc", "--fork-session", "--max-turns=4"}, nil},
		{"continue and extra args", Request{RunID: "r", Continue: true, AdditionalArgs: []string{"--add-dir=/x"}}, []string{"--continue", "--add-dir=/x"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, args, _, err := e.command(tt.req)
			if err != nil || prog != "/bin/claude" {
				t.Fatalf("%s %v", prog, err)
			}
			for _, w := range tt.want {
				if !slices.Contains(args, w) {
					t.Errorf("args %v lack %q", args, w)
				}
			}
			for _, n := range tt.not {
				if slices.ContainsFunc(args, func(a string) bool { return a == n || strings.HasPrefix(a, n+"=") }) {
					t.Errorf("args %v contain %q", args, n)
				}
			}
		})
	}
}

// TestCommandArgsOrder: protocol flags, then the session's, then claude.args,
// then the run's own arguments, which may thus override claude.args.
func TestCommandArgsOrder(t *testing.T) {
	e := New(Options{CLIPath: "/bin/claude", Model: "default-model", Args: []string{"--config-arg"}})
	_, args, _, err := e.command(Request{RunID: "r", Model: "m", Resume: "c-1", Fork: true, MaxTurns: 2,
		AppendSystemPrompt: "sp", AdditionalArgs: []string{"--run-arg"}})
	want := append(slices.Clone(protocolArgs), "--model=m", "--resume=c-1", "--fork-session", "--max-turns=2",
		"--append-system-prompt=sp", "--config-arg", "--run-arg")
	if err != nil || !slices.Equal(args, want) {
		t.Errorf("args %q, %v; want %q", args, err, want)
	}
}

// TestBaseCommandOverrideIsShellSplit: launch splits the override (its own
// tests cover the quoting); a bad one is a bad request, naming the command.
func TestBaseCommandOverrideIsShellSplit(t *testing.T) {
	e := New(Options{CLIPath: "/bin/claude", BaseCommand: `npx -y '@anthropic-ai/claude-code@2.1.330' "--a b"`})
	prog, args, _, err := e.command(Request{RunID: "r"})
	if err != nil || prog != "npx" || !slices.Equal(args[:4], []string{"-y", "@anthropic-ai/claude-code@2.1.330", "--a b", "-p"}) {
		t.Fatalf("%s %q %v", prog, args, err)
	}
	for bad, want := range map[string]error{`npx 'open`: launch.ErrUnterminatedQuote, `"x`: launch.ErrUnterminatedQuote, "   ": launch.ErrEmptyCommand} {
		_, _, _, err := New(Options{BaseCommand: bad}).command(Request{RunID: "r"})
		if !errors.Is(err, ErrBadRequest) || !errors.Is(err, want) {
			t.Errorf("base command %q: %v, want %v and %v", bad, err, ErrBadRequest, want)
		}
	}
	if _, _, _, err := New(Options{}).command(Request{}); !errors.Is(err, ErrBadRequest) || !errors.Is(err, launch.ErrNoCLI) {
		t.Errorf("no CLI: %v", err)
	}
}

func TestEnvPrecedence(t *testing.T) {
	var logs bytes.Buffer
	e := New(Options{
		BaseEnv:      []string{"A=base", "B=base", "C=base", "CLAUDECODE=1", "ANTHROPIC_API_KEY=k", "ANTHROPIC_BASE_URL=http://x"},
		Env:          map[string]string{"B=": "", "B": "config", "C": "config", "NUL\x00NAME": "x"},
		RemoveAPIKey: true,
		Logger:       slog.New(slog.NewTextHandler(&logs, nil)),
	})
	env := e.environ(Request{RunID: "run-1", Env: map[string]string{"C": "run", "R=UN": "x"}})
	get := func(k string) (string, bool) {
		for _, kv := range env {
			if name, v, _ := strings.Cut(kv, "="); name == k {
				return v, true
			}
		}
		return "", false
	}
	for k, want := range map[string]string{"A": "base", "B": "config", "C": "run", "ANTHROPIC_BASE_URL": "http://x", proc.MarkerEnv: "run-1"} {
		if v, _ := get(k); v != want {
			t.Errorf("%s = %q, want %q", k, v, want)
		}
	}
	for _, gone := range []string{"CLAUDECODE", "ANTHROPIC_API_KEY", "NUL", "R"} {
		if _, ok := get(gone); ok {
			t.Errorf("%s should be removed: %q", gone, env)
		}
	}
	// Dropped entries are said so, naming them and where they came from.
	for _, want := range []string{`claude.env entry \"B=\"`, `claude.env entry \"NUL\\x00NAME\"`, `the run's env entry \"R=UN\"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, &logs)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, req := range []Request{
		{PermissionMode: "yolo"}, {Fork: true}, {MaxTurns: -1}, {Cwd: "/nonexistent/dir"},
	} {
		if err := validate(req); !errors.Is(err, ErrBadRequest) {
			t.Errorf("validate(%+v) = %v", req, err)
		}
	}
	if permissionMode(Request{PermissionMode: streamjson.PermissionModeBypassPermissions}) != streamjson.PermissionModeDefault {
		t.Error("bypassPermissions must not be sent to the CLI (refused as root)")
	}
}

func TestStopGitCheck(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	r := &run{req: Request{Cwd: dir}}
	cb := &streamjson.HookCallbackRequest{CallbackID: callbackStopGit, Input: []byte(`{"hook_event_name":"Stop"}`)}
	if got := r.hookAnswer(t.Context(), cb).(map[string]any)["decision"]; got != "approve" {
		t.Errorf("clean tree: %v", got)
	}
	if err := exec.Command("touch", dir+"/new.txt").Run(); err != nil {
		t.Fatal(err)
	}
	if got := r.hookAnswer(t.Context(), cb).(map[string]any)["decision"]; got != "block" {
		t.Errorf("dirty tree: %v", got)
	}
	cb.Input = []byte(`{"hook_event_name":"Stop","stop_hook_active":true}`)
	if got := r.hookAnswer(t.Context(), cb).(map[string]any)["decision"]; got != "approve" {
		t.Errorf("second stop must not loop: %v", got)
	}
}

func TestAggregatorLimitNotice(t *testing.T) {
	lines := []string{
		`{"type":"assistant","session_id":"s","message":{"role":"assistant","content":[{"type":"text","text":"Claude AI usage limit reached|1760000000"}]},"error":"rate_limit"}`,
		`{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|1760000000","session_id":"s","api_error_status":429}`,
	}
	var a aggregator
	for _, l := range lines {
		m, err := streamjson.Decode([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		a.add(m)
	}
	if a.limitNotice == "" || a.conversationID != "s" {
		t.Fatalf("%+v", a)
	}
	var b aggregator
	m, _ := streamjson.Decode([]byte(`{"type":"assistant","session_id":"s","message":{"role":"assistant","content":[{"type":"text","text":"Rate limits in your API design matter."}]}}`))
	b.add(m)
	if b.limitNotice != "" {
		t.Error("ordinary text about limits is not a limit notice")
	}
}
