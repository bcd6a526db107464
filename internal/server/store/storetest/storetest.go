// Package storetest is the suite every store.Store implementation passes:
// idempotency, cursors under concurrency, the derivation rules against the
// store.Derive reference, paging, notifications, and the benchmark both
// backends report.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// wait bounds every wait for a notification.
const wait = 10 * time.Second

// t0 is the envelope time the test events start at.
var t0 = time.Date(2026, 11, 21, 22, 14, 26, 729123000, time.UTC)

// Run runs the suite; open returns a new, empty Store for each subtest (the
// suite closes it). Subtests run in parallel, so open must be safe for that.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"Idempotency", testIdempotency},
		{"EventIDPerSession", testEventIDPerSession},
		{"EventIDPerSessionConcurrent", testEventIDPerSessionConcurrent},
		{"EventIDOtherSessionApproval", testEventIDOtherSessionApproval},
		{"ConcurrentCursors", testConcurrentCursors},
		{"ConversationID", testConversationID},
		{"ArrivalOrder", testArrivalOrder},
		{"Status", testStatus},
		{"Usage", testUsage},
		{"Paging", testPaging},
		{"EventRoundTrip", testEventRoundTrip},
		{"Subscribe", testSubscribe},
		{"SubscribeSlowReader", testSubscribeSlowReader},
		{"NotFound", testNotFound},
		{"SessionsOrder", testSessionsOrder},
		{"Invalid", testInvalid},
		{"Close", testClose},
		{"ListFields", testListFields},
		{"ListFieldsArrivalOrder", testListFieldsArrivalOrder},
		{"PromptTitles", testPromptTitles},
		{"Search", testSearch},
		{"SearchBounded", testSearchBounded},
		{"ListFilters", testListFilters},
		{"ListPaging", testListPaging},
		{"Stale", testStale},
		{"UsageRows", testUsageRows},
		{"UsageMatchesSessions", testUsageMatchesSessions},
		{"TerminalUsage", testTerminalUsage},
		{"Approvals", testApprovals},
		{"ApprovalsArrivalOrder", testApprovalsArrivalOrder},
		{"ApprovalsFirstArrivalWins", testApprovalsFirstArrivalWins},
		{"ApprovalsList", testApprovalsList},
		{"ApprovalPolicy", testApprovalPolicy},
		{"Decide", testDecide},
		{"DecideConcurrent", testDecideConcurrent},
		{"DecideNotifies", testDecideNotifies},
		{"ClaimNotify", testClaimNotify},
		{"ClaimNotice", testClaimNotice},
		{"BilledTo", testBilledTo},
		{"Audit", testAudit},                     // audit.go (issue 26)
		{"AuditConcurrent", testAuditConcurrent}, // audit.go
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			t.Cleanup(func() { _ = s.Close() })
			tc.fn(t, s)
		})
	}
}

// ev builds an envelope with a fresh event_id; data is event_data.
func ev(session, interaction string, seq int64, eventType string, at time.Duration, data string) store.Event {
	return store.Event{
		SessionID:     session,
		InteractionID: interaction,
		EventID:       uuid.NewString(),
		Seq:           seq,
		EventType:     eventType,
		EventData:     json.RawMessage(data),
		Timestamp:     t0.Add(at),
		Source:        "agent",
	}
}

func mustAppend(t *testing.T, s store.Store, events ...store.Event) []store.AppendResult {
	t.Helper()
	res, err := s.Append(context.Background(), events)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	if len(res) != len(events) {
		t.Fatalf("Append returned %d results for %d events", len(res), len(events))
	}
	return res
}

func mustSession(t *testing.T, s store.Store, id string) store.Session {
	t.Helper()
	sess, err := s.Session(context.Background(), id)
	if err != nil {
		t.Fatalf("Session(%q): %v", id, err)
	}
	return sess
}

func mustEvents(t *testing.T, s store.Store, id string, after int64, limit int) []store.Event {
	t.Helper()
	evs, err := s.Events(context.Background(), id, after, limit)
	if err != nil {
		t.Fatalf("Events(%q, %d, %d): %v", id, after, limit, err)
	}
	return evs
}

