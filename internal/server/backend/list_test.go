package backend

import (
	"encoding/base64"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

// run is one background run of a test session, as the helper posts it:
// relay.run_started, the CLI's system/init, one tool call, the result and
// relay.run_completed (or only the start, while running).
type run struct {
	session, prompt, cwd, model, tool string
	cost                              float64
	tokens                            int64
	at                                time.Time // the events' timestamps; zero: now
	running                           bool
}

// post sends r's events, with seq numbers from 1 in interaction "i1".
func (e *env) postRun(r run) {
	e.t.Helper()
	conv := "conv-" + r.session
	at := r.at
	if at.IsZero() {
		at = time.Now().UTC()
	}
	evs := []wire{
		envelope(r.session, 1, "relay.run_started", map[string]any{"run_id": "run-" + r.session, "prompt": r.prompt, "cwd": r.cwd, "model": r.model}),
		envelope(r.session, 2, "system", map[string]any{"type": "system", "subtype": "init", "session_id": conv, "model": r.model, "cwd": r.cwd}),
		envelope(r.session, 3, "assistant", map[string]any{"type": "assistant", "session_id": conv, "message": map[string]any{
			"role": "assistant", "model": r.model, "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": r.tool, "input": map[string]any{}}}}}),
	}
	if !r.running {
		evs = append(evs,
			envelope(r.session, 4, "result", map[string]any{"type": "result", "subtype": "success", "session_id": conv,
				"total_cost_usd": r.cost, "num_turns": 1, "usage": map[string]any{"input_tokens": r.tokens, "output_tokens": 1},
				"modelUsage": map[string]any{r.model: map[string]any{"inputTokens": r.tokens, "outputTokens": 1, "costUSD": r.cost}}}),
			envelope(r.session, 5, "relay.run_completed", map[string]any{"run_id": "run-" + r.session, "status": "completed",
				"result": map[string]any{"exitCode": 0}}),
		)
	}
	for i, ev := range evs {
		e.post(r.session, ev.with("timestamp", at.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano)))
	}
}

// list calls GET /api/sessions?query and returns the IDs, the next cursor
// and the status.
func (e *env) list(query string) ([]string, string, int) {
	e.t.Helper()
	var resp sessionsResponse
	code := e.call("GET", "/api/sessions?"+query, nil, nil, &resp)
	ids := make([]string, len(resp.Sessions))
	for i, s := range resp.Sessions {
		ids[i] = s.ID
	}
	return ids, resp.Next, code
}

func TestListBadParams(t *testing.T) {
	e := newEnv(t)
	e.postRun(run{session: "s1", prompt: "hello", cwd: "/p", model: "m", tool: "Bash"})
	b64 := base64.RawURLEncoding.EncodeToString
	for _, tt := range []struct{ query, name, value string }{
		{"limit=0", "limit", "0"},
		{"limit=ten", "limit", "ten"},
		{"status=done", "status", "done"},
		{"from=yesterday", "from", "yesterday"},
		{"to=2026-13-01", "to", "2026-13-01"},
		{"from=2026-11-21T10:00:00", "from", "2026-11-21T10:00:00"}, // no zone
		{"from=2026-11-22&to=2026-11-21", "to", "2026-11-21"},
		{"from=2026-11-21T10:00:00Z&to=2026-11-21T10:00:00Z", "to", "2026-11-21T10:00:00Z"},
		{"after=%21%21", "after", "!!"},
		{"after=" + b64([]byte("no-colon")), "after", b64([]byte("no-colon"))},
		{"after=" + b64([]byte("abc:s1")), "after", b64([]byte("abc:s1"))},
		{"after=" + b64([]byte("123:")), "after", b64([]byte("123:"))},
		{"after=x.y", "after", "x.y"},
		{"q=" + strings.Repeat("x", maxQueryLen+1), "q", strings.Repeat("x", 10)},
		{"q=%FF", "q", `\xff`},
	} {
		t.Run(tt.query[:min(len(tt.query), 40)], func(t *testing.T) {
			var eb errorBody
			code := e.call("GET", "/api/sessions?"+tt.query, nil, nil, &eb)
			if code != 400 {
				t.Fatalf("status %d, want 400 (%+v)", code, eb)
			}
			// The reason names the parameter, the value sent and what is allowed.
			if !strings.HasPrefix(eb.Error, tt.name+" must be ") || !strings.Contains(eb.Error, tt.value) {
				t.Errorf("reason %q does not name %s and %q", eb.Error, tt.name, tt.value)
			}
		})
	}
	// Every accepted form of a time, and every status.
	for _, q := range []string{"from=2026-11-21", "to=2026-11-21", "from=2026-11-21T10:00:00Z", "from=" + url.QueryEscape("2026-11-21T10:00:00.5+02:00"),
		"status=running", "status=completed", "status=failed", "status=cancelled", "status=unknown", "limit=100000", "q=%20%20"} {
		if _, _, code := e.list(q); code != 200 {
			t.Errorf("?%s: %d, want 200", q, code)
		}
	}
}

