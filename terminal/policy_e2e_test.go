//go:build unix

package terminal

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/tmux"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// The central policy holds in a visible-terminal run: the real CLI asks our
// hook before every tool, a deny keeps the file and tells the model why, an
// allow runs a command the CLI would otherwise ask about, and the embedded
// backend (serving the helper's own serve.policy) records both decisions.
func TestE2ETerminalPolicy(t *testing.T) {
	e := newE2E(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "rm victim", "description": "Remove victim"}),
		mockapi.ToolTurn("Bash", map[string]any{"command": "touch allowed-file", "description": "Touch a file"}),
		mockapi.TextTurn("policy done"),
	})
	victim := filepath.Join(e.cwd, "victim")
	if err := os.WriteFile(victim, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.env = append(e.env, `CLAUDE_RELAY_SERVE_POLICY=[{"rule":"Bash(rm *)","effect":"deny","reason":"victims stay"},{"rule":"Bash(touch *)","effect":"allow"}]`)
	const session, interaction = "sess-term-policy", "int-term-policy"

	exitFile := filepath.Join(t.TempDir(), "exit")
	tm := tmux.Start(t, e.command(exitFile, "terminal", "--session="+session, "--interaction="+interaction, "--cwd="+e.cwd, "Clean up"))
	// No tool prompt may show: deny and allow are the policy's, not the
	// person's. Only notices that want Enter are answered.
	var prompted bool
	shown := tm.WaitFor(e2eWait, func(scr string) bool {
		switch {
		case strings.Contains(scr, "policy done"):
			return true
		case strings.Contains(scr, "Do you want to proceed"):
			prompted = true
			return true
		}
		if _, err := os.Stat(exitFile); err == nil {
			return true
		}
		if strings.Contains(scr, "Enter to confirm") || strings.Contains(scr, "Press Enter") {
			tm.Keys("Enter")
		}
		return false
	})
	if prompted {
		tm.Fail("the CLI asked about a tool call the policy decided")
	}
	if !shown {
		tm.Fail("the screen never showed the model's last answer")
	}
	tm.Keys("-l", "/exit")
	time.Sleep(300 * time.Millisecond) // let the command menu settle
	tm.Keys("Enter")
	if code, ok := waitExit(exitFile, e2eWait); !ok || code != 0 {
		tm.Fail("claude-relay terminal exit %d (exited: %v), want 0", code, ok)
	}

	if b, err := os.ReadFile(victim); err != nil || string(b) != "keep me" {
		t.Errorf("victim after the denied rm: %q, %v; want it kept", b, err)
	}
	if _, err := os.Stat(filepath.Join(e.cwd, "allowed-file")); err != nil {
		t.Errorf("the allowed touch did not run: %v", err)
	}
	res := e.api.ToolResults()
	if len(res) != 2 || !strings.Contains(res[0].Content, "Denied by the team's central policy (rule Bash(rm *)): victims stay") {
		t.Errorf("tool results sent to the API %+v, want the denial's reason first", res)
	}

	evs, _ := e.events(session)
	checkTerminalRun(t, evs, interaction, "PreToolUse", "PostToolUse")
	var got []string
	for _, ev := range evs {
		if ev.EventType != wire.TypePolicyDecision {
			continue
		}
		var d wire.PolicyDecision
		if err := json.Unmarshal(ev.EventData, &d); err != nil {
			t.Fatal(err)
		}
		got = append(got, d.Rule+" "+d.Outcome+" "+string(d.DecidedBy))
		if d.ToolUseID == "" || d.InputSHA256 == "" || d.Source != "backend" {
			t.Errorf("policy decision %+v, want the call's ID, digest and source", d)
		}
	}
	if want := []string{"Bash(rm *) deny policy", "Bash(touch *) allow policy"}; strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("policy decisions %q, want %q", got, want)
	}
}

// With no helper to answer, the real CLI refuses the call: the hook's exit
// status 2 is how a command hook blocks, and the model hears why.
func TestE2EPolicyHookFailsClosed(t *testing.T) {
	e := newE2E(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "rm victim", "description": "Remove victim"}),
		mockapi.TextTurn("closed done"),
	})
	victim := filepath.Join(e.cwd, "victim")
	if err := os.WriteFile(victim, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "http://" + ln.Addr().String() + "/hook/x"
	ln.Close()
	settings, err := Settings(gone, e.relay, true)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(path, settings, 0o600); err != nil {
		t.Fatal(err)
	}
	exitFile := filepath.Join(t.TempDir(), "exit")
	var b strings.Builder
	b.WriteString("cd " + shellQuote(e.cwd) + " && env -i")
	for _, kv := range e.env {
		b.WriteString(" " + shellQuote(kv))
	}
	fmt.Fprintf(&b, " %s --settings=%s 'Clean up'; echo $? > %s", shellQuote(e.cli.Path), shellQuote(path), shellQuote(exitFile))
	tm := tmux.Start(t, b.String())
	if !waitFor(tm, "closed done", exitFile) {
		tm.Fail("the screen never showed the model's last answer")
	}
	tm.Keys("-l", "/exit")
	time.Sleep(300 * time.Millisecond) // let the command menu settle
	tm.Keys("Enter")
	waitExit(exitFile, e2eWait)
	if b, err := os.ReadFile(victim); err != nil || string(b) != "keep me" {
		t.Errorf("victim with the helper gone: %q, %v; want it kept", b, err)
	}
	if res := e.api.ToolResults(); len(res) != 1 || !strings.Contains(res[0].Content, "so it is refused") {
		t.Errorf("tool results sent to the API %+v, want the hook's refusal", res)
	}
}
