package backend

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/internal/server/backend/memstore"
)

// FuzzParseEvent: whatever the body, parseEvent never panics, and what it
// accepts satisfies every rule of the envelope.
func FuzzParseEvent(f *testing.F) {
	f.Add([]byte(envelope("s1", 1, "assistant", map[string]any{"a": 1}).json()), "s1")
	f.Add([]byte(envelope("", 3, "x", map[string]any{}).json()), "p")
	f.Add([]byte(`{"event_id":"e","seq":1,"event_type":"t","event_data":{},"timestamp":"2026-01-01T00:00:00Z","source":"relay"}`), "s")
	f.Add([]byte(`{"seq":1e3}`), "s")
	f.Add([]byte(`null`), "")
	f.Fuzz(func(t *testing.T, raw []byte, path string) {
		ev, rerr := parseEvent(raw, path)
		if rerr != nil {
			if rerr.Reason == "" || rerr.Msg == "" {
				t.Fatalf("reject without reason: %+v", rerr)
			}
			return
		}
		switch {
		case ev.SessionID != path:
			t.Fatalf("session %q accepted under path %q", ev.SessionID, path)
		case ev.Seq < 1, !validEventID(ev.EventID), ev.EventType == "":
			t.Fatalf("accepted %+v", ev)
		case !json.Valid(ev.EventData) || bytes.TrimLeft(ev.EventData, " \t\r\n")[0] != '{':
			t.Fatalf("event_data %q accepted", ev.EventData)
		case ev.Source != "agent" && ev.Source != "terminal" && ev.Source != "relay":
			t.Fatalf("source %q accepted", ev.Source)
		case ev.Timestamp.IsZero() && !strings.Contains(string(raw), "0001-01-01"):
			t.Fatalf("no timestamp")
		}
	})
}

// FuzzDecodeBatch: a batch body never panics the decoder, and every event
// gets exactly one result.
func FuzzDecodeBatch(f *testing.F) {
	one := envelope("s1", 1, "x", map[string]any{}).json()
	f.Add([]byte(`{"events":[` + string(one) + `,"x",null,{}]}`))
	f.Add([]byte(`{"other":1,"events":[]}`))
	f.Add([]byte(`{"events":[{"seq":"1"}]} `))
	f.Add([]byte(`[]`))
	s := New(Options{Store: memstore.New(), MaxEventBytes: 512, MaxBatchBytes: 4096})
	f.Fuzz(func(t *testing.T, body []byte) {
		d := s.newBatchDecoder(httptest.NewRecorder(), httptest.NewRequest("POST", "/", bytes.NewReader(body)), "s1")
		status, rerr := d.decode()
		if rerr != nil {
			if status < 400 || (status == 413) != (rerr.Limit > 0 || rerr.Reason == reasonTooLarge) {
				t.Fatalf("status %d for %+v", status, rerr)
			}
			return
		}
		results, valid, index := d.results, d.valid, d.index
		if len(results) == 0 || len(valid) != len(index) {
			t.Fatalf("%d results, %d valid, %d index", len(results), len(valid), len(index))
		}
		bad := 0
		for _, r := range results {
			if r.Status == 400 {
				bad++
			}
		}
		if bad+len(valid) != len(results) {
			t.Fatalf("%d refused + %d valid != %d results", bad, len(valid), len(results))
		}
		for i, j := range index {
			if results[j].Status != 0 || results[j].EventID != valid[i].EventID {
				t.Fatalf("index %d -> %d mismatched", i, j)
			}
		}
	})
}

// With debug logging on, requests are logged, streams still flush through
// the logging wrapper, and neither the token nor a body reaches the log.
func TestDebugLogKeepsSecrets(t *testing.T) {
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := newEnv(t, func(o *Options) { o.Logger = log })
	secretText := "body-secret-5d1e"
	e.post("s1", envelope("s1", 1, "x", map[string]any{"text": secretText}))
	e.call("GET", "/api/sessions", nil, map[string]string{"Authorization": "Bearer wrong-token-value"}, nil)
	s := e.openStream("/api/sessions/s1/stream", nil)
	if ev := s.next(t, wait).event(t); ev.Cursor != 1 {
		t.Fatalf("stream through the log wrapper: cursor %d", ev.Cursor)
	}
	out := buf.String()
	if !strings.Contains(out, "backend: request") {
		t.Errorf("no request log at debug:\n%s", out)
	}
	for _, secret := range []string{testToken, "wrong-token-value", secretText} {
		if strings.Contains(out, secret) {
			t.Errorf("log contains %q:\n%s", secret, out)
		}
	}
}
