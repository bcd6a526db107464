package acp

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/internal/relay"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
)

// The modes come from the CLI: exactly those it takes (less bypass as
// root), starting in the project's configured default; every change is
// confirmed by current_mode_update and reaches the CLI.
func TestACPModesFromCLI(t *testing.T) {
	cli := realcli.RealCLI(t)
	cwd, _ := filepath.EvalSymlinks(t.TempDir())
	cli.TrustDir(cwd)
	if err := os.MkdirAll(filepath.Join(cwd, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	settings := `{"permissions":{"defaultMode":"acceptEdits"}}`
	if err := os.WriteFile(filepath.Join(cwd, ".claude", "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	api := mockapi.New(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo ran > ran.txt", "description": "Write a file"}),
		mockapi.TextTurn("done"),
	})
	e := startAgentWith(t, cli, api, cwd)
	if _, err := e.conn.Initialize(e.ctx(), acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	ns, err := e.conn.NewSession(e.ctx(), acpsdk.NewSessionRequest{Cwd: cwd, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range ns.Modes.AvailableModes {
		ids = append(ids, string(m.Id))
	}
	// The pinned CLI takes acceptEdits, auto, bypassPermissions, default,
	// dontAsk and plan; it refuses bypass to root.
	want := []string{"default", "acceptEdits", "plan", "auto", "dontAsk"}
	if os.Geteuid() != 0 {
		want = append(want, "bypassPermissions")
	}
	if !slices.Equal(ids, want) {
		t.Errorf("session/new modes %v, want %v", ids, want)
	}
	if ns.Modes.CurrentModeId != "acceptEdits" {
		t.Errorf("current mode %q, want the project's defaultMode acceptEdits", ns.Modes.CurrentModeId)
	}
	for _, m := range []string{"auto", "dontAsk"} {
		if _, err := e.conn.SetSessionMode(e.ctx(), acpsdk.SetSessionModeRequest{SessionId: ns.SessionId, ModeId: acpsdk.SessionModeId(m)}); err != nil {
			t.Fatalf("set_mode %s: %v", m, err)
		}
		if !strings.Contains(e.c.all(), `{"currentModeId":"`+m+`","sessionUpdate":"current_mode_update"}`) {
			t.Errorf("no current_mode_update to %s:\n%s", m, e.c.all())
		}
	}
	// dontAsk: the Bash no rule allows is refused without asking.
	if r, err := e.prompt(ns.SessionId, "write the file"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt %+v, %v", r, err)
	}
	e.c.mu.Lock()
	asked := len(e.c.asked)
	e.c.mu.Unlock()
	if asked != 0 {
		t.Errorf("%d permission requests in dontAsk mode, want none", asked)
	}
	if _, err := os.Stat(filepath.Join(cwd, "ran.txt")); err == nil {
		t.Error("the Bash ran in dontAsk mode with no rule allowing it")
	}
}

// Credentials missing is the executor's typed cause, not words found in its
// advice: a reason that merely mentions /login is another failure.
func TestNotLoggedInIsTyped(t *testing.T) {
	for _, c := range []struct {
		end  relay.End
		want bool
	}{
		{relay.End{Status: executor.StatusFailed, Cause: fmt.Errorf("turn 2: %w", executor.ErrNotLoggedIn)}, true},
		{relay.End{Status: executor.StatusFailed, Reason: "the model said: please run /login"}, false},
		{relay.End{Status: executor.StatusCompleted, Cause: executor.ErrNotLoggedIn}, false},
	} {
		if got := notLoggedIn(&c.end); got != c.want {
			t.Errorf("notLoggedIn(%+v) = %v, want %v", c.end, got, c.want)
		}
	}
}