func testIdempotency(t *testing.T, s store.Store) {
	e1 := ev("s1", "i1", 1, "assistant", 0, `{"type":"assistant"}`)
	e2 := ev("s1", "i1", 2, "assistant", time.Second, `{"type":"assistant"}`)
	e3 := ev("s1", "i1", 3, "assistant", 2*time.Second, `{"type":"assistant"}`)
	changed := e1
	changed.EventData = json.RawMessage(`{"type":"changed"}`)
	steps := []struct {
		name   string
		events []store.Event
		want   []store.AppendResult
	}{
		{"first", []store.Event{e1}, []store.AppendResult{{EventID: e1.EventID, Cursor: 1}}},
		{"again", []store.Event{e1}, []store.AppendResult{{EventID: e1.EventID, Cursor: 1, Duplicate: true}}},
		{"changed content", []store.Event{changed}, []store.AppendResult{{EventID: e1.EventID, Cursor: 1, Duplicate: true}}},
		{"mixed batch", []store.Event{e2, e1, e2, e3}, []store.AppendResult{
			{EventID: e2.EventID, Cursor: 2},
			{EventID: e1.EventID, Cursor: 1, Duplicate: true},
			{EventID: e2.EventID, Cursor: 2, Duplicate: true},
			{EventID: e3.EventID, Cursor: 3},
		}},
		{"all known", []store.Event{e3, e2}, []store.AppendResult{
			{EventID: e3.EventID, Cursor: 3, Duplicate: true},
			{EventID: e2.EventID, Cursor: 2, Duplicate: true},
		}},
	}
	for _, st := range steps {
		if got := mustAppend(t, s, st.events...); !slices.Equal(got, st.want) {
			t.Errorf("%s: Append = %+v, want %+v", st.name, got, st.want)
		}
	}
	sess := mustSession(t, s, "s1")
	if sess.EventCount != 3 || sess.LastCursor != 3 || sess.InteractionCount != 1 {
		t.Errorf("session counts = events %d, cursor %d, interactions %d; want 3, 3, 1",
			sess.EventCount, sess.LastCursor, sess.InteractionCount)
	}
	evs := mustEvents(t, s, "s1", 0, 0)
	if len(evs) != 3 || string(evs[0].EventData) != `{"type":"assistant"}` {
		t.Errorf("events = %d, first data %s; want 3 and the original content", len(evs), evs[0].EventData)
	}
}

