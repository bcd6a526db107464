package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

// testEventIDPerSession: an event_id is unique within its session only.
// The same ID in another session is another event (stored, with that
// session's cursor and content); a repeat in the same session is a
// duplicate with the first one's cursor, in one batch or across Appends.
func testEventIDPerSession(t *testing.T, s store.Store) {
	a1 := ev("eid-a", "i1", 1, "assistant", 0, `{"type":"assistant","n":"a"}`)
	b1 := a1
	b1.SessionID, b1.EventData = "eid-b", []byte(`{"type":"assistant","n":"b"}`)
	c1 := a1
	c1.SessionID, c1.EventData = "eid-c", []byte(`{"type":"assistant","n":"c"}`)
	a2 := ev("eid-a", "i1", 2, "assistant", 1, `{"type":"assistant"}`)
	id := a1.EventID
	steps := []struct {
		name   string
		events []store.Event
		want   []store.AppendResult
	}{
		{"first session", []store.Event{a1}, []store.AppendResult{{EventID: id, Cursor: 1}}},
		{"same ID, another session", []store.Event{b1}, []store.AppendResult{{EventID: id, Cursor: 1}}},
		{"repeat in the first", []store.Event{a1}, []store.AppendResult{{EventID: id, Cursor: 1, Duplicate: true}}},
		{"repeat in the second", []store.Event{b1}, []store.AppendResult{{EventID: id, Cursor: 1, Duplicate: true}}},
		{"one batch, three sessions", []store.Event{a2, c1, b1, c1, a1}, []store.AppendResult{
			{EventID: a2.EventID, Cursor: 2},
			{EventID: id, Cursor: 1},
			{EventID: id, Cursor: 1, Duplicate: true},
			{EventID: id, Cursor: 1, Duplicate: true},
			{EventID: id, Cursor: 1, Duplicate: true},
		}},
	}
	for _, st := range steps {
		if got := mustAppend(t, s, st.events...); !slices.Equal(got, st.want) {
			t.Errorf("%s: Append = %+v, want %+v", st.name, got, st.want)
		}
	}
	for sid, want := range map[string]string{"eid-a": `"a"`, "eid-b": `"b"`, "eid-c": `"c"`} {
		evs := mustEvents(t, s, sid, 0, 0)
		if len(evs) == 0 || evs[0].EventID != id || evs[0].SessionID != sid ||
			string(evs[0].EventData) != `{"type":"assistant","n":`+want+`}` {
			t.Errorf("%s: first event %+v; want event_id %s with that session's own data", sid, evs, id)
		}
		wantCount := int64(1)
		if sid == "eid-a" {
			wantCount = 2
		}
		if sess := mustSession(t, s, sid); sess.EventCount != wantCount || sess.LastCursor != wantCount {
			t.Errorf("%s: %d events, cursor %d; want %d", sid, sess.EventCount, sess.LastCursor, wantCount)
		}
	}
}

// testEventIDPerSessionConcurrent: appenders racing with one event_id,
// each in its own session and all in a shared one: every own session
// stores it, the shared session once.
func testEventIDPerSessionConcurrent(t *testing.T, s store.Store) {
	const workers = 8
	shared := ev("eidc-shared", "i1", 1, "assistant", 0, `{}`)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		errs   []error
		stored int
	)
	for w := range workers {
		wg.Go(func() {
			own := shared
			own.SessionID = fmt.Sprintf("eidc-%d", w)
			res, err := s.Append(context.Background(), []store.Event{own, shared})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs = append(errs, err)
			case len(res) != 2 || res[0].Duplicate || res[0].Cursor != 1:
				errs = append(errs, fmt.Errorf("worker %d: own session's result %+v; want stored at cursor 1", w, res))
			case !res[1].Duplicate:
				stored++
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if stored != 1 {
		t.Errorf("the shared session stored the event %d times, want once", stored)
	}
	if evs := mustEvents(t, s, "eidc-shared", 0, 0); len(evs) != 1 {
		t.Errorf("shared session has %d events, want 1", len(evs))
	}
}

// testEventIDOtherSessionApproval: an approval request that reuses another
// session's event_id for that session's approval is stored in its own
// session now (no longer a duplicate), and still cannot take the approval
// over: the approval keeps its session and fields, and the event reports
// the conflict.
func testEventIDOtherSessionApproval(t *testing.T, s store.Store) {
	req := approvalRequested("eida-a", "i1", 1, 0, "r1", "eida-x")
	mustAppend(t, s, req)
	before := mustApproval(t, s, "eida-x")
	steal := approvalRequested("eida-b", "i1", 1, 1, "r9", "eida-x")
	steal.EventID = req.EventID
	res := mustAppend(t, s, steal)
	if res[0].Duplicate || res[0].Cursor != 1 {
		t.Errorf("the other session's request: %+v; want stored at cursor 1 of its session", res[0])
	}
	if res[0].ApprovalConflict != "eida-x" {
		t.Errorf("ApprovalConflict = %q, want eida-x", res[0].ApprovalConflict)
	}
	after := mustApproval(t, s, "eida-x")
	if after.SessionID != "eida-a" || after.RunID != before.RunID || after.Title != before.Title {
		t.Errorf("approval after the other session's request: %+v; want it unchanged: %+v", after, before)
	}
}

// CheckEventIDMigration checks a database that a release before the
// per-session event_id migration filled with events: every event is still
// there with its cursor, a repeat of one is a duplicate, and its ID reused
// by another session is a new event.
func CheckEventIDMigration(t *testing.T, s store.Store, events []store.Event) {
	t.Helper()
	bySession := map[string][]store.Event{}
	for _, e := range events {
		bySession[e.SessionID] = append(bySession[e.SessionID], e)
	}
	for sid, want := range bySession {
		got := mustEvents(t, s, sid, 0, len(want)+1)
		if len(got) != len(want) {
			t.Fatalf("%s: %d events after the migration, want %d", sid, len(got), len(want))
		}
		for i := range want {
			if got[i].EventID != want[i].EventID || got[i].Cursor != int64(i+1) {
				t.Errorf("%s: event %d is %s at cursor %d; want %s at %d", sid, i, got[i].EventID, got[i].Cursor, want[i].EventID, i+1)
			}
		}
	}
	old := events[0]
	res := mustAppend(t, s, old)
	if !res[0].Duplicate || res[0].Cursor != 1 {
		t.Errorf("an old event again: %+v; want a duplicate of cursor 1", res[0])
	}
	reused := old
	reused.SessionID = "after-migration"
	res = mustAppend(t, s, reused)
	if res[0].Duplicate || res[0].Cursor != 1 {
		t.Errorf("an old event_id in a new session: %+v; want stored at cursor 1", res[0])
	}
}
