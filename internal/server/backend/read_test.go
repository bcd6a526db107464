package backend

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

func TestReads(t *testing.T) {
	e := newEnv(t)
	for i := int64(1); i <= 5; i++ {
		e.post("s1", envelope("s1", i, "assistant", map[string]any{"n": i, "session_id": "conv-1"}))
	}
	e.post("s2", envelope("s2", 1, "result", map[string]any{"type": "result", "total_cost_usd": 0.5}))

	var list sessionsResponse
	if code := e.call("GET", "/api/sessions", nil, nil, &list); code != 200 || len(list.Sessions) != 2 {
		t.Fatalf("sessions: %d %+v", code, list)
	}
	var one store.Session
	if code := e.call("GET", "/api/sessions/s1", nil, nil, &one); code != 200 {
		t.Fatalf("session: %d", code)
	}
	if one.ID != "s1" || one.EventCount != 5 || one.ExternalConversationID != "conv-1" || one.LastCursor != 5 {
		t.Errorf("session s1: %+v", one)
	}
	var nf errorBody
	if code := e.call("GET", "/api/sessions/nope", nil, nil, &nf); code != 404 || nf.Error == "" {
		t.Errorf("unknown session: %d %+v, want 404 with a reason", code, nf)
	}

	// Paging: after and limit, next continues.
	var page eventsResponse
	e.call("GET", "/api/sessions/s1/events?limit=2", nil, nil, &page)
	if len(page.Events) != 2 || page.Events[0].Cursor != 1 || page.Next != 2 {
		t.Fatalf("page 1: %+v", page)
	}
	e.call("GET", "/api/sessions/s1/events?limit=2&after=2", nil, nil, &page)
	if len(page.Events) != 2 || page.Events[0].Cursor != 3 || page.Next != 4 {
		t.Fatalf("page 2: %+v", page)
	}
	e.call("GET", "/api/sessions/s1/events?after=5", nil, nil, &page)
	if len(page.Events) != 0 || page.Next != 5 {
		t.Fatalf("past the end: %+v", page)
	}

	// Each event is the envelope as posted, event_data an object, plus cursor.
	resp := e.do("GET", "/api/sessions/s1/events?limit=1", nil, nil)
	var raw struct {
		Events []map[string]json.RawMessage `json:"events"`
		Next   json.RawMessage              `json:"next"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&raw)
	resp.Body.Close()
	for _, k := range []string{"session_id", "interaction_id", "event_id", "seq", "event_type", "event_data", "timestamp", "source", "cursor"} {
		if _, ok := raw.Events[0][k]; !ok {
			t.Errorf("event has no %q: %v", k, raw.Events[0])
		}
	}
	if d := raw.Events[0]["event_data"]; len(d) == 0 || d[0] != '{' {
		t.Errorf("event_data %s is not an object", d)
	}

	for _, q := range []string{"after=-1", "after=x", "limit=0", "limit=abc"} {
		var eb errorBody
		if code := e.call("GET", "/api/sessions/s1/events?"+q, nil, nil, &eb); code != 400 || eb.Error == "" {
			t.Errorf("?%s: %d %+v, want 400 with a reason", q, code, eb)
		}
	}
	// An over-large limit is clamped, not refused.
	if code := e.call("GET", "/api/sessions/s1/events?limit=100000", nil, nil, &page); code != 200 {
		t.Errorf("large limit: %d", code)
	}
	// A session with no events yet is an empty page (viewers may poll early).
	if code := e.call("GET", "/api/sessions/later/events", nil, nil, &page); code != 200 || len(page.Events) != 0 {
		t.Errorf("unknown session events: %d %+v", code, page)
	}
	var empty map[string]json.RawMessage
	e2 := newEnv(t)
	e2.call("GET", "/api/sessions", nil, nil, &empty)
	if string(empty["sessions"]) != "[]" {
		t.Errorf("no sessions: %s, want []", empty["sessions"])
	}
}

// routes lists every route with a method that reaches its handler.
var routes = []struct{ method, path string }{
	{"POST", "/api/sessions/s1/events"},
	{"POST", "/api/sessions/s1/events/batch"},
	{"GET", "/api/sessions"},
	{"GET", "/api/sessions/s1"},
	{"GET", "/api/sessions/s1/events"},
	{"GET", "/api/sessions/s1/stream"},
	{"GET", "/api/stream"},
	{"GET", "/api/whoami"},
	{"GET", "/api/approvals"},
	{"GET", "/api/approvals/decisions?ids=a1&wait=0"},
	{"GET", "/api/approvals/a1"},
	{"POST", "/api/approvals/a1/decision"},
	{"GET", "/metrics"},
	{"GET", "/"},
	{"GET", "/sessions/s1"},
	{"GET", "/static/app.css"},
	{"GET", "/static/session.js"},
	{"GET", "/nonexistent"},
}

func TestAuthOnEveryRoute(t *testing.T) {
	e := newEnv(t)
	e.post("s1", envelope("s1", 1, "x", map[string]any{}))
	cookie := e.login(t, testToken)
	for _, r := range routes {
		t.Run(r.method+" "+r.path, func(t *testing.T) {
			for _, c := range []struct {
				name string
				hdr  map[string]string
			}{
				{"no token", map[string]string{"Authorization": ""}},
				{"bad token", map[string]string{"Authorization": "Bearer wrong"}},
				{"empty bearer", map[string]string{"Authorization": "Bearer "}},
				{"bad cookie", map[string]string{"Authorization": "", "Cookie": CookieName + "=forged"}},
				{"raw token as cookie", map[string]string{"Authorization": "", "Cookie": CookieName + "=" + testToken}},
			} {
				resp := e.do(r.method, r.path, nil, c.hdr)
				resp.Body.Close()
				if resp.StatusCode != 401 {
					t.Errorf("%s: status %d, want 401", c.name, resp.StatusCode)
				}
			}
			// The cookie works for reads only: a cross-site form must not be
			// able to post events with a browser's cookie. A decision
			// without the dashboard's header and origin is refused (403).
			resp := e.do(r.method, r.path, nil, map[string]string{"Authorization": "", "Cookie": cookie})
			resp.Body.Close()
			if r.method == "GET" && resp.StatusCode == 401 {
				t.Errorf("cookie on GET: 401")
			}
			want := 401
			if strings.HasSuffix(r.path, "/decision") {
				want = 403
			}
			if r.method == "POST" && resp.StatusCode != want {
				t.Errorf("cookie on POST: %d, want %d", resp.StatusCode, want)
			}
		})
	}
	resp := e.do("GET", "/healthz", nil, map[string]string{"Authorization": ""})
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/healthz without a token: %d, want 200", resp.StatusCode)
	}
}

func TestNoTokensRefusesEverything(t *testing.T) {
	e := newEnv(t)
	e.setTokens() // nothing configured
	for _, r := range append(routes, struct{ method, path string }{"GET", "/login"}, struct{ method, path string }{"POST", "/login"}) {
		for _, hdr := range []map[string]string{nil, {"Authorization": "Bearer "}, {"Authorization": ""}} {
			resp := e.do(r.method, r.path, nil, hdr)
			resp.Body.Close()
			if resp.StatusCode != 401 {
				t.Errorf("%s %s with no tokens configured: %d, want 401", r.method, r.path, resp.StatusCode)
			}
		}
	}
	var eb errorBody
	e.call("GET", "/api/sessions", nil, nil, &eb)
	if !strings.Contains(eb.Error, "no tokens configured") {
		t.Errorf("401 reason %q does not say why", eb.Error)
	}
	resp := e.do("GET", "/healthz", nil, nil)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/healthz: %d", resp.StatusCode)
	}
	// A browser gets the login page saying why.
	resp = e.do("GET", "/", nil, map[string]string{"Authorization": "", "Accept": "text/html"})
	body := readAll(t, resp)
	if resp.StatusCode != 401 || !strings.Contains(body, "no tokens configured") {
		t.Errorf("page with no tokens: %d %q", resp.StatusCode, body)
	}
}

func TestLogin(t *testing.T) {
	e := newEnv(t)
	noAuth := map[string]string{"Authorization": ""}

	resp := e.do("GET", "/login", nil, noAuth)
	body := readAll(t, resp)
	if resp.StatusCode != 200 || !strings.Contains(body, `name="token"`) {
		t.Fatalf("GET /login: %d %q", resp.StatusCode, body)
	}

	// A page without auth shows the form (401) and remembers where to go.
	resp = e.do("GET", "/sessions/s1", nil, map[string]string{"Authorization": "", "Accept": "text/html"})
	body = readAll(t, resp)
	if resp.StatusCode != 401 || !strings.Contains(body, `value="/sessions/s1"`) {
		t.Fatalf("page without auth: %d %q", resp.StatusCode, body)
	}

	form := func(token, next string) []byte {
		return []byte(url.Values{"token": {token}, "next": {next}}.Encode())
	}
	formHdr := e.formHdr()

	resp = e.do("POST", "/login", form("wrong", ""), formHdr)
	body = readAll(t, resp)
	if resp.StatusCode != 401 || !strings.Contains(body, "Wrong token") || len(resp.Cookies()) != 0 {
		t.Fatalf("wrong token: %d %q cookies %v", resp.StatusCode, body, resp.Cookies())
	}

	resp = e.do("POST", "/login", form(testToken, ""), formHdr)
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("login: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	cs := resp.Cookies()
	if len(cs) != 1 {
		t.Fatalf("cookies %v", cs)
	}
	c := cs[0]
	if c.Name != CookieName || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.MaxAge <= 0 {
		t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/", c)
	}
	if strings.Contains(c.Value, testToken) {
		t.Error("the cookie carries the token itself")
	}
	var list sessionsResponse
	if code := e.call("GET", "/api/sessions", nil, map[string]string{"Authorization": "", "Cookie": c.Name + "=" + c.Value}, &list); code != 200 {
		t.Errorf("API read with the cookie: %d", code)
	}
	// Rotating the token logs browsers out.
	e.setTokens("new-token")
	if code := e.call("GET", "/api/sessions", nil, map[string]string{"Authorization": "", "Cookie": c.Name + "=" + c.Value}, nil); code != 401 {
		t.Errorf("cookie after rotation: %d, want 401", code)
	}
	e.setTokens(testToken)

	for next, want := range map[string]string{
		"/sessions/abc?x=1":    "/sessions/abc?x=1",
		"//evil.example":       "/",
		"/\\evil.example":      "/",
		"https://evil.example": "/",
		"/login":               "/",
	} {
		resp = e.do("POST", "/login", form(testToken, next), formHdr)
		resp.Body.Close()
		if got := resp.Header.Get("Location"); got != want {
			t.Errorf("next %q: redirect to %q, want %q", next, got, want)
		}
	}

	resp = e.do("POST", "/logout", nil, e.formHdr())
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 || resp.Cookies()[0].MaxAge >= 0 {
		t.Errorf("logout: %d %v", resp.StatusCode, resp.Cookies())
	}
}

func TestMetrics(t *testing.T) {
	e := newEnv(t)
	ev := envelope("s1", 1, "x", map[string]any{})
	e.post("s1", ev)
	e.call("POST", "/api/sessions/s1/events", ev.json(), nil, nil)                           // duplicate
	e.call("POST", "/api/sessions/s1/events", ev.with("seq", 0).json(), nil, nil)            // rejected
	e.call("GET", "/api/sessions", nil, map[string]string{"Authorization": "Bearer x"}, nil) // auth failure
	s := e.openStream("/api/sessions/s1/stream", nil)
	s.next(t, 5*time.Second)

	resp := e.do("GET", "/metrics", nil, nil)
	body := readAll(t, resp)
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	for _, want := range []string{
		"claude_relay_backend_events_ingested_total 1",
		"claude_relay_backend_events_duplicate_total 1",
		`claude_relay_backend_events_rejected_total{reason="bad_seq"} 1`,
		`claude_relay_backend_events_rejected_total{reason="too_large"} 0`,
		`claude_relay_backend_ingest_duration_seconds_bucket{endpoint="single"`,
		`claude_relay_backend_sse_clients{stream="session"} 1`,
		"claude_relay_backend_auth_failures_total 1",
		"go_goroutines",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var b strings.Builder
	if _, err := io.Copy(&b, resp.Body); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