// testConcurrentCursors has 8 appenders racing on one session, with batches
// that also touch a second session in both orders (a backend that locks
// sessions in batch order would deadlock) and re-sent events.
func testConcurrentCursors(t *testing.T, s store.Store) {
	const workers, rounds = 8, 12
	var (
		mu      sync.Mutex
		fresh   = map[string]int64{} // event_id → cursor, from non-duplicate results
		perSess = map[string]int{}
		errs    []error
		wg      sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			var prev []store.Event
			for r := range rounds {
				var batch []store.Event
				for k := range w%3 + 1 {
					batch = append(batch, ev("busy", fmt.Sprintf("w%d", w), int64(r*3+k+1), "assistant", 0, `{}`))
				}
				other := ev("other", fmt.Sprintf("w%d", w), int64(r+1), "assistant", 0, `{}`)
				if (w+r)%2 == 0 {
					batch = append(batch, other)
				} else {
					batch = append([]store.Event{other}, batch...)
				}
				sent := append(slices.Clone(batch), prev...) // re-send the previous batch
				res, err := s.Append(context.Background(), sent)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				for i, r := range res {
					if wantDup := i >= len(batch); r.Duplicate != wantDup {
						errs = append(errs, fmt.Errorf("result %d of %s: duplicate=%v, want %v", i, r.EventID, r.Duplicate, wantDup))
					}
					if !r.Duplicate {
						fresh[r.EventID] = r.Cursor
						perSess[sent[i].SessionID]++
					} else if c := fresh[r.EventID]; c != r.Cursor {
						errs = append(errs, fmt.Errorf("duplicate %s: cursor %d, first stored as %d", r.EventID, r.Cursor, c))
					}
				}
				mu.Unlock()
				prev = batch
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"busy", "other"} {
		evs := mustEvents(t, s, id, 0, 1000)
		if len(evs) != perSess[id] {
			t.Errorf("%s: %d events stored, %d appended", id, len(evs), perSess[id])
		}
		for i, e := range evs {
			if e.Cursor != int64(i+1) {
				t.Fatalf("%s: event %d has cursor %d: gap or duplicate", id, i, e.Cursor)
			}
			if fresh[e.EventID] != e.Cursor {
				t.Errorf("%s: event %s stored at cursor %d, Append said %d", id, e.EventID, e.Cursor, fresh[e.EventID])
			}
		}
		if sess := mustSession(t, s, id); sess.LastCursor != int64(perSess[id]) || sess.EventCount != int64(perSess[id]) {
			t.Errorf("%s: last cursor %d, event count %d; want %d", id, sess.LastCursor, sess.EventCount, perSess[id])
		}
	}
}

func testConversationID(t *testing.T, s store.Store) {
	const h = time.Hour
	cases := []struct {
		name    string
		events  func(sid string) []store.Event // in arrival order
		want    string
		history []string
	}{
		{"session_id of a CLI event", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i1", 1, "system", 0, `{"type":"system","subtype":"init","session_id":"sys"}`),
				ev(sid, "i1", 2, "assistant", 1, `{"type":"assistant","session_id":"A"}`),
			}
		}, "A", []string{"A"}},
		{"system events ignored", func(sid string) []store.Event {
			return []store.Event{ev(sid, "i1", 1, "system", 0, `{"type":"system","session_id":"sys"}`)}
		}, "", nil},
		{"system event with conversation_id", func(sid string) []store.Event {
			return []store.Event{ev(sid, "i1", 1, "system", 0, `{"type":"system","conversation_id":"C","session_id":"sys"}`)}
		}, "C", []string{"C"}},
		{"conversationId spelling", func(sid string) []store.Event {
			return []store.Event{ev(sid, "i1", 1, "transcript.user", 0, `{"type":"user","conversationId":"T"}`)}
		}, "T", []string{"T"}},
		{"conversation_id before conversationId and session_id", func(sid string) []store.Event {
			return []store.Event{ev(sid, "i1", 1, "hook.Stop", 0, `{"session_id":"Z","conversationId":"Y","conversation_id":"X"}`)}
		}, "X", []string{"X"}},
		{"conversationId before session_id", func(sid string) []store.Event {
			return []store.Event{ev(sid, "i1", 1, "hook.Stop", 0, `{"session_id":"Z","conversationId":"Y"}`)}
		}, "Y", []string{"Y"}},
		{"non-string and empty values skipped", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i1", 1, "x", 0, `{"conversation_id":5,"conversationId":"","session_id":"S"}`),
				ev(sid, "i1", 2, "x", 1, `{"session_id":42}`),
			}
		}, "S", []string{"S"}},
		{"lowest seq wins, arriving last", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i1", 3, "assistant", 3*time.Second, `{"type":"assistant","session_id":"B"}`),
				ev(sid, "i1", 2, "assistant", 2*time.Second, `{"type":"assistant","session_id":"A"}`),
			}
		}, "A", []string{"A", "B"}},
		{"fork in a later interaction replaces", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i1", 1, "assistant", 0, `{"type":"assistant","session_id":"A"}`),
				ev(sid, "i2", 1, "assistant", h, `{"type":"assistant","session_id":"F"}`),
			}
		}, "F", []string{"A", "F"}},
		{"fork arriving before the original", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i2", 1, "assistant", h, `{"type":"assistant","session_id":"F"}`),
				ev(sid, "i1", 1, "assistant", 0, `{"type":"assistant","session_id":"A"}`),
			}
		}, "F", []string{"A", "F"}},
		{"later interaction without an ID keeps the earlier", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i1", 1, "assistant", 0, `{"type":"assistant","session_id":"A"}`),
				ev(sid, "i2", 1, store.EventRunStarted, h, `{"prompt":"hi"}`),
				ev(sid, "i2", 2, "system", h+1, `{"type":"system","session_id":"sys"}`),
			}
		}, "A", []string{"A"}},
		{"equal times: greater interaction_id", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "b", 1, "assistant", 0, `{"type":"assistant","session_id":"B"}`),
				ev(sid, "a", 1, "assistant", 0, `{"type":"assistant","session_id":"A"}`),
			}
		}, "B", []string{"A", "B"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sid := fmt.Sprintf("conv-%d", i)
			events := tc.events(sid)
			for _, e := range events { // one Append per event: arrival order as listed
				mustAppend(t, s, e)
			}
			got := mustSession(t, s, sid)
			if got.ExternalConversationID != tc.want {
				t.Errorf("external_conversation_id = %q, want %q", got.ExternalConversationID, tc.want)
			}
			var ids []string
			for _, r := range got.ConversationIDs {
				ids = append(ids, r.ID)
			}
			if !slices.Equal(ids, tc.history) {
				t.Errorf("conversation_ids = %q, want %q", ids, tc.history)
			}
			checkDerived(t, got, store.Derive(events))
		})
	}
}

// testArrivalOrder appends one session's events in several orders and batch
// sizes: every derived field must match store.Derive and each other.
func testArrivalOrder(t *testing.T, s store.Store) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 6 {
		sid := fmt.Sprintf("order-%d", round)
		base := richSession(sid)
		events := make([]store.Event, len(base))
		for i, e := range base {
			e.SessionID, e.EventID = sid, fmt.Sprintf("%s-%d", sid, i)
			events[i] = e
		}
		shuffled := slices.Clone(events)
		if round > 0 {
			rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		}
		for rest := shuffled; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN(5))
			mustAppend(t, s, rest[:n]...)
			rest = rest[n:]
		}
		got := mustSession(t, s, sid)
		want := store.DeriveAll(events)
		checkDerived(t, got, want.Session)
		checkApprovals(t, s, want)
		if got.ExternalConversationID != "fork" || got.Status != store.StatusCompleted {
			t.Errorf("round %d: conversation %q, status %q; want fork, completed", round, got.ExternalConversationID, got.Status)
		}
		if got.Title != "one first prompt" || got.Project != "/work/one" || got.Model != "sonnet" || got.Turns != 3 {
			t.Errorf("round %d: title %q, project %q, model %q, turns %d; want the first prompt, /work/one, sonnet, 3",
				round, got.Title, got.Project, got.Model, got.Turns)
		}
	}
}