func TestListOptionsParsed(t *testing.T) {
	c := store.ListCursor{UpdatedAt: time.Date(2026, 11, 21, 22, 14, 26, 729123456, time.UTC), ID: "s:1"}
	q := url.Values{
		"q": {"  flaky test  "}, "status": {"failed"}, "project": {"/work/app"},
		"from": {"2026-11-20"}, "to": {"2026-11-21"}, "limit": {"20"}, "after": {encodeListCursor(c)},
	}
	got, err := listOptions(q)
	if err != nil {
		t.Fatal(err)
	}
	want := store.ListOptions{
		Limit: 20, Query: "flaky test", Status: "failed", Project: "/work/app",
		From:  time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC),
		To:    time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC), // a date in to includes that day
		After: &c,
	}
	if got.Limit != want.Limit || got.Query != want.Query || got.Status != want.Status || got.Project != want.Project ||
		!got.From.Equal(want.From) || !got.To.Equal(want.To) || got.After == nil ||
		!got.After.UpdatedAt.Equal(c.UpdatedAt) || got.After.ID != c.ID {
		t.Errorf("listOptions = %+v (after %+v)\nwant %+v", got, got.After, want)
	}
	got, err = listOptions(url.Values{"to": {"2026-11-21T10:00:00Z"}})
	if err != nil || !got.To.Equal(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("an instant in to is taken as is: %v %v", got.To, err)
	}
	if got, _ := listOptions(url.Values{}); got.Limit != defaultSessionsLimit || got.After != nil {
		t.Errorf("defaults: %+v", got)
	}
}

func TestListCursorRoundTrip(t *testing.T) {
	for _, c := range []store.ListCursor{
		{UpdatedAt: time.Date(2026, 11, 21, 22, 14, 26, 729123456, time.UTC), ID: "s1"},
		{UpdatedAt: time.Unix(1, 1).UTC(), ID: "a:b:c"},
		{UpdatedAt: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), ID: "séance/ünïcode id"},
	} {
		s := encodeListCursor(c)
		if strings.ContainsAny(s, "+/=") {
			t.Errorf("cursor %q is not URL-safe", s)
		}
		got, err := decodeListCursor(s)
		if err != nil || !got.UpdatedAt.Equal(c.UpdatedAt) || got.ID != c.ID {
			t.Errorf("round trip of %+v: %+v, %v", c, got, err)
		}
	}
}

func FuzzDecodeListCursor(f *testing.F) {
	f.Add(encodeListCursor(store.ListCursor{UpdatedAt: time.Unix(0, 42), ID: "x"}))
	f.Add("")
	f.Add("!!")
	f.Add(base64.RawURLEncoding.EncodeToString([]byte("-1:x")))
	f.Fuzz(func(t *testing.T, s string) {
		c, err := decodeListCursor(s)
		if err != nil {
			return
		}
		// What decodes re-encodes to a cursor that decodes the same.
		again, err := decodeListCursor(encodeListCursor(c))
		if err != nil || !again.UpdatedAt.Equal(c.UpdatedAt) || again.ID != c.ID {
			t.Errorf("%q decodes to %+v, which does not round-trip: %+v %v", s, c, again, err)
		}
	})
}

// stores are the stores the list and usage API tests run on: the fake
// and the default SQL store (PostgreSQL runs the same SQL behind
// storetest).
var stores = []struct {
	name string
	env  func(*testing.T) *env
}{
	{"memory", func(t *testing.T) *env { return newEnv(t) }},
	{"sqlite", func(t *testing.T) *env { return newEnvWith(t, openSQLite(t)) }},
}

// eachStore runs test once per store.
func eachStore(t *testing.T, test func(*testing.T, *env)) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) { test(t, st.env(t)) })
	}
}

// TestListPaging walks the list in pages: every session once, in the
// order of the unpaged list, and next is empty on the last page, also
// when the last page is full.
func TestListPaging(t *testing.T) { eachStore(t, testListPaging) }

func testListPaging(t *testing.T, e *env) {
	for i := 1; i <= 6; i++ {
		e.postRun(run{session: "p" + strconv.Itoa(i), prompt: "task " + strconv.Itoa(i), cwd: "/p", model: "m", tool: "Bash"})
	}
	all, next, code := e.list("")
	if code != 200 || len(all) != 6 || next != "" {
		t.Fatalf("unpaged: %d %v next %q", code, all, next)
	}
	for _, limit := range []int{1, 2, 3, 4, 6, 7} {
		var got []string
		after := ""
		pages := 0
		for {
			q := "limit=" + strconv.Itoa(limit)
			if after != "" {
				q += "&after=" + url.QueryEscape(after)
			}
			ids, next, code := e.list(q)
			if code != 200 {
				t.Fatalf("limit %d page %d: status %d", limit, pages+1, code)
			}
			pages++
			got = append(got, ids...)
			if next == "" {
				break
			}
			if len(ids) != limit {
				t.Fatalf("limit %d: a short page (%v) has a next", limit, ids)
			}
			if pages > 10 {
				t.Fatal("paging does not end")
			}
			after = next
		}
		if strings.Join(got, ",") != strings.Join(all, ",") {
			t.Errorf("limit %d: pages give %v, want %v", limit, got, all)
		}
		if want := (6 + limit - 1) / limit; pages != want {
			t.Errorf("limit %d: %d pages, want %d (no empty page at the end)", limit, pages, want)
		}
	}
	// A session that changes while someone pages moves to the front; the
	// pages after the cursor still hold everything older, once.
	first, next, _ := e.list("limit=2")
	e.post(all[5], envelope(all[5], 6, "assistant", map[string]any{"type": "assistant"}))
	rest, _, _ := e.list("limit=10&after=" + url.QueryEscape(next))
	if strings.Join(append(first, rest...), ",") != strings.Join(all[:5], ",") {
		t.Errorf("after an update: %v then %v, want %v", first, rest, all[:5])
	}
}

