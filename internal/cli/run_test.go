package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/claude-relay/claude-relay/internal/server/store/sqlite"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
)

// recordingBackend stores posted envelopes.
type recordingBackend struct {
	mu     sync.Mutex
	events []map[string]any
}

func (b *recordingBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/batch") {
		http.NotFound(w, r)
		return
	}
	var e map[string]any
	body, _ := io.ReadAll(r.Body)
	if json.Unmarshal(body, &e) != nil {
		w.WriteHeader(400)
		return
	}
	b.mu.Lock()
	b.events = append(b.events, e)
	b.mu.Unlock()
	w.WriteHeader(201)
}

func TestRunWithRealCLI(t *testing.T) {
	cli := realcli.RealCLI(t)
	api := mockapi.New(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo hi-from-run", "description": "Say hi"}),
		mockapi.TextTurn("All done."),
	})
	be := &recordingBackend{}
	srv := httptest.NewServer(be)
	defer srv.Close()
	home := t.TempDir()
	cwd := t.TempDir()
	cli.TrustDir(cwd)
	env := map[string]string{"HOME": home, "CLAUDE_RELAY_BACKEND_URL": srv.URL, "CLAUDE_RELAY_CLAUDE_PATH": cli.Path, "PATH": os.Getenv("PATH")}
	cliEnv := cli.Env(t, api.URL())
	code, out, errb := runApp(t, env, cliEnv, cwd, "run", "--max-turns=4", "run the tool")
	t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	if code != 0 || !strings.Contains(out.String(), "All done.") || !strings.Contains(out.String(), "● $ echo hi-from-run — Say hi  (auto-allowed)") {
		t.Fatalf("exit %d", code)
	}
	be.mu.Lock()
	defer be.mu.Unlock()
	var types []string
	for _, e := range be.events {
		types = append(types, e["event_type"].(string))
	}
	t.Logf("backend got %v", types)
	if types[0] != "relay.run_started" || types[len(types)-1] != "relay.run_completed" {
		t.Errorf("lifecycle order %v", types)
	}
}

func TestRunOnEmbeddedDefault(t *testing.T) {
	cli := realcli.RealCLI(t)
	api := mockapi.New(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo embedded", "description": "Echo"}),
		mockapi.TextTurn("Stored."),
	})
	home := t.TempDir()
	cwd := t.TempDir()
	cli.TrustDir(cwd)
	env := map[string]string{"HOME": home, "CLAUDE_RELAY_CLAUDE_PATH": cli.Path}
	cliEnv := cli.Env(t, api.URL())
	code, out, errb := runApp(t, env, cliEnv, cwd, "run", "--session=sess-1", "--max-turns=4", "go")
	t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	if code != 0 || !strings.Contains(out.String(), "events: http://127.0.0.1:") {
		t.Fatalf("exit %d", code)
	}
	st, err := sqlite.Open(t.Context(), filepath.Join(home, ".local/share/claude-relay/relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sess, err := st.Session(t.Context(), "sess-1")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(t.Context(), "sess-1", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var cliSession string
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Errorf("event %d has seq %d", i, e.Seq)
		}
		var d struct {
			Type      string `json:"type"`
			SessionID string `json:"session_id"`
		}
		json.Unmarshal(e.EventData, &d) //nolint:errcheck
		if cliSession == "" && d.Type != "system" && d.SessionID != "" && e.Source == "agent" {
			cliSession = d.SessionID
		}
	}
	if sess.Status != "completed" || sess.ExternalConversationID == "" || sess.ExternalConversationID != cliSession {
		t.Errorf("session %+v; CLI session %s", sess, cliSession)
	}
	if !strings.Contains(out.String(), sess.ExternalConversationID) {
		t.Error("run should print the conversation ID")
	}
}