// richSession is two interactions with lifecycle events, conversation IDs
// (the second forks) and results, one re-sent under a new event_id.
func richSession(sid string) []store.Event {
	const h = time.Hour
	res1 := `{"type":"result","uuid":"r1","usage":{"input_tokens":10,"output_tokens":20,"cache_read_input_tokens":30,"cache_creation_input_tokens":40},"total_cost_usd":0.125,"session_id":"orig"}`
	res2 := `{"type":"result","usage":{"input_tokens":1,"output_tokens":2},"total_cost_usd":0.5,"session_id":"fork"}`
	res3 := `{"type":"result","uuid":"r3","total_cost_usd":7,"usage":{"input_tokens":1},"session_id":"fork",
		"modelUsage":{"claude-opus-5-5":{"inputTokens":70,"outputTokens":35,"costUSD":0.25}},
		"model_usage_since_last_result":{"claude-opus-5-5":{"inputTokens":7,"outputTokens":3,"costUSD":0.0625},
			"claude-haiku-4-5":{"inputTokens":2,"cacheReadInputTokens":5,"costUSD":0.001}}}`
	return []store.Event{
		ev(sid, "i1", 1, store.EventRunStarted, 0, `{"run_id":"run1","prompt":"  one\n first  prompt ","cwd":"/work/one","model":"opus"}`),
		ev(sid, "i1", 2, "system", 1, `{"type":"system","subtype":"init","session_id":"orig","model":"claude-opus-5-5","cwd":"/x"}`),
		ev(sid, "i1", 3, "assistant", 2, `{"type":"assistant","session_id":"orig","message":{"content":[{"type":"tool_use","name":"Bash","id":"t1","input":{}}]}}`),
		approvalRequested(sid, "i1", 6, 2, "run1", sid+"-ap-1"),
		approvalRequested(sid, "i1", 7, 2, "run1", sid+"-ap-2"),
		approvalResolved(sid, "i1", 8, 3, "run1", sid+"-ap-1", "allow", "extension"),
		ev(sid, "i1", 4, "result", 3, res1),
		ev(sid, "i1", 5, store.EventRunCompleted, 4, `{"run_id":"run1","usage":{"input_tokens":999},"total_cost_usd":9}`),
		ev(sid, "i1", 4, "result", 3, res1), // re-sent under a new event_id
		ev(sid, "i2", 1, store.EventRunStarted, h, `{"run_id":"run2","prompt":"two","resume":"orig","model":"sonnet"}`),
		ev(sid, "i2", 2, "system", h+1, `{"type":"system","session_id":"fork"}`),
		ev(sid, "i2", 3, "assistant", h+2, `{"type":"assistant","session_id":"fork"}`),
		ev(sid, "i2", 4, "result", h+3, res2),
		ev(sid, "i2", 4, "result", h+3, res2), // no uuid: deduplicated on (interaction, seq)
		ev(sid, "i2", 6, "result", h+3, res3),
		approvalResolved(sid, "i2", 7, h+3, "run2", sid+"-ap-3", "deny", "dashboard"), // its request arrives later or never
		ev(sid, "i2", 5, store.EventRunCompleted, h+4, `{"run_id":"run2"}`),
		approvalRequested(sid, "i2", 8, h+5, "run2", sid+"-ap-4"), // after its run ended
	}
}