// TestListFilters: every filter narrows the list the way the dashboard's
// controls promise, and they combine.
func TestListFilters(t *testing.T) { eachStore(t, testListFilters) }

func testListFilters(t *testing.T, e *env) {
	e.postRun(run{session: "alpha", prompt: "Fix the flaky login test", cwd: "/work/app", model: "claude-sonnet-4-5", tool: "Bash", cost: 0.5})
	e.postRun(run{session: "beta", prompt: "Write the release notes", cwd: "/work/docs", model: "claude-opus-4-1", tool: "WebFetch", cost: 1})
	e.postRun(run{session: "gamma", prompt: "Refactor the parser", cwd: "/work/app", model: "claude-sonnet-4-5", tool: "Edit", running: true})

	today := time.Now().UTC().Format(time.DateOnly)
	tomorrow := time.Now().UTC().AddDate(0, 0, 1).Format(time.DateOnly)
	yesterday := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly)
	for _, tt := range []struct{ query, want string }{
		{"", "gamma,beta,alpha"},
		{"q=flaky", "alpha"},
		{"q=FLAKY", "alpha"},        // case-insensitive
		{"q=release+notes", "beta"}, // a phrase of the prompt
		{"q=WebFetch", "beta"},      // a tool name
		{"q=edit", "gamma"},         // a tool name, any case
		{"q=bet", "beta"},           // the session ID
		{"q=conv-alpha", "alpha"},   // the conversation ID
		{"q=nothing-like-this", ""}, // no match
		{"status=running", "gamma"}, // status
		{"status=completed", "beta,alpha"},
		{"status=failed", ""},
		{"project=%2Fwork%2Fapp", "gamma,alpha"},
		{"project=%2Fwork", ""}, // exact directory, not a prefix
		{"from=" + today, "gamma,beta,alpha"},
		{"to=" + today, "gamma,beta,alpha"}, // a date in to includes today
		{"from=" + tomorrow, ""},
		{"to=" + yesterday, ""},
		{"q=the&project=%2Fwork%2Fapp&status=completed", "alpha"},
	} {
		ids, next, code := e.list(tt.query)
		if code != 200 || strings.Join(ids, ",") != tt.want || next != "" {
			t.Errorf("?%s: %d %v next %q, want %q", tt.query, code, ids, next, tt.want)
		}
	}
	// Filters page like the whole list.
	ids, next, _ := e.list("project=%2Fwork%2Fapp&limit=1")
	more, last, _ := e.list("project=%2Fwork%2Fapp&limit=1&after=" + url.QueryEscape(next))
	if strings.Join(append(ids, more...), ",") != "gamma,alpha" || last != "" {
		t.Errorf("filtered pages: %v %v next %q", ids, more, last)
	}

	// The listed sessions carry what the dashboard shows.
	var resp sessionsResponse
	e.call("GET", "/api/sessions?q=flaky", nil, nil, &resp)
	if len(resp.Sessions) != 1 {
		t.Fatalf("q=flaky: %+v", resp)
	}
	s := resp.Sessions[0]
	if s.Title != "Fix the flaky login test" || s.Project != "/work/app" || s.Source != "background" ||
		s.Model != "claude-sonnet-4-5" || s.Turns != 1 || s.CostUSD != 0.5 || s.Status != "completed" {
		t.Errorf("listed session %+v", s)
	}
}

var serverTiming = regexp.MustCompile(`^db;dur=\d+(\.\d+)?$`)

// TestListServerTiming: the store's time is in a Server-Timing header (the
// dashboard and BenchmarkListSearch read it), and the answer keeps the old
// shape with "next" added.
func TestListServerTiming(t *testing.T) {
	e := newEnv(t)
	e.postRun(run{session: "s1", prompt: "hello", cwd: "/p", model: "m", tool: "Bash"})
	resp := e.do("GET", "/api/sessions?q=hello", nil, nil)
	body := readAll(t, resp)
	if st := resp.Header.Get("Server-Timing"); !serverTiming.MatchString(st) {
		t.Errorf("Server-Timing %q, want db;dur=<ms>", st)
	}
	if !strings.Contains(body, `"sessions":[{`) || !strings.Contains(body, `"next":""`) {
		t.Errorf("answer %s", body)
	}
}
