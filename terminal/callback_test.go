package terminal

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/claude-relay/claude-relay/internal/testkit/syncbuf"
)

// hookRecorder is an OnHook that records what it got.
type hookRecorder struct {
	mu     sync.Mutex
	events []string
	bodies [][]byte
}

func (h *hookRecorder) onHook(_ context.Context, event string, body []byte) any {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, event)
	h.bodies = append(h.bodies, bytes.Clone(body))
	return nil
}

func (h *hookRecorder) got() ([]string, [][]byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.events...), append([][]byte(nil), h.bodies...)
}

type syncBuffer = syncbuf.Buffer

func startCallback(t *testing.T) (*CallbackServer, *hookRecorder, *syncBuffer) {
	t.Helper()
	rec, logs := &hookRecorder{}, &syncBuffer{}
	cb, err := StartCallbackServer(rec.onHook, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatalf("StartCallbackServer: %v", err)
	}
	t.Cleanup(func() { cb.Close(context.Background()) })
	return cb, rec, logs
}

func TestCallbackURL(t *testing.T) {
	a, _, _ := startCallback(t)
	b, _, _ := startCallback(t)
	re := regexp.MustCompile(`^http://127\.0\.0\.1:[0-9]+/hook/[0-9a-f]{48}$`)
	if !re.MatchString(a.URL()) {
		t.Errorf("URL %q, want http://127.0.0.1:PORT/hook/<48 hex digits>", a.URL())
	}
	if a.URL() == b.URL() || a.secret == b.secret {
		t.Errorf("two servers share a URL or secret: %s, %s", a.URL(), b.URL())
	}
}

func TestCallbackOverHTTP(t *testing.T) {
	cb, rec, logs := startCallback(t)
	u, err := url.Parse(cb.URL())
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + u.Host
	good := `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash"}`
	for _, tc := range []struct {
		name   string
		method string
		url    string
		body   string
		status int
	}{
		{"wrong secret", "POST", base + "/hook/" + strings.Repeat("0", 48), good, http.StatusNotFound},
		{"secret prefix", "POST", cb.URL()[:len(cb.URL())-1], good, http.StatusNotFound},
		{"secret with suffix", "POST", cb.URL() + "x", good, http.StatusNotFound},
		{"no secret", "POST", base + "/hook/", good, http.StatusNotFound},
		{"root", "POST", base + "/", good, http.StatusNotFound},
		{"GET", "GET", cb.URL(), "", http.StatusMethodNotAllowed},
		{"PUT", "PUT", cb.URL(), good, http.StatusMethodNotAllowed},
		{"wrong secret GET", "GET", base + "/hook/nope", "", http.StatusNotFound},
		{"malformed JSON", "POST", cb.URL(), `{"hook_event_name":`, http.StatusBadRequest},
		{"empty body", "POST", cb.URL(), "", http.StatusBadRequest},
		{"array", "POST", cb.URL(), `[{"hook_event_name":"Stop"}]`, http.StatusBadRequest},
		{"no event name", "POST", cb.URL(), `{"session_id":"s"}`, http.StatusBadRequest},
		{"empty event name", "POST", cb.URL(), `{"hook_event_name":""}`, http.StatusBadRequest},
		{"event name not a string", "POST", cb.URL(), `{"hook_event_name":7}`, http.StatusBadRequest},
		{"leading space", "POST", cb.URL(), ` {"hook_event_name":"Stop"}`, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, tc.url, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
		})
	}
	if events, _ := rec.got(); len(events) != 0 {
		t.Errorf("OnHook called for rejected requests: %v", events)
	}

	resp, err := http.Post(cb.URL(), "application/json", strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "{}" || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("good hook answered %d %q (%s), want 200 {} as application/json", resp.StatusCode, body, resp.Header.Get("Content-Type"))
	}
	events, bodies := rec.got()
	if len(events) != 1 || events[0] != "PreToolUse" || string(bodies[0]) != good {
		t.Errorf("OnHook got %q %q, want PreToolUse with the body unchanged", events, bodies)
	}
	if !strings.Contains(logs.String(), "hook callback rejected") {
		t.Errorf("rejections were not logged:\n%s", logs)
	}
	if strings.Contains(logs.String(), cb.secret) {
		t.Errorf("the log holds the secret:\n%s", logs)
	}
}