// checkDerived compares the derived fields of got with want (from Derive).
func checkDerived(t *testing.T, got, want store.Session) {
	t.Helper()
	if got.ExternalConversationID != want.ExternalConversationID {
		t.Errorf("external_conversation_id = %q, want %q", got.ExternalConversationID, want.ExternalConversationID)
	}
	if got.ConversationIDs == nil {
		t.Errorf("conversation_ids is nil, want a list")
	}
	if !slices.EqualFunc(got.ConversationIDs, want.ConversationIDs, func(a, b store.ConversationRef) bool {
		return a.ID == b.ID && a.InteractionID == b.InteractionID && a.FirstSeen.Equal(b.FirstSeen)
	}) {
		t.Errorf("conversation_ids = %+v, want %+v", got.ConversationIDs, want.ConversationIDs)
	}
	if got.Status != want.Status || !timeEq(got.StartedAt, want.StartedAt) || !timeEq(got.EndedAt, want.EndedAt) {
		t.Errorf("status = %s %v–%v, want %s %v–%v", got.Status, fmtTime(got.StartedAt), fmtTime(got.EndedAt),
			want.Status, fmtTime(want.StartedAt), fmtTime(want.EndedAt))
	}
	if got.EventCount != want.EventCount || got.InteractionCount != want.InteractionCount {
		t.Errorf("counts = %d events, %d interactions; want %d, %d", got.EventCount, got.InteractionCount,
			want.EventCount, want.InteractionCount)
	}
	if got.Usage != want.Usage || math.Abs(got.CostUSD-want.CostUSD) > 1e-9 {
		t.Errorf("usage = %+v $%v, want %+v $%v", got.Usage, got.CostUSD, want.Usage, want.CostUSD)
	}
	if got.Turns != want.Turns {
		t.Errorf("turns = %d, want %d", got.Turns, want.Turns)
	}
	if got.Title != want.Title || got.Project != want.Project || got.Source != want.Source || got.Model != want.Model {
		t.Errorf("title %q, project %q, source %q, model %q; want %q, %q, %q, %q", got.Title, got.Project,
			got.Source, got.Model, want.Title, want.Project, want.Source, want.Model)
	}
	if got.CreatedAt.IsZero() || got.UpdatedAt.Before(got.CreatedAt) {
		t.Errorf("created_at %v, updated_at %v: want set and in order", got.CreatedAt, got.UpdatedAt)
	}
}

func timeEq(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

func fmtTime(p *time.Time) string {
	if p == nil {
		return "nil"
	}
	return p.Format(time.RFC3339Nano)
}

func testStatus(t *testing.T, s store.Store) {
	const h = time.Hour
	cases := []struct {
		name           string
		events         func(sid string) []store.Event
		want           string
		started, ended time.Duration // -1: nil
	}{
		{"no lifecycle events", func(sid string) []store.Event {
			return []store.Event{ev(sid, "i1", 1, "assistant", 0, `{}`)}
		}, store.StatusUnknown, -1, -1},
		{"started", func(sid string) []store.Event {
			return []store.Event{ev(sid, "i1", 1, store.EventRunStarted, 0, `{}`), ev(sid, "i1", 2, "assistant", 1, `{}`)}
		}, store.StatusRunning, 0, -1},
		{"completed", func(sid string) []store.Event {
			return []store.Event{ev(sid, "i1", 1, store.EventRunStarted, 0, `{}`), ev(sid, "i1", 2, store.EventRunCompleted, 5, `{}`)}
		}, store.StatusCompleted, 0, 5},
		{"failed", func(sid string) []store.Event {
			return []store.Event{ev(sid, "i1", 1, store.EventRunStarted, 0, `{}`), ev(sid, "i1", 2, store.EventRunFailed, 5, `{}`)}
		}, store.StatusFailed, 0, 5},
		{"cancelled", func(sid string) []store.Event {
			return []store.Event{ev(sid, "i1", 1, store.EventRunStarted, 0, `{}`), ev(sid, "i1", 2, store.EventRunCancelled, 5, `{}`)}
		}, store.StatusCancelled, 0, 5},
		{"end arriving before start", func(sid string) []store.Event {
			return []store.Event{ev(sid, "i1", 2, store.EventRunCompleted, 5, `{}`), ev(sid, "i1", 1, store.EventRunStarted, 0, `{}`)}
		}, store.StatusCompleted, 0, 5},
		{"next interaction running", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i1", 1, store.EventRunStarted, 0, `{}`), ev(sid, "i1", 2, store.EventRunCompleted, 5, `{}`),
				ev(sid, "i2", 1, store.EventRunStarted, h, `{}`),
			}
		}, store.StatusRunning, h, -1},
		{"late events of an older interaction", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i2", 1, store.EventRunStarted, h, `{}`), ev(sid, "i2", 2, store.EventRunFailed, h+5, `{}`),
				ev(sid, "i1", 1, store.EventRunStarted, 0, `{}`), ev(sid, "i1", 2, store.EventRunCompleted, 5, `{}`),
			}
		}, store.StatusFailed, h, h + 5},
		{"newest interaction without lifecycle events", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i1", 1, store.EventRunStarted, 0, `{}`), ev(sid, "i1", 2, store.EventRunCompleted, 5, `{}`),
				ev(sid, "i2", 1, "assistant", h, `{}`),
			}
		}, store.StatusUnknown, -1, -1},
		// A live run's turns (relay.message_sent starts one; the session
		// is then as its last turn ended until the run's end).
		{"live run between turns", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i1", 1, store.EventRunStarted, 0, `{}`), ev(sid, "i1", 2, wire.TypeTurnCompleted, 5, `{"status":"completed"}`),
			}
		}, store.StatusCompleted, 0, 5},
		{"live run's next turn", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i1", 1, store.EventRunStarted, 0, `{}`), ev(sid, "i1", 2, wire.TypeTurnCompleted, 5, `{"status":"completed"}`),
				ev(sid, "i2", 1, wire.TypeMessageSent, h, `{"prompt":"more"}`),
			}
		}, store.StatusRunning, -1, -1},
		{"live run's turn interrupted", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i1", 1, store.EventRunStarted, 0, `{}`), ev(sid, "i1", 2, wire.TypeTurnCompleted, 5, `{"status":"completed"}`),
				ev(sid, "i2", 1, wire.TypeMessageSent, h, `{"prompt":"more"}`), ev(sid, "i2", 2, wire.TypeTurnCompleted, h+5, `{"status":"interrupted"}`),
			}
		}, store.StatusInterrupted, -1, h + 5},
		{"terminal run's second prompt", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i1", 1, store.EventRunStarted, 0, `{"mode":"terminal"}`), ev(sid, "i1", 2, "hook.UserPromptSubmit", 1, `{"prompt":"a"}`),
				ev(sid, "i1", 3, wire.TypeTurnCompleted, 5, `{"mode":"terminal","status":"completed"}`),
				ev(sid, "i1", 4, "hook.UserPromptSubmit", 6, `{"prompt":"b"}`),
			}
		}, store.StatusRunning, 0, -1},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sid := fmt.Sprintf("status-%d", i)
			events := tc.events(sid)
			for _, e := range events {
				mustAppend(t, s, e)
			}
			got := mustSession(t, s, sid)
			at := func(d time.Duration) *time.Time {
				if d < 0 {
					return nil
				}
				x := t0.Add(d)
				return &x
			}
			if got.Status != tc.want || !timeEq(got.StartedAt, at(tc.started)) || !timeEq(got.EndedAt, at(tc.ended)) {
				t.Errorf("status = %s %s–%s, want %s %s–%s", got.Status, fmtTime(got.StartedAt), fmtTime(got.EndedAt),
					tc.want, fmtTime(at(tc.started)), fmtTime(at(tc.ended)))
			}
			checkDerived(t, got, store.Derive(events))
		})
	}
}

