package acp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/internal/relay"
)

// TestACPSessionIDMustBeAUUID: session/load, session/resume and
// session/fork turn sessionId into a transcript path, so an id that is not
// a conversation ID ("../" reaching another *.jsonl, an absolute path) is
// refused with InvalidParams saying what an id looks like, even when the
// file it names exists.
func TestACPSessionIDMustBeAUUID(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	// <home>/.claude/projects/<project>/../../outside.jsonl is this file.
	outside := filepath.Join(home, ".claude", "outside.jsonl")
	if err := os.MkdirAll(filepath.Dir(outside), 0o700); err != nil {
		t.Fatal(err)
	}
	line := `{"type":"user","cwd":"` + cwd + `","message":{"role":"user","content":"SECRET-TRANSCRIPT"}}` + "\n"
	if err := os.WriteFile(outside, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".claude", "projects", projectDir(cwd)), 0o700); err != nil {
		t.Fatal(err)
	}
	core := relay.New(relay.Options{Executor: executor.New(executor.Options{CLIPath: "/nonexistent/claude"}), Spool: &spool{}})
	r := startRaw(t, core, home)
	for i, tc := range []struct{ method, id string }{
		{"session/load", "../../outside"},
		{"session/resume", "../../outside"},
		{"session/fork", "../../outside"},
		{"session/load", strings.TrimSuffix(outside, ".jsonl")},
		{"session/load", "urn:uuid:0f8fad5b-d9cb-469f-a165-70867728950e"},
		{"session/load", "0F8FAD5B-D9CB-469F-A165-70867728950E/../x"},
	} {
		params, _ := json.Marshal(map[string]any{"sessionId": tc.id, "cwd": cwd, "mcpServers": []any{}})
		req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": tc.method, "params": json.RawMessage(params)})
		r.send(string(req))
		m := r.next()
		raw, _ := json.Marshal(m)
		if code(m) != -32602 || !strings.Contains(string(raw), "is not a conversation ID") {
			t.Errorf("%s %q: got %s, want -32602 saying it is not a conversation ID", tc.method, tc.id, raw)
		}
		if strings.Contains(string(raw), "SECRET-TRANSCRIPT") {
			t.Errorf("%s %q: the answer quotes the file outside the project", tc.method, tc.id)
		}
	}
}

// TestListSkipsNonConversationFiles: session/list offers only what
// session/load takes.
func TestListSkipsNonConversationFiles(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	dir := filepath.Join(home, ".claude", "projects", projectDir(cwd))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	line := []byte(`{"type":"user","cwd":"` + cwd + `","message":{"role":"user","content":"hi"}}` + "\n")
	const id = "0f8fad5b-d9cb-469f-a165-70867728950e"
	for _, name := range []string{id, "notes", "agent-1234"} {
		if err := os.WriteFile(filepath.Join(dir, name+".jsonl"), line, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := listSessions(home, cwd)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || string(got[0].SessionId) != id {
		t.Errorf("listed %+v, want only %s", got, id)
	}
}
