package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
)

// auditAll pages through the whole trail of q with pages of limit.
func auditAll(t *testing.T, a store.AuditReader, q store.AuditQuery, limit int) []store.AuditEvent {
	t.Helper()
	var out []store.AuditEvent
	q.Limit = limit
	for {
		var page []store.AuditEvent
		if err := a.Audit(context.Background(), q, func(ev store.AuditEvent) error {
			page = append(page, ev)
			return nil
		}); err != nil {
			t.Fatalf("Audit(%+v): %v", q, err)
		}
		out = append(out, page...)
		if len(page) < limit {
			return out
		}
		q.After = page[len(page)-1].Position
	}
}

func auditReader(t *testing.T, s store.Store) store.AuditReader {
	a, ok := s.(store.AuditReader)
	if !ok {
		t.Fatalf("%T does not implement store.AuditReader", s)
	}
	return a
}

func appendEach(t *testing.T, s store.Store, evs ...store.Event) {
	t.Helper()
	for _, e := range evs {
		if _, err := s.Append(context.Background(), []store.Event{e}); err != nil {
			t.Fatalf("append %s: %v", e.EventType, err)
		}
	}
}

// testAudit: the trail lists exactly the audit types, in arrival order
// (not envelope time), with project, machine, the decided approval's input
// and the receive time; the filters, paging and a foreign cursor.
func testAudit(t *testing.T, s store.Store) {
	a := auditReader(t, s)
	// Envelope times run backwards: the trail follows arrival.
	evs := []store.Event{
		ev("au-a", "i1", 1, store.EventRunStarted, 9*time.Second, `{"v":2,"run_id":"ra","cwd":"/p/a","host":"m-a"}`),
		ev("au-a", "i1", 2, "relay.approval_requested", 8*time.Second, `{"v":1,"run_id":"ra","approval_id":"au-1","tool_name":"Bash","input":{"command":"ls"}}`),
		ev("au-a", "i1", 3, "assistant", 7*time.Second, `{"type":"assistant"}`),
		ev("au-a", "i1", 4, "relay.approval_resolved", 6*time.Second, `{"v":1,"run_id":"ra","approval_id":"au-1","decision":"allow","by":"extension"}`),
		ev("au-b", "i1", 1, store.EventRunStarted, 5*time.Second, `{"v":2,"run_id":"rb","cwd":"/p/b","host":"m-b"}`),
		ev("au-b", "i1", 2, "relay.mode_changed", 4*time.Second, `{"v":1,"run_id":"rb","permission_mode":"plan"}`),
		ev("au-b", "i1", 3, "relay.policy_decision", 4*time.Second, `{"v":1,"run_id":"rb","effect":"deny"}`),
		ev("au-b", "i1", 4, "relay.budget_unchecked", 4*time.Second, `{"v":1,"run_id":"rb"}`),
		ev("au-a", "i1", 5, "relay.billing_source", 3*time.Second, `{"v":1,"run_id":"ra","kind":"api_key"}`),
		ev("au-a", "i1", 6, "relay.billing_refused", 3*time.Second, `{"v":1,"run_id":"ra","kind":"api_key"}`),
		ev("au-a", "i1", 7, "relay.stderr", 2*time.Second, `{"v":1,"run_id":"ra","line":"x"}`),
		ev("au-a", "i1", 8, "relay.run_failed", 2*time.Second, `{"v":1,"run_id":"ra","status":"failed","reason":"helper_exited"}`),
		ev("au-b", "i1", 5, "relay.run_completed", 1*time.Second, `{"v":1,"run_id":"rb","status":"completed"}`),
		ev("au-b", "i1", 6, "relay.policy", 0, `{"v":1,"run_id":"rb"}`), // no '_': not a policy_* event
	}
	appendEach(t, s, evs...)
	appendEach(t, s, evs[1]) // a retry: still one record
	// A store may list an event only once it is final (PostgreSQL: once
	// no older transaction is open): wait for the last one.
	poll.Until(t, wait, "the trail to list the run ends", func() bool {
		return len(auditAll(t, a, store.AuditQuery{}, 100)) == 8
	})
	want := []string{"au-a/relay.approval_requested", "au-a/relay.approval_resolved", "au-b/relay.mode_changed",
		"au-b/relay.policy_decision", "au-b/relay.budget_unchecked", "au-a/relay.billing_refused",
		"au-a/relay.run_failed", "au-b/relay.run_completed"}
	all := auditAll(t, a, store.AuditQuery{}, 100)
	if got := auditNames(all); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("trail\n got %v\nwant %v", got, want)
	}
	seen := map[string]bool{}
	for _, e := range all {
		if seen[e.Position] || e.Position == "" {
			t.Errorf("position %q repeated or empty", e.Position)
		}
		seen[e.Position] = true
		wantProject, wantMachine := "/p/a", "m-a"
		if e.SessionID == "au-b" {
			wantProject, wantMachine = "/p/b", "m-b"
		}
		if e.Project != wantProject || e.Machine != wantMachine || e.ReceivedAt.IsZero() || e.Timestamp.IsZero() {
			t.Errorf("%s: project %q machine %q received %v timestamp %v", e.EventType, e.Project, e.Machine, e.ReceivedAt, e.Timestamp)
		}
	}
	if in := string(all[1].ApprovalInput); in != `{"command":"ls"}` {
		t.Errorf("decision's approval input %q", in)
	}
	if all[0].ApprovalInput != nil {
		t.Errorf("request carries ApprovalInput %q", all[0].ApprovalInput)
	}

	t.Run("paging", func(t *testing.T) {
		for _, limit := range []int{1, 2, 3, 7} {
			if got := auditAll(t, a, store.AuditQuery{}, limit); fmt.Sprint(auditNames(got)) != fmt.Sprint(want) {
				t.Errorf("limit %d: %v", limit, auditNames(got))
			}
		}
	})
	t.Run("project", func(t *testing.T) {
		got := auditAll(t, a, store.AuditQuery{Project: "/p/b"}, 2)
		if fmt.Sprint(auditNames(got)) != fmt.Sprint([]string{"au-b/relay.mode_changed", "au-b/relay.policy_decision",
			"au-b/relay.budget_unchecked", "au-b/relay.run_completed"}) {
			t.Errorf("project /p/b: %v", auditNames(got))
		}
	})
	t.Run("range", func(t *testing.T) {
		mid := all[3].ReceivedAt // receive times follow arrival
		before := auditAll(t, a, store.AuditQuery{To: mid}, 100)
		after := auditAll(t, a, store.AuditQuery{From: mid}, 100)
		if fmt.Sprint(auditNames(append(before, after...))) != fmt.Sprint(want) || len(after) == 0 ||
			after[0].Position != all[3].Position {
			t.Errorf("to %v: %v; from: %v", mid, auditNames(before), auditNames(after))
		}
	})
	t.Run("bad cursor", func(t *testing.T) {
		err := a.Audit(context.Background(), store.AuditQuery{After: "not-a-cursor"}, func(store.AuditEvent) error { return nil })
		if !errors.Is(err, store.ErrBadAuditCursor) {
			t.Errorf("err %v, want ErrBadAuditCursor", err)
		}
	})
	t.Run("stop", func(t *testing.T) {
		stop := errors.New("stop")
		n := 0
		err := a.Audit(context.Background(), store.AuditQuery{}, func(store.AuditEvent) error { n++; return stop })
		if !errors.Is(err, stop) || n != 1 {
			t.Errorf("err %v after %d records", err, n)
		}
	})
}