func testUsage(t *testing.T, s store.Store) {
	const sid = "usage"
	r1 := ev(sid, "i1", 4, "result", 4, `{"type":"result","uuid":"u1","usage":{"input_tokens":1,"output_tokens":2,"cache_read_input_tokens":3,"cache_creation_input_tokens":4},"total_cost_usd":0.25}`)
	resent := r1
	resent.EventID, resent.Seq = uuid.NewString(), 9 // a new event_id (and seq): still u1
	noUUID := ev(sid, "i1", 7, "result", 7, `{"type":"result","usage":{"input_tokens":100,"output_tokens":200},"total_cost_usd":1}`)
	noUUIDAgain := noUUID
	noUUIDAgain.EventID = uuid.NewString()
	otherInteraction := noUUID
	otherInteraction.EventID, otherInteraction.InteractionID = uuid.NewString(), "i2"
	steps := []struct {
		name   string
		events []store.Event
		want   store.Usage
		cost   float64
	}{
		{"one result", []store.Event{r1}, store.Usage{InputTokens: 1, OutputTokens: 2, CacheReadInputTokens: 3, CacheCreationInputTokens: 4}, 0.25},
		{"re-sent under a new event_id", []store.Event{resent}, store.Usage{InputTokens: 1, OutputTokens: 2, CacheReadInputTokens: 3, CacheCreationInputTokens: 4}, 0.25},
		{"not results", []store.Event{
			ev(sid, "i1", 5, store.EventRunCompleted, 5, `{"type":"result","usage":{"input_tokens":1000},"total_cost_usd":5}`),
			ev(sid, "i1", 6, "assistant", 6, `{"type":"result","usage":{"input_tokens":1000}}`),
			ev(sid, "i1", 8, "result", 8, `{"type":"system","usage":{"input_tokens":1000}}`),
		}, store.Usage{InputTokens: 1, OutputTokens: 2, CacheReadInputTokens: 3, CacheCreationInputTokens: 4}, 0.25},
		{"without uuid, twice in one batch", []store.Event{noUUID, noUUIDAgain}, store.Usage{InputTokens: 101, OutputTokens: 202, CacheReadInputTokens: 3, CacheCreationInputTokens: 4}, 1.25},
		{"same seq in another interaction", []store.Event{otherInteraction}, store.Usage{InputTokens: 201, OutputTokens: 402, CacheReadInputTokens: 3, CacheCreationInputTokens: 4}, 2.25},
	}
	for _, st := range steps {
		mustAppend(t, s, st.events...)
		got := mustSession(t, s, sid)
		if got.Usage != st.want || math.Abs(got.CostUSD-st.cost) > 1e-9 {
			t.Errorf("%s: usage = %+v $%v, want %+v $%v", st.name, got.Usage, got.CostUSD, st.want, st.cost)
		}
	}
}

