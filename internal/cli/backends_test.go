package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
)

// webServer answers every request as nginx's default site does: a wrong
// backend.url behind a proxy. It counts what it was asked.
func webServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<html><body><h1>Welcome to nginx!</h1></body></html>\n")
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// TestDoctorBackendIsAWebServer: a backend.url where a web server answers
// 200 to everything is a problem that says so and what to do.
func TestDoctorBackendIsAWebServer(t *testing.T) {
	srv, _ := webServer(t)
	home := t.TempDir()
	env := map[string]string{"HOME": home, "CLAUDE_RELAY_BACKEND_URL": srv.URL, "CLAUDE_RELAY_BACKEND_TOKEN": "doctor-token-0123456789"}
	out, errOut, code := runDoctorIn(t, env, home)
	got := lines(out, `^FAIL +backend `)
	if code != 1 || len(got) != 1 ||
		!strings.Contains(got[0], "backend.url answers like a web server, not a claude-relay backend: GET "+srv.URL+"/api/whoami got HTTP 200 (text/html: \"<html><body><h1>Welcome to nginx!") ||
		!strings.Contains(got[0], "fix: set backend.url to the base URL of a claude-relay backend") {
		t.Errorf("doctor (exit %d) backend lines %q", code, got)
	}
	if strings.Contains(out+errOut, "doctor-token-0123456789") {
		t.Error("the token was printed")
	}
}

// spoolForBackend leaves n events of session in spool, spooled for url's
// backend while it was down.
func spoolForBackend(t *testing.T, spool, url, session string, n int) {
	t.Helper()
	f, err := forwarder.Open(forwarder.Options{Dir: spool, BackendURL: url, MaxBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	f.Start()
	for range n {
		if _, err := f.Enqueue(forwarder.Event{SessionID: session, InteractionID: "i", Type: "assistant", Source: "agent",
			Data: json.RawMessage(`{"type":"assistant"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	f.Stop(ctx) //nolint:errcheck // undelivered on purpose
}

// TestDoctorNamesEventsWaitingForAnotherBackend: events spooled for a
// backend that is no longer the configured one are a problem; doctor names
// that backend and prints the exact command that moves them.
func TestDoctorNamesEventsWaitingForAnotherBackend(t *testing.T) {
	home := t.TempDir()
	spool := filepath.Join(home, "spool")
	spoolForBackend(t, spool, "http://127.0.0.1:9", "s-old", 7)
	env := map[string]string{"HOME": home, "CLAUDE_RELAY_SPOOL_DIR": spool, "CLAUDE_RELAY_BACKEND_URL": "http://127.0.0.1:10/"}
	out, _, _ := runDoctorIn(t, env, home)
	fail := lines(out, `^FAIL +spool `)
	if len(fail) != 1 || !strings.Contains(fail[0], "7 events in "+spool+" wait for another backend than the configured one (http://127.0.0.1:10)") ||
		!strings.Contains(fail[0], "fix: `claude-relay spool flush --to http://127.0.0.1:10` delivers them to the configured backend") {
		t.Errorf("doctor spool lines %q", fail)
	}
	if got := lines(out, `^ +7 events in 1 session for http://127.0.0.1:9: move them with .claude-relay spool flush --to http://127.0.0.1:10.`); len(got) != 1 {
		t.Errorf("no note naming the backend they wait for:\n%s", out)
	}
	// The same backend, spelt differently, is the same destination.
	env["CLAUDE_RELAY_BACKEND_URL"] = "HTTP://127.0.0.1:9/"
	out, _, _ = runDoctorIn(t, env, home)
	if got := lines(out, `^ok +spool +7 events waiting in .* for http://127.0.0.1:9;`); len(got) != 1 {
		t.Errorf("doctor with the spool's own backend:\n%s", out)
	}
}

// TestRunAgainstWebServerKeepsEvents: a run whose backend.url is a web
// server that answers 200 to everything warns at once and at the end,
// acknowledges nothing, and leaves every event in the spool for that URL;
// `spool status` names it.
func TestRunAgainstWebServerKeepsEvents(t *testing.T) {
	cli := realcli.RealCLI(t)
	api := mockapi.New(t, mockapi.Script{mockapi.TextTurn("All done.")})
	srv, hits := webServer(t)
	home := t.TempDir()
	cwd := t.TempDir()
	cli.TrustDir(cwd)
	env := map[string]string{"HOME": home, "CLAUDE_RELAY_BACKEND_URL": srv.URL, "CLAUDE_RELAY_CLAUDE_PATH": cli.Path,
		"CLAUDE_RELAY_FORWARDER_DRAIN_TIMEOUT": "1s", "PATH": os.Getenv("PATH")}
	code, out, errb := runApp(t, env, cli.Env(t, api.URL()), cwd, "run", "--session=web-1", "--max-turns=2", "say done")
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errb)
	// The run's own status stands (README: exit status = the run's); the
	// warnings say what happened and what to do.
	if code != 0 || !strings.Contains(out.String(), "All done.") {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		"! backend.url answers like a web server, not a claude-relay backend: GET " + srv.URL + "/api/whoami got HTTP 200",
		"this run's events wait in the spool, none is acknowledged: set backend.url to the base URL of a claude-relay backend",
		": " + srv.URL + " answers like a web server, not a claude-relay backend: POST " + srv.URL + "/api/sessions/web-1/events got HTTP 200",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	if !strings.Contains(errb.String(), "the backend has not taken ") || !strings.Contains(errb.String(), "answers like a web server") {
		t.Errorf("stderr does not say what was left and why:\n%s", errb)
	}
	if hits.Load() == 0 {
		t.Fatal("the web server was never asked")
	}
	st, err := forwarder.Inspect(filepath.Join(home, ".local", "state", "claude-relay", "spool"))
	if err != nil || len(st) != 1 || st[0].Pending == 0 || st[0].Backend != srv.URL {
		t.Fatalf("spool after the run: %+v, %v; want the run's events waiting for %s", st, err, srv.URL)
	}
	code, sout, _ := runApp(t, env, nil, cwd, "spool", "status")
	if code != 0 || !strings.Contains(sout.String(), "for "+srv.URL+" (the configured backend)") ||
		!strings.Contains(sout.String(), "answers like a web server") {
		t.Errorf("spool status:\n%s", sout)
	}
}
