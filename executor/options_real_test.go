package executor

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
)

// TestRealTypedOptions: the typed prompt options reach the pinned CLI as
// flags it takes, two --add-dir values and tool lists included, and show in
// what the CLI sends the Messages API.
func TestRealTypedOptions(t *testing.T) {
	env := newRealEnv(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "touch marker.txt", "description": "Touch a file"}),
		mockapi.TextTurn("options done"),
	}, nil)
	denyEditInProjectSettings(t, env.cwd)
	dirA, dirB := t.TempDir(), t.TempDir()
	res, rec := env.run(t, Request{
		RunOptions: RunOptions{
			AllowedTools:    []string{"Bash(touch *)", "Read"},
			DisallowedTools: []string{"Write"},
			SystemPrompt:    "You are relay-options-test.",
			AddDirs:         []string{dirA, dirB},
			Agents:          json.RawMessage(`{"reviewer": {"description": "Reviews relay code", "prompt": "You review."}}`),
			MCPServers:      json.RawMessage(`{"relay-probe": {"command": "/nonexistent/mcp-server"}}`),
			MaxBudgetUSD:    5,
			// No settings files: the project's deny of Edit is not loaded.
			SettingSources: &[]string{},
		},
		Prompt: "use the options",
	}, nil)
	if res.Status != StatusCompleted || res.Stdout != "options done" {
		t.Fatalf("result %+v", res)
	}
	// allowed_tools: the touch ran without the CLI asking for permission.
	for _, e := range rec.kinds(EventLine) {
		if strings.Contains(string(e.Line), `"can_use_tool"`) {
			t.Errorf("Bash(touch *) is allowed, yet the CLI asked: %s", e.Line)
		}
	}
	if _, err := os.Stat(filepath.Join(env.cwd, "marker.txt")); err != nil {
		t.Errorf("the allowed tool did not run: %v", err)
	}
	last, ok := env.api.LastMainRequest()
	if !ok {
		t.Fatal("no main request reached the scripted API")
	}
	if slices.Contains(last.Tools, "Write") || !slices.Contains(last.Tools, "Bash") || !slices.Contains(last.Tools, "Edit") {
		t.Errorf("tools %v: want Write gone (disallowed), Bash there, Edit there (no settings loaded)", last.Tools)
	}
	if !strings.Contains(last.System, "You are relay-options-test.") {
		t.Errorf("system prompt %q lacks ours", last.System)
	}
	body := string(last.Body)
	for what, want := range map[string]string{
		"add_dirs[0]": dirA, "add_dirs[1]": dirB, "agents": "reviewer: Reviews relay code",
		"mcp_servers": "relay-probe", "max_budget_usd": "USD budget: $0/$5",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("%s: the request to the API never mentions %q", what, want)
		}
	}
}

// TestRealSettingSources: absent, the CLI loads the project's settings (its
// deny removes Edit); [] loads none; a list loads only those named.
func TestRealSettingSources(t *testing.T) {
	for _, tt := range []struct {
		name     string
		sources  *[]string
		wantEdit bool
	}{
		{"absent: the CLI's default", nil, false},
		{"empty: none", &[]string{}, true},
		{"user only", &[]string{"user"}, true},
		{"project", &[]string{"project"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := newRealEnv(t, mockapi.Script{mockapi.TextTurn("ok")}, nil)
			denyEditInProjectSettings(t, env.cwd)
			res, _ := env.run(t, Request{RunOptions: RunOptions{SettingSources: tt.sources}, Prompt: "hi"}, nil)
			last, _ := env.api.LastMainRequest()
			if res.Status != StatusCompleted || slices.Contains(last.Tools, "Edit") != tt.wantEdit {
				t.Errorf("status %s, tools %v: want Edit there = %v", res.Status, last.Tools, tt.wantEdit)
			}
		})
	}
}

// TestRealMaxThinkingTokens: the budget reaches the API as the thinking
// budget. The pinned CLI applies it to models with budgeted thinking
// (claude-sonnet-4-5); adaptive-thinking ones (its default) ignore it.
func TestRealMaxThinkingTokens(t *testing.T) {
	env := newRealEnv(t, mockapi.Script{mockapi.TextTurn("thought")}, nil)
	res, _ := env.run(t, Request{RunOptions: RunOptions{Model: "claude-sonnet-4-5", MaxThinkingTokens: 2048}, Prompt: "think"}, nil)
	last, _ := env.api.LastMainRequest()
	th, _ := last.JSON["thinking"].(map[string]any)
	if res.Status != StatusCompleted || th["type"] != "enabled" || th["budget_tokens"] != float64(2048) {
		t.Errorf("status %s, thinking %v: want enabled with budget_tokens 2048", res.Status, last.JSON["thinking"])
	}
}

// TestRealStopGitCheck: with stop_git_check the CLI's Stop hook reaches us,
// a dirty tree blocks the stop once (the model hears why and answers again),
// and the second stop goes through.
func TestRealStopGitCheck(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	env := newRealEnv(t, mockapi.Script{mockapi.TextTurn("first stop"), mockapi.TextTurn("second stop")}, nil)
	if out, err := exec.Command("git", "init", "-q", env.cwd).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	if err := os.WriteFile(filepath.Join(env.cwd, "dirty.txt"), []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res, _ := env.run(t, Request{RunOptions: RunOptions{StopGitCheck: true}, Prompt: "finish"}, nil)
	if res.Status != StatusCompleted || !strings.HasSuffix(res.Stdout, "second stop") || res.NumTurns != 2 {
		t.Fatalf("result %+v: want the blocked stop to lead to a second answer", res)
	}
	last, _ := env.api.LastMainRequest()
	if !strings.Contains(string(last.Body), "There are uncommitted changes") {
		t.Errorf("the model never heard why its stop was blocked: %s", last.Body)
	}
}

// denyEditInProjectSettings writes a project settings file whose deny rule
// removes the Edit tool, so whether the CLI loaded it shows in the tools.
func denyEditInProjectSettings(t *testing.T, cwd string) {
	t.Helper()
	dir := filepath.Join(cwd, ".claude")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte(`{"permissions":{"deny":["Edit"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
}