func testPaging(t *testing.T, s store.Store) {
	const sid, n = "paging", 1005
	events := make([]store.Event, n)
	for i := range events {
		events[i] = ev(sid, "i1", int64(i+1), "assistant", time.Duration(i), fmt.Sprintf(`{"n":%d}`, i+1))
	}
	mustAppend(t, s, events[:250]...)
	mustAppend(t, s, events[250:]...)
	cases := []struct {
		after       int64
		limit       int
		first, size int64
	}{
		{0, 0, 1, 100}, // default limit
		{100, 100, 101, 100},
		{-5, 3, 1, 3},      // before the first cursor
		{990, 0, 991, 15},  // the tail
		{1005, 10, 0, 0},   // nothing after the last
		{0, 5000, 1, 1000}, // capped
		{7, 1, 8, 1},
	}
	for _, tc := range cases {
		got := mustEvents(t, s, sid, tc.after, tc.limit)
		if int64(len(got)) != tc.size {
			t.Errorf("Events(after %d, limit %d): %d events, want %d", tc.after, tc.limit, len(got), tc.size)
			continue
		}
		for i, e := range got {
			want := tc.first + int64(i)
			if e.Cursor != want || string(e.EventData) != fmt.Sprintf(`{"n":%d}`, want) {
				t.Errorf("Events(after %d, limit %d)[%d]: cursor %d data %s, want cursor %d", tc.after, tc.limit, i, e.Cursor, e.EventData, want)
				break
			}
		}
	}
	if got := mustEvents(t, s, "no-such-session", 0, 0); len(got) != 0 {
		t.Errorf("Events of an unknown session: %d events, want none", len(got))
	}
}

func testEventRoundTrip(t *testing.T, s store.Store) {
	in := store.Event{
		SessionID:     "roundtrip",
		InteractionID: "i-1",
		EventID:       uuid.NewString(),
		Seq:           12,
		EventType:     "assistant",
		EventData:     json.RawMessage("{\"z\": 1,  \"a\" : [1, 2.50 ],\n \"s\":\"\\u00e9 é \\\"q\\\"\", \"n\": null}"),
		Timestamp:     time.Date(2026, 11, 21, 22, 14, 26, 729123456, time.FixedZone("x", 3600)),
		Source:        "terminal",
	}
	res := mustAppend(t, s, in)
	got := mustEvents(t, s, in.SessionID, 0, 0)
	if len(got) != 1 {
		t.Fatalf("Events: %d events, want 1", len(got))
	}
	out := got[0]
	if string(out.EventData) != string(in.EventData) {
		t.Errorf("event_data = %q, want it as stored: %q", out.EventData, in.EventData)
	}
	if !out.Timestamp.Equal(in.Timestamp) {
		t.Errorf("timestamp = %v, want %v", out.Timestamp, in.Timestamp)
	}
	want := in
	want.Cursor, want.EventData, want.Timestamp = res[0].Cursor, out.EventData, out.Timestamp
	if !equalEvent(out, want) {
		t.Errorf("event = %+v, want %+v", out, want)
	}
}

func equalEvent(a, b store.Event) bool {
	return a.SessionID == b.SessionID && a.InteractionID == b.InteractionID && a.EventID == b.EventID &&
		a.Seq == b.Seq && a.EventType == b.EventType && string(a.EventData) == string(b.EventData) &&
		a.Timestamp.Equal(b.Timestamp) && a.Source == b.Source && a.Cursor == b.Cursor
}

// awaitCursor reads ch until it has seen session at cursor want or later.
func awaitCursor(t *testing.T, ch <-chan store.Notification, session string, want int64) {
	t.Helper()
	timeout := time.After(wait)
	for {
		select {
		case n, ok := <-ch:
			if !ok {
				t.Fatalf("subscription closed before %s reached cursor %d", session, want)
			}
			if n.SessionID == session && n.Cursor >= want {
				return
			}
		case <-timeout:
			t.Fatalf("no notification of %s at cursor %d within %v", session, want, wait)
		}
	}
}

// awaitClosed drains ch until it is closed.
func awaitClosed(t *testing.T, ch <-chan store.Notification) {
	t.Helper()
	timeout := time.After(wait)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatalf("subscription not closed within %v", wait)
		}
	}
}