// serve calls ServeHTTP directly, which lets a test pick the remote address
// and send bodies the real transport would not.
func serve(cb *CallbackServer, method, remote string, body io.Reader) *httptest.ResponseRecorder {
	u, _ := url.Parse(cb.URL())
	req := httptest.NewRequest(method, u.Path, body)
	req.RemoteAddr = remote
	w := httptest.NewRecorder()
	cb.ServeHTTP(w, req)
	return w
}

func TestCallbackRemoteAddress(t *testing.T) {
	cb, rec, _ := startCallback(t)
	body := `{"hook_event_name":"Stop"}`
	for _, tc := range []struct {
		remote string
		status int
	}{
		{"10.1.2.3:5", http.StatusForbidden},
		{"192.168.0.1:80", http.StatusForbidden},
		{"[2001:db8::1]:5", http.StatusForbidden},
		{"not-an-address", http.StatusForbidden},
		{"127.0.0.1:5", http.StatusOK},
		{"127.8.9.10:5", http.StatusOK},
		{"[::1]:5", http.StatusOK},
	} {
		if w := serve(cb, "POST", tc.remote, strings.NewReader(body)); w.Code != tc.status {
			t.Errorf("from %s: status %d, want %d", tc.remote, w.Code, tc.status)
		}
	}
	if events, _ := rec.got(); len(events) != 3 {
		t.Errorf("OnHook called %d times, want 3 (the loopback posts only)", len(events))
	}
}

func TestCallbackBodyLimit(t *testing.T) {
	cb, rec, _ := startCallback(t)
	// A hook input of exactly MaxHookBody is taken; one byte more is not.
	head := `{"hook_event_name":"PostToolUse","pad":"`
	exact := head + strings.Repeat("x", MaxHookBody-len(head)-2) + `"}`
	if w := serve(cb, "POST", "127.0.0.1:9", strings.NewReader(exact)); w.Code != http.StatusOK {
		t.Errorf("a body of MaxHookBody: status %d, want 200", w.Code)
	}
	over := head + strings.Repeat("x", MaxHookBody-len(head)-1) + `"}`
	if w := serve(cb, "POST", "127.0.0.1:9", strings.NewReader(over)); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("a body of MaxHookBody+1: status %d, want 413", w.Code)
	}
	if events, bodies := rec.got(); len(events) != 1 || len(bodies[0]) != MaxHookBody {
		t.Errorf("OnHook got %d hooks, want only the one at the limit", len(events))
	}
}

func TestCallbackConcurrentHooks(t *testing.T) {
	cb, rec, _ := startCallback(t)
	const n = 50
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp, err := http.Post(cb.URL(), "application/json", strings.NewReader(fmt.Sprintf(`{"hook_event_name":"E%d"}`, i)))
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
		})
	}
	wg.Wait()
	if events, _ := rec.got(); len(events) != n {
		t.Errorf("OnHook called %d times, want %d", len(events), n)
	}
}

func TestCallbackClose(t *testing.T) {
	cb, _, _ := startCallback(t)
	cb.Close(context.Background())
	cb.Close(context.Background()) // idempotent
	if resp, err := http.Post(cb.URL(), "application/json", strings.NewReader(`{"hook_event_name":"Stop"}`)); err == nil {
		resp.Body.Close()
		t.Errorf("a closed server answered %d", resp.StatusCode)
	}
}

// FuzzCallbackBody: whatever a local process posts, the server answers 200
// exactly when it hands the body on, and 400 otherwise.
func FuzzCallbackBody(f *testing.F) {
	for _, s := range []string{`{"hook_event_name":"Stop"}`, `{}`, `[]`, `{"hook_event_name":null}`, "", "{", `{"hook_event_name":"\u0000"}`} {
		f.Add([]byte(s))
	}
	rec := &hookRecorder{}
	cb, err := StartCallbackServer(rec.onHook, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { cb.Close(context.Background()) })
	f.Fuzz(func(t *testing.T, body []byte) {
		before, _ := rec.got()
		w := serve(cb, "POST", "127.0.0.1:1", bytes.NewReader(body))
		after, _ := rec.got()
		switch w.Code {
		case http.StatusOK:
			if len(after) != len(before)+1 || after[len(after)-1] == "" {
				t.Fatalf("200 without an OnHook call with an event name")
			}
		case http.StatusBadRequest:
			if len(after) != len(before) {
				t.Fatalf("400 but OnHook was called")
			}
		default:
			t.Fatalf("status %d for %q", w.Code, body)
		}
	})
}