func auditNames(evs []store.AuditEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.SessionID + "/" + e.EventType
	}
	return out
}

// testAuditConcurrent: a poller paging while writers append in several
// sessions at once sees every audit event exactly once, in an order that
// never changes under it.
func testAuditConcurrent(t *testing.T, s store.Store) {
	a := auditReader(t, s)
	const writers, each = 4, 40
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sid := fmt.Sprintf("auc-%d", w)
			for i := range each {
				e := ev(sid, "i1", int64(i+1), "relay.mode_changed", time.Duration(i)*time.Millisecond,
					fmt.Sprintf(`{"v":1,"permission_mode":"m%d"}`, i))
				if _, err := s.Append(context.Background(), []store.Event{e}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var got []store.AuditEvent
	q := store.AuditQuery{Limit: 7}
	pollOnce := func() int {
		n := 0
		if err := a.Audit(context.Background(), q, func(ev store.AuditEvent) error {
			got = append(got, ev)
			q.After = ev.Position
			n++
			return nil
		}); err != nil {
			t.Fatalf("Audit: %v", err)
		}
		return n
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		pollOnce()
	}
	close(errs)
	for err := range errs {
		t.Fatalf("append: %v", err)
	}
	poll.Until(t, wait, "the poller to catch up", func() bool { pollOnce(); return len(got) >= writers*each })
	ids := map[string]int{}
	lastSeq := map[string]int64{}
	for _, e := range got {
		ids[e.SessionID+"/"+e.EventID]++
		if e.Seq <= lastSeq[e.SessionID] {
			t.Errorf("%s seq %d after %d", e.SessionID, e.Seq, lastSeq[e.SessionID])
		}
		lastSeq[e.SessionID] = e.Seq
	}
	if len(ids) != writers*each || len(got) != writers*each {
		t.Fatalf("polled %d records of %d distinct events, want %d of %d", len(got), len(ids), writers*each, writers*each)
	}
	// The order the poller saw is the order a fresh reader sees.
	again := auditAll(t, a, store.AuditQuery{}, 1000)
	for i := range again {
		if again[i].Position != got[i].Position || again[i].EventID != got[i].EventID {
			t.Fatalf("record %d: %s/%s at %s, the poller saw %s at %s", i, again[i].SessionID, again[i].EventID,
				again[i].Position, got[i].EventID, got[i].Position)
		}
	}
}
