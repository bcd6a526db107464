package backend

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestIngestSingle(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxEventBytes = 4096 })
	base := envelope("s1", 1, "assistant", map[string]any{"type": "assistant"})
	dup := envelope("s1", 2, "assistant", map[string]any{"type": "assistant"})
	e.post("s1", dup) // stored before the table runs

	tests := []struct {
		name    string
		path    string
		body    []byte
		hdr     map[string]string
		status  int
		errLike string // part of the 400 message
		dup     bool
	}{
		{name: "stored", body: base.json(), status: 201},
		{name: "duplicate", body: dup.json(), status: 200, dup: true},
		{name: "empty session_id takes the path's", body: envelope("", 3, "user", map[string]any{}).json(), status: 201},
		{name: "idempotency key matches", body: envelope("s1", 4, "x", map[string]any{}).json(), hdr: map[string]string{"Idempotency-Key": "match"}, status: 201},
		{name: "extra fields ignored", body: envelope("s1", 5, "x", map[string]any{}).with("future", 1).json(), status: 201},
		{name: "timestamp without fraction", body: envelope("s1", 6, "x", map[string]any{}).with("timestamp", "2026-11-21T22:14:26Z").json(), status: 201},
		{name: "timestamp with offset", body: envelope("s1", 7, "x", map[string]any{}).with("timestamp", "2026-11-21T22:14:26.5+02:00").json(), status: 201},

		{name: "session mismatch", body: base.with("session_id", "other").with("event_id", "e-mismatch").json(), status: 400, errLike: "does not match the path"},
		{name: "missing event_id", body: base.with("event_id", nil).json(), status: 400, errLike: "event_id"},
		{name: "bad event_id", body: base.with("event_id", "a b\n").json(), status: 400, errLike: "event_id"},
		{name: "seq zero", body: base.with("seq", 0).json(), status: 400, errLike: "seq"},
		{name: "seq negative", body: base.with("seq", -3).json(), status: 400, errLike: "seq"},
		{name: "seq string", body: base.with("seq", "1").json(), status: 400, errLike: "seq"},
		{name: "seq fraction", body: base.with("seq", 1.5).json(), status: 400, errLike: "seq"},
		{name: "seq missing", body: base.with("seq", nil).json(), status: 400, errLike: "seq"},
		{name: "event_type missing", body: base.with("event_type", nil).json(), status: 400, errLike: "event_type"},
		{name: "event_data array", body: base.with("event_data", []int{1}).json(), status: 400, errLike: "event_data"},
		{name: "event_data string", body: base.with("event_data", "x").json(), status: 400, errLike: "event_data"},
		{name: "event_data missing", body: base.with("event_data", nil).json(), status: 400, errLike: "event_data"},
		{name: "timestamp not RFC 3339", body: base.with("timestamp", "21/11/2026").json(), status: 400, errLike: "RFC 3339"},
		{name: "timestamp number", body: base.with("timestamp", 1700000000).json(), status: 400, errLike: "timestamp"},
		{name: "timestamp missing", body: base.with("timestamp", nil).json(), status: 400, errLike: "timestamp"},
		{name: "source unknown", body: base.with("source", "cli").json(), status: 400, errLike: "source"},
		{name: "not JSON", body: []byte("{nope"), status: 400, errLike: "JSON"},
		{name: "JSON array", body: []byte("[]"), status: 400, errLike: "JSON"},
		{name: "trailing garbage", body: append(base.json(), 'x'), status: 400, errLike: "JSON"},
		{name: "idempotency key mismatch", body: base.json(), hdr: map[string]string{"Idempotency-Key": "other-id"}, status: 400, errLike: "Idempotency-Key"},
		{name: "over the size limit", body: envelope("s1", 9, "x", map[string]any{"pad": strings.Repeat("a", 5000)}).json(), status: 413},
		{name: "over the limit, chunked", body: nil, hdr: map[string]string{"X-Chunked": "1"}, status: 413},
		{name: "session id with control char", path: "/api/sessions/a%01b/events", body: base.json(), status: 400, errLike: "session id"},
		{name: "no token", body: base.json(), hdr: map[string]string{"Authorization": ""}, status: 401},
		{name: "wrong token", body: base.json(), hdr: map[string]string{"Authorization": "Bearer nope"}, status: 401},
		{name: "token as Basic", body: base.json(), hdr: map[string]string{"Authorization": "Basic " + testToken}, status: 401},
		{name: "token prefix", body: base.json(), hdr: map[string]string{"Authorization": "Bearer " + testToken[:5]}, status: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.path
			if path == "" {
				path = "/api/sessions/s1/events"
			}
			var resp *http.Response
			if tt.hdr["X-Chunked"] != "" {
				resp = e.chunked(path, bytes.Repeat([]byte(" "), 10000))
			} else {
				body := tt.body
				if tt.hdr["Idempotency-Key"] == "match" {
					var w map[string]any
					_ = json.Unmarshal(body, &w)
					tt.hdr = map[string]string{"Idempotency-Key": w["event_id"].(string)}
				}
				resp = e.do("POST", path, body, tt.hdr)
			}
			defer resp.Body.Close()
			var out struct {
				ingestResponse
				Error string `json:"error"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&out)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d (%q), want %d", resp.StatusCode, out.Error, tt.status)
			}
			switch tt.status {
			case 201, 200:
				if out.EventID == "" || out.Cursor < 1 || out.Duplicate != tt.dup {
					t.Errorf("answer %+v, want event_id, cursor >= 1, duplicate=%v", out, tt.dup)
				}
			case 400:
				if !strings.Contains(out.Error, tt.errLike) {
					t.Errorf("error %q does not mention %q", out.Error, tt.errLike)
				}
			case 401:
				if resp.Header.Get("WWW-Authenticate") == "" {
					t.Error("401 without WWW-Authenticate")
				}
			}
		})
	}

	// The duplicate kept its first cursor and nothing was stored twice.
	var page eventsResponse
	e.call("GET", "/api/sessions/s1/events?limit=1000", nil, nil, &page)
	seen := map[string]bool{}
	for _, ev := range page.Events {
		if seen[ev.EventID] {
			t.Errorf("event %s stored twice", ev.EventID)
		}
		seen[ev.EventID] = true
		if ev.SessionID != "s1" {
			t.Errorf("event %s has session %q", ev.EventID, ev.SessionID)
		}
	}
	if len(page.Events) != 7 {
		t.Errorf("%d events stored, want 7", len(page.Events))
	}
}

// chunked posts body without a Content-Length, so only MaxBytesReader can
// catch the size.
func (e *env) chunked(path string, body []byte) *http.Response {
	e.t.Helper()
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write(body)
		_ = pw.Close()
	}()
	req, _ := http.NewRequest("POST", e.ts.URL+path, pr)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

func TestIngestSecondTokenAndReload(t *testing.T) {
	e := newEnv(t)
	e.setTokens("first-token", testToken)
	e.post("s1", envelope("s1", 1, "x", map[string]any{}))
	e.setTokens("rotated")
	if code := e.call("POST", "/api/sessions/s1/events", envelope("s1", 2, "x", map[string]any{}).json(), nil, nil); code != 401 {
		t.Fatalf("old token after reload: %d, want 401", code)
	}
	code := e.call("POST", "/api/sessions/s1/events", envelope("s1", 2, "x", map[string]any{}).json(),
		map[string]string{"Authorization": "Bearer rotated"}, nil)
	if code != 201 {
		t.Fatalf("new token after reload: %d, want 201", code)
	}
}

func TestBatch(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxEventBytes, o.MaxBatchBytes = 2048, 16384 })
	old := envelope("s1", 1, "x", map[string]any{})
	e.post("s1", old)
	appendsBefore := e.store.Appends

	a := envelope("s1", 2, "assistant", map[string]any{"n": 1})
	b := envelope("s1", 3, "assistant", map[string]any{"n": 2})
	events := []json.RawMessage{
		a.json(),                // 201
		old.json(),              // 200: stored before
		b.with("seq", 0).json(), // 400: bad seq, names its event_id
		b.json(),                // 201
		a.json(),                // 200: earlier in this batch
		envelope("s2", 4, "x", map[string]any{}).json(), // 400: other session
		json.RawMessage(`"not an object"`),              // 400
	}
	body, _ := json.Marshal(map[string]any{"events": events})
	var out batchResponse
	if code := e.call("POST", "/api/sessions/s1/events/batch", body, nil, &out); code != 200 {
		t.Fatalf("batch status %d", code)
	}
	want := []struct {
		status int
		dup    bool
		id     string
	}{
		{201, false, a["event_id"].(string)},
		{200, true, old["event_id"].(string)},
		{400, false, b["event_id"].(string)},
		{201, false, b["event_id"].(string)},
		{200, true, a["event_id"].(string)},
		{400, false, ""},
		{400, false, ""},
	}
	if len(out.Results) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(out.Results), len(want), out.Results)
	}
	for i, w := range want {
		r := out.Results[i]
		if r.Status != w.status || r.Duplicate != w.dup {
			t.Errorf("result %d: %+v, want status %d duplicate %v", i, r, w.status, w.dup)
		}
		if w.id != "" && r.EventID != w.id {
			t.Errorf("result %d: event_id %q, want %q", i, r.EventID, w.id)
		}
		if w.status == 400 && r.Error == "" {
			t.Errorf("result %d: 400 without a reason", i)
		}
		if w.status != 400 && r.Cursor < 1 {
			t.Errorf("result %d: no cursor", i)
		}
	}
	if out.Results[1].Cursor != 1 || out.Results[4].Cursor != out.Results[0].Cursor {
		t.Errorf("duplicates must carry the original cursor: %+v", out.Results)
	}
	if got := e.store.Appends - appendsBefore; got != 1 {
		t.Errorf("%d Append calls for one batch, want 1", got)
	}

	for _, tt := range []struct {
		name   string
		body   string
		status int
	}{
		{"empty", `{"events":[]}`, 400},
		{"missing", `{}`, 400},
		{"not JSON", `{"events":`, 400},
		{"over the batch limit", `{"events":["` + strings.Repeat("x", 8*2048) + `"]}`, 413},
		{"an event over the event limit", `{"events":[` + string(envelope("s1", 5, "x", map[string]any{}).json()) + `,` +
			string(envelope("s1", 6, "x", map[string]any{"pad": strings.Repeat("z", 3000)}).json()) + `]}`, 413},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if code := e.call("POST", "/api/sessions/s1/events/batch", []byte(tt.body), nil, nil); code != tt.status {
				t.Errorf("status %d, want %d", code, tt.status)
			}
		})
	}
}

func TestStoreFailures(t *testing.T) {
	e := newEnv(t)
	e.store.AppendErr = errors.New("disk on fire")
	if code := e.call("POST", "/api/sessions/s1/events", envelope("s1", 1, "x", map[string]any{}).json(), nil, nil); code != 500 {
		t.Errorf("store error: %d, want 500", code)
	}
	e.store.AppendErr = nil
	_ = e.store.Close()
	resp := e.do("POST", "/api/sessions/s1/events", envelope("s1", 1, "x", map[string]any{}).json(), nil)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("closed store: %d (Retry-After %q), want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

func TestParseEventFillsSession(t *testing.T) {
	ev, rerr := parseEvent(envelope("", 3, "user", map[string]any{"a": 1}).json(), "path-id")
	if rerr != nil {
		t.Fatal(rerr)
	}
	if ev.SessionID != "path-id" || ev.Seq != 3 || ev.Timestamp.Location().String() != "UTC" {
		t.Errorf("parsed %+v", ev)
	}
}
