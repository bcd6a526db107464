package backend

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/server/store/sqlite"
)

// openSQLite opens a fresh SQLite store for t.
func openSQLite(t testing.TB) store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "relay.db"))
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	return st
}

// TestEndToEndSQLite runs the API over the real default store: ingest with
// duplicates, batch, reads, the derived session and a resumed live stream.
func TestEndToEndSQLite(t *testing.T) {
	st := openSQLite(t)
	e := newEnvWith(t, st)

	conv := "3f1c2b9a-0d4e-4a56-8b7c-9e0f1a2b3c4d"
	first := envelope("s1", 1, "system", map[string]any{"type": "system", "subtype": "init", "session_id": conv})
	e.post("s1", first)
	if code := e.call("POST", "/api/sessions/s1/events", first.json(), nil, nil); code != 200 {
		t.Fatalf("duplicate: %d, want 200", code)
	}
	batch := []json.RawMessage{
		envelope("s1", 2, "assistant", map[string]any{"type": "assistant", "session_id": conv}).json(),
		first.json(),
		envelope("s1", 3, "result", map[string]any{"type": "result", "subtype": "success", "session_id": conv,
			"total_cost_usd": 0.5, "usage": map[string]any{"input_tokens": 10, "output_tokens": 5}}).json(),
		envelope("s1", 0, "bad", map[string]any{}).json(),
	}
	body, _ := json.Marshal(map[string]any{"events": batch})
	var br batchResponse
	if code := e.call("POST", "/api/sessions/s1/events/batch", body, nil, &br); code != 200 {
		t.Fatalf("batch: %d", code)
	}
	var statuses []int
	for _, r := range br.Results {
		statuses = append(statuses, r.Status)
	}
	if len(statuses) != 4 || statuses[0] != 201 || statuses[1] != 200 || statuses[2] != 201 || statuses[3] != 400 {
		t.Fatalf("batch statuses %v, want [201 200 201 400]", statuses)
	}

	var sess store.Session
	if code := e.call("GET", "/api/sessions/s1", nil, nil, &sess); code != 200 {
		t.Fatalf("session: %d", code)
	}
	if sess.EventCount != 3 || sess.ExternalConversationID != conv || sess.LastCursor != 3 {
		t.Errorf("session %+v", sess)
	}
	var page eventsResponse
	e.call("GET", "/api/sessions/s1/events?after=1&limit=10", nil, nil, &page)
	if len(page.Events) != 2 || page.Events[0].Cursor != 2 || page.Next != 3 {
		t.Fatalf("events page %+v", page)
	}

	s := e.openStream("/api/sessions/s1/stream", map[string]string{"Last-Event-ID": "2"})
	if ev := s.next(t, wait).event(t); ev.Cursor != 3 {
		t.Fatalf("resumed at cursor %d, want 3", ev.Cursor)
	}
	e.post("s1", envelope("s1", 4, "relay.run_completed", map[string]any{"result": map[string]any{"exitCode": 0}}))
	if ev := s.next(t, wait).event(t); ev.Cursor != 4 || ev.EventType != "relay.run_completed" {
		t.Fatalf("live event %+v", ev)
	}
	var list sessionsResponse
	if e.call("GET", "/api/sessions", nil, nil, &list); len(list.Sessions) != 1 {
		t.Fatalf("sessions %+v", list)
	}
}
