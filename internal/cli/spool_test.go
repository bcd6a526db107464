package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/forwarder"
)

// runCLI runs one command line with env and returns stdout, stderr and status.
func runCLI(t *testing.T, env map[string]string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &App{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Getwd:     func() (string, error) { return env["HOME"], nil }}
	code := a.Run(context.Background(), args)
	return out.String(), errb.String(), code
}

func TestSpoolStatusAndFlush(t *testing.T) {
	home := t.TempDir()
	spool := filepath.Join(home, "spool")
	// Spool three events for a backend that is down.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }))
	defer down.Close()
	f, err := forwarder.Open(forwarder.Options{Dir: spool, BackendURL: down.URL, MaxBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := f.Enqueue(forwarder.Event{SessionID: "s-1", InteractionID: "i", Type: "assistant", Source: "agent",
			Data: json.RawMessage(`{"type":"assistant","i":` + string(rune('0'+i)) + `}`)}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	f.Stop(ctx) //nolint:errcheck // undelivered on purpose

	env := map[string]string{"HOME": home, "CLAUDE_RELAY_SPOOL_DIR": spool, "CLAUDE_RELAY_BACKEND_TOKEN": "sekrit-tok"}
	out, _, code := runCLI(t, env, "spool", "status")
	if code != 0 || !strings.Contains(out, "s-1") || !strings.Contains(out, " 3 ") {
		t.Fatalf("status (%d):\n%s", code, out)
	}
	out, _, _ = runCLI(t, env, "spool", "status", "--json")
	var js struct{ Sessions []forwarder.SessionStatus }
	if err := json.Unmarshal([]byte(out), &js); err != nil || len(js.Sessions) != 1 || js.Sessions[0].Pending != 3 {
		t.Fatalf("status --json: %v %s", err, out)
	}

	var mu sync.Mutex
	var got []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sekrit-tok" {
			w.WriteHeader(401)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/batch") {
			http.NotFound(w, r)
			return
		}
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, string(b))
		mu.Unlock()
		w.WriteHeader(201)
	}))
	defer up.Close()
	// Spooled for the backend that was down: a plain flush with another
	// backend.url leaves them, and says how to move them.
	env["CLAUDE_RELAY_BACKEND_URL"] = up.URL
	out, errOut, code := runCLI(t, env, "spool", "flush")
	if code != 0 || !strings.Contains(out, "delivered 0 events to "+up.URL) ||
		!strings.Contains(out, "left 3 events of 1 session spooled for "+down.URL+", not for "+up.URL) ||
		!strings.Contains(out, "`claude-relay spool flush --to "+up.URL+"`") {
		t.Fatalf("plain flush to another backend (%d): %s %s", code, out, errOut)
	}
	out, _, _ = runCLI(t, env, "spool", "status")
	for _, want := range []string{"for " + down.URL + ", not the configured backend (" + up.URL + ")",
		"move them to the configured backend: claude-relay spool flush --to " + up.URL,
		"or deliver them to " + down.URL + " (with that backend's token in backend.token): CLAUDE_RELAY_BACKEND_URL=" + down.URL + " claude-relay spool flush"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	out, _, _ = runCLI(t, env, "spool", "status", "--json")
	var groups struct {
		Backend  string
		Backends []spoolGroup
	}
	if err := json.Unmarshal([]byte(out), &groups); err != nil || groups.Backend != up.URL || len(groups.Backends) != 1 ||
		groups.Backends[0].Backend != down.URL || groups.Backends[0].Configured || groups.Backends[0].Pending != 3 ||
		groups.Backends[0].MoveCommand != "claude-relay spool flush --to "+up.URL {
		t.Fatalf("status --json: %v %s", err, out)
	}
	mu.Lock()
	if len(got) != 0 {
		t.Fatalf("a plain flush delivered %d events to another backend", len(got))
	}
	mu.Unlock()

	// --to moves them.
	out, errOut, code = runCLI(t, env, "spool", "flush", "--to", up.URL)
	if code != 0 || !strings.Contains(out, "moved the events of 1 session from "+down.URL+" to "+up.URL) ||
		!strings.Contains(out, "delivered 3 events") {
		t.Fatalf("flush --to (%d): %s %s", code, out, errOut)
	}
	if strings.Contains(out+errOut, "sekrit-tok") {
		t.Error("token printed")
	}
	mu.Lock()
	if len(got) != 3 {
		t.Errorf("backend got %d events", len(got))
	}
	mu.Unlock()
	out, _, _ = runCLI(t, env, "spool", "status")
	if !strings.Contains(out, "nothing waiting") {
		t.Errorf("after flush: %s", out)
	}
	if _, err := os.Stat(spool); err != nil {
		t.Fatal(err)
	}
}