func testSubscribe(t *testing.T, s store.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := s.Subscribe(ctx)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	mustAppend(t, s, ev("sub", "i1", 1, "assistant", 0, `{}`), ev("sub", "i1", 2, "assistant", 1, `{}`))
	awaitCursor(t, ch, "sub", 2)
	e3 := ev("sub", "i1", 3, "assistant", 2, `{}`)
	mustAppend(t, s, e3)
	awaitCursor(t, ch, "sub", 3)
	// A duplicate stores nothing and notifies nothing; the next event does.
	mustAppend(t, s, e3)
	mustAppend(t, s, ev("sub2", "i1", 1, "assistant", 0, `{}`))
	select {
	case n := <-ch:
		if n != (store.Notification{SessionID: "sub2", Cursor: 1}) {
			t.Errorf("after a duplicate and a new event: notification %+v, want sub2 at 1", n)
		}
	case <-time.After(wait):
		t.Fatal("no notification of sub2")
	}
	cancel()
	awaitClosed(t, ch)
}

// testSubscribeSlowReader: a subscriber that does not read must not hold up
// Append, and still gets the latest cursor when it reads.
func testSubscribeSlowReader(t *testing.T, s store.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := s.Subscribe(ctx)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	const n = 100
	appendCtx, cancelAppend := context.WithTimeout(context.Background(), 2*wait)
	defer cancelAppend()
	for i := range n {
		if _, err := s.Append(appendCtx, []store.Event{ev("slow", "i1", int64(i+1), "assistant", 0, `{}`)}); err != nil {
			t.Fatalf("Append %d with an unread subscription: %v", i, err)
		}
	}
	awaitCursor(t, ch, "slow", n)
}

func testNotFound(t *testing.T, s store.Store) {
	_, err := s.Session(context.Background(), "no-such-session")
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Session of an unknown id: %v, want ErrNotFound", err)
	}
	list, err := s.Sessions(context.Background(), store.ListOptions{})
	if err != nil || len(list) != 0 {
		t.Errorf("Sessions of an empty store = %v, %v; want none", list, err)
	}
}

func testSessionsOrder(t *testing.T, s store.Store) {
	for _, id := range []string{"a", "b", "c", "a"} {
		mustAppend(t, s, ev(id, "i1", 1, "assistant", 0, `{}`))
	}
	cases := []struct {
		limit int
		want  []string
	}{
		{0, []string{"a", "c", "b"}},
		{2, []string{"a", "c"}},
	}
	for _, tc := range cases {
		list, err := s.Sessions(context.Background(), store.ListOptions{Limit: tc.limit})
		if err != nil {
			t.Fatalf("Sessions: %v", err)
		}
		var ids []string
		for _, sess := range list {
			ids = append(ids, sess.ID)
		}
		if !slices.Equal(ids, tc.want) {
			t.Errorf("Sessions(limit %d) = %q, want %q (newest update first)", tc.limit, ids, tc.want)
		}
	}
	a := mustSession(t, s, "a")
	if a.EventCount != 2 || !a.UpdatedAt.After(a.CreatedAt) {
		t.Errorf("session a: %d events, created %v, updated %v; want 2 and updated after created", a.EventCount, a.CreatedAt, a.UpdatedAt)
	}
}

func testInvalid(t *testing.T, s store.Store) {
	good := ev("inv", "i1", 1, "assistant", 0, `{}`)
	cases := []struct {
		name string
		edit func(*store.Event)
	}{
		{"empty event_id", func(e *store.Event) { e.EventID = "" }},
		{"empty session_id", func(e *store.Event) { e.SessionID = "" }},
		{"event_data not JSON", func(e *store.Event) { e.EventData = json.RawMessage(`{"a":`) }},
	}
	for _, tc := range cases {
		bad := ev("inv", "i1", 2, "assistant", 0, `{}`)
		tc.edit(&bad)
		if _, err := s.Append(context.Background(), []store.Event{good, bad}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: Append = %v, want ErrInvalid", tc.name, err)
		}
	}
	if _, err := s.Session(context.Background(), "inv"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after rejected Appends, Session = %v; want ErrNotFound (nothing stored)", err)
	}
	if res, err := s.Append(context.Background(), nil); err != nil || len(res) != 0 {
		t.Errorf("Append(nil) = %v, %v; want no results, no error", res, err)
	}
}

func testClose(t *testing.T, s store.Store) {
	ch, err := s.Subscribe(context.Background())
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	mustAppend(t, s, ev("close", "i1", 1, "assistant", 0, `{}`))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	awaitClosed(t, ch)
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := s.Append(context.Background(), []store.Event{ev("close", "i1", 2, "x", 0, `{}`)}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Append after Close = %v, want ErrClosed", err)
	}
	if _, err := s.Session(context.Background(), "close"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Session after Close = %v, want ErrClosed", err)
	}
	if _, err := s.Subscribe(context.Background()); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Subscribe after Close = %v, want ErrClosed", err)
	}
}
