package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/server/store/internal/ingest"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// Statement is one SQL statement with its arguments.
type Statement struct {
	SQL  string
	Args []any
}

// BackfillFixture is the events of sessions a release before migration 2
// stored: background, terminal, with usage by model and approvals.
func BackfillFixture() []store.Event {
	var events []store.Event
	events = append(events, richSession("bf-rich")...)
	events = append(events, approvalScript("bf-appr")...)
	for i, tc := range listCases() {
		events = append(events, tc.events(fmt.Sprintf("bf-list-%d", i))...)
	}
	events = append(events,
		ev("bf-usage", "i1", 1, store.EventRunStarted, 0, `{"prompt":"count me","cwd":"/bf","model":"sonnet"}`),
		ev("bf-usage", "i1", 2, "result", time.Hour, `{"type":"result","uuid":"bu1","total_cost_usd":4,
			"modelUsage":{"claude-opus-5-5":{"inputTokens":5,"costUSD":3},"claude-haiku-4-5":{"outputTokens":2,"costUSD":1}}}`),
		ev("bf-usage", "i1", 3, "result", 25*time.Hour, `{"type":"result","uuid":"bu2","total_cost_usd":0.5,"usage":{"input_tokens":9}}`),
	)
	return events
}

// V1Inserts are the rows migration 1's schema held for events, as that
// release's Append wrote them (ph numbers placeholders: "?" or "$n"): the
// events with cursors, the interactions, the counted results and the
// sessions with the state the rules of that release derived (usage from
// usage and total_cost_usd).
func V1Inserts(events []store.Event, ph func(n int) string) []Statement {
	list := func(n int) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			if i > 1 {
				b.WriteString(", ")
			}
			b.WriteString(ph(i))
		}
		return b.String()
	}
	ids, bySession := sessionsOf(events)
	sort.Strings(ids)
	created := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	var sessions, rest []Statement
	for n, sid := range ids {
		evs := bySession[sid]
		d := store.Derive(evs)
		var (
			usage   store.Usage
			cost    float64
			counted = map[string]bool{}
			ins     = map[string]*store.Interaction{}
		)
		for i, e := range evs {
			e.Cursor = int64(i + 1)
			rest = append(rest, Statement{`INSERT INTO events (` + ingest.EventColumns + `, received_at) VALUES (` + list(10) + `)`,
				append(ingest.EventArgs(&e), ingest.Nanos(created))})
			f := store.FactsOf(e)
			in := ins[e.InteractionID]
			if in == nil {
				in = &store.Interaction{ID: e.InteractionID}
				ins[e.InteractionID] = in
			}
			in.Apply(e, f)
			if f.Result != nil && !counted[f.Result.Key] {
				counted[f.Result.Key] = true
				var old struct {
					Usage store.Usage `json:"usage"`
					Cost  float64     `json:"total_cost_usd"`
				}
				_ = json.Unmarshal(e.EventData, &old)
				usage, cost = usage.Add(old.Usage), cost+old.Cost
				rest = append(rest, Statement{`INSERT INTO results (session_id, result_key, event_id) VALUES (` + list(3) + `)`,
					[]any{sid, f.Result.Key, e.EventID}})
			}
		}
		for _, in := range ins {
			row := ingest.InteractionRow{SessionID: sid, Interaction: *in}
			// The columns before migration 5 (no turn_done_seq).
			rest = append(rest, Statement{`INSERT INTO interactions (session_id, ` + v1InteractionColumns + `) VALUES (` + list(12) + `)`,
				ingest.InteractionArgs(&row)[:12]})
		}
		refs := d.ConversationIDs
		if refs == nil {
			refs = []store.ConversationRef{} // as that release wrote it
		}
		convs, _ := json.Marshal(refs)
		at := created.Add(time.Duration(n) * time.Minute)
		sessions = append(sessions, Statement{`INSERT INTO sessions (id, external_conversation_id, conversation_ids,
			status, event_count, interaction_count, input_tokens, output_tokens, cache_read_input_tokens,
			cache_creation_input_tokens, total_cost_usd, created_at, updated_at, started_at, ended_at, last_cursor)
			VALUES (` + list(16) + `)`,
			[]any{sid, d.ExternalConversationID, string(convs), d.Status, d.EventCount, d.InteractionCount,
				usage.InputTokens, usage.OutputTokens, usage.CacheReadInputTokens, usage.CacheCreationInputTokens,
				cost, ingest.Nanos(at), ingest.Nanos(at.Add(time.Second)), ingest.NanosPtr(d.StartedAt),
				ingest.NanosPtr(d.EndedAt), d.EventCount}})
	}
	return append(sessions, rest...)
}

// CheckBackfill checks a Store opened on a database that V1Inserts filled
// with events: every session lists, searches, counts usage and knows its
// approvals as if its events had arrived with this release, and takes new
// events as usual.
func CheckBackfill(t *testing.T, s store.Store, events []store.Event) {
	t.Helper()
	bySession := map[string][]store.Event{}
	for _, e := range events {
		bySession[e.SessionID] = append(bySession[e.SessionID], e)
	}
	for sid, evs := range bySession {
		want := store.DeriveAll(evs)
		// Migration 5 counts the turns and tokens of old terminal runs too.
		for _, c := range store.TerminalTurns(evs) {
			want.Session.Usage = want.Session.Usage.Add(c.Result.Usage)
			want.Session.Turns++
		}
		got := mustSession(t, s, sid)
		checkDerived(t, got, want.Session)
		checkApprovals(t, s, want)
		if got.LastCursor != int64(len(evs)) {
			t.Errorf("%s: last cursor %d, want %d", sid, got.LastCursor, len(evs))
		}
		if ids := listIDs(t, s, store.ListOptions{Query: sid}); !contains(ids, sid) {
			t.Errorf("%s: not found by its ID: %q", sid, ids)
		}
		if got.Title != "" {
			q := truncate(got.Title, 20)
			if ids := listIDs(t, s, store.ListOptions{Query: q}); !contains(ids, sid) {
				t.Errorf("%s: not found by its title's start %q: %q", sid, q, ids)
			}
		}
		if got.Project != "" {
			var sum float64
			for _, r := range mustUsage(t, s, store.UsageQuery{Project: got.Project}) {
				sum += r.CostUSD
			}
			if math.Abs(sum-sessionsCost(t, s, got.Project)) > 1e-9 {
				t.Errorf("%s: usage rows of %s sum to $%v, its sessions to $%v", sid, got.Project, sum, sessionsCost(t, s, got.Project))
			}
		}
	}
	if got := listIDs(t, s, store.ListOptions{Query: "grep"}); len(got) != 0 {
		t.Errorf("search for a tool no session called: %q", got)
	}
	if got := listIDs(t, s, store.ListOptions{Query: "bash"}); !contains(got, "bf-rich") {
		t.Errorf("search for a tool bf-rich called: %q", got)
	}
	// bf-usage: the per-model figures replaced v1's total_cost_usd.
	u := mustSession(t, s, "bf-usage")
	if u.Turns != 2 || math.Abs(u.CostUSD-4.5) > 1e-9 || u.Usage != (store.Usage{InputTokens: 14, OutputTokens: 2}) {
		t.Errorf("bf-usage: turns %d, $%v, %+v; want 2, $4.5 and the per-model tokens", u.Turns, u.CostUSD, u.Usage)
	}
	// New events continue the session: a result counted before stays
	// counted once, a new one adds.
	resent := bySession["bf-usage"][1]
	resent.EventID = uuid.NewString()
	res := mustAppend(t, s, resent, ev("bf-usage", "i2", 1, "result", 26*time.Hour, `{"type":"result","uuid":"bu3","total_cost_usd":1}`))
	if res[0].Cursor != 4 || res[1].Cursor != 5 {
		t.Errorf("cursors after the backfill: %+v, want 4 and 5", res)
	}
	if u := mustSession(t, s, "bf-usage"); u.Turns != 3 || math.Abs(u.CostUSD-5.5) > 1e-9 {
		t.Errorf("bf-usage after new events: turns %d, $%v; want 3, $5.5", u.Turns, u.CostUSD)
	}
	if _, err := s.Decide(context.Background(), decision("bf-appr-d", "bf-1", "phone")); err != nil {
		t.Errorf("Decide on a backfilled pending approval: %v", err)
	}
}

func sessionsCost(t *testing.T, s store.Store, project string) float64 {
	t.Helper()
	list, err := s.Sessions(context.Background(), store.ListOptions{Project: project, Limit: 1000})
	if err != nil {
		t.Fatalf("Sessions: %v", err)
	}
	var sum float64
	for _, sess := range list {
		sum += sess.CostUSD
	}
	return sum
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// truncate returns the first n runes of s.
func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}

// sessionsOf groups events by session: the sessions in the order first
// seen, and each one's events in order.
func sessionsOf(events []store.Event) ([]string, map[string][]store.Event) {
	bySession := map[string][]store.Event{}
	var ids []string
	for _, e := range events {
		if bySession[e.SessionID] == nil {
			ids = append(ids, e.SessionID)
		}
		bySession[e.SessionID] = append(bySession[e.SessionID], e)
	}
	return ids, bySession
}

// v1InteractionColumns are ingest.InteractionColumns before migration 5.
const v1InteractionColumns = `interaction_id, event_count, first_event_at, conv_id, conv_seq,
	conv_at, lifecycle_seq, status, lifecycle_at, started_seq, started_at`

// StatusFixture is sessions a release before migration 5 stored: an ACP
// session its client closed while idle, which that release's helper ended
// relay.run_cancelled after the turn completed (and the store listed as
// cancelled); a live run closed during its second turn; a one-shot run
// cancelled.
func StatusFixture() []store.Event {
	const s = time.Second
	result := `{"type":"result","subtype":"success","is_error":false,"session_id":"c1","total_cost_usd":0.01,"usage":{"input_tokens":10,"output_tokens":5}}`
	return []store.Event{
		ev("sf-acp-idle", "i0", 1, store.EventRunStarted, 0, `{"v":2,"run_id":"r","mode":"acp","idle":true,"cwd":"/zed"}`),
		ev("sf-acp-idle", "i1", 1, wire.TypeMessageSent, s, `{"v":2,"run_id":"r","prompt":"explain the parser"}`),
		ev("sf-acp-idle", "i1", 2, store.EventResult, 2*s, result),
		ev("sf-acp-idle", "i1", 3, wire.TypeTurnCompleted, 3*s, `{"v":1,"run_id":"r","turn":1,"status":"completed","result":{"exitCode":0}}`),
		ev("sf-acp-idle", "i1", 4, store.EventRunCancelled, 9*s, `{"v":1,"run_id":"r","mode":"acp","status":"cancelled","result":{"stderr":"Cancelled","exitCode":130}}`),
		ev("sf-live-mid", "i1", 1, store.EventRunStarted, 0, `{"v":2,"run_id":"r","prompt":"first","cwd":"/w"}`),
		ev("sf-live-mid", "i1", 2, wire.TypeTurnCompleted, s, `{"v":1,"run_id":"r","turn":1,"status":"completed","result":{"exitCode":0}}`),
		ev("sf-live-mid", "i2", 1, wire.TypeMessageSent, 2*s, `{"v":2,"run_id":"r","prompt":"second"}`),
		ev("sf-live-mid", "i2", 2, store.EventRunCancelled, 3*s, `{"v":1,"run_id":"r","status":"cancelled","result":{"stderr":"Cancelled","exitCode":130}}`),
		ev("sf-oneshot", "i1", 1, store.EventRunStarted, 0, `{"v":2,"run_id":"r","prompt":"go","cwd":"/w"}`),
		ev("sf-oneshot", "i1", 2, store.EventRunCancelled, s, `{"v":1,"run_id":"r","status":"cancelled","result":{"stderr":"Cancelled","exitCode":130}}`),
		// A terminal run of a helper that counted no turns: one prompt, its
		// answer written as two block lines of one message.
		ev("sf-terminal", "i1", 1, store.EventRunStarted, 0, `{"v":2,"run_id":"rt","mode":"terminal","cwd":"/w"}`),
		ev("sf-terminal", "i1", 2, "hook.UserPromptSubmit", s, `{"session_id":"ct","prompt_id":"p1","prompt":"hello"}`),
		ev("sf-terminal", "i1", 3, "transcript.user", 2*s, `{"type":"user","sessionId":"ct","promptId":"p1","uuid":"u1","message":{"content":"hello"}}`),
		ev("sf-terminal", "i1", 4, "transcript.assistant", 3*s, terminalAssistant),
		ev("sf-terminal", "i1", 5, "transcript.assistant", 3*s, terminalAssistant),
		ev("sf-terminal", "i1", 6, store.EventRunCompleted, 4*s, `{"v":1,"run_id":"rt","mode":"terminal","status":"completed","result":{"exitCode":0}}`),
	}
}

const terminalAssistant = `{"type":"assistant","sessionId":"ct","requestId":"q1","uuid":"a1","message":{"id":"m1","model":"claude-opus-5-5",` +
	`"usage":{"input_tokens":100,"output_tokens":20,"cache_read_input_tokens":3,"cache_creation_input_tokens":4}}}`

// OldStatusUpdates set each session's status as a release before
// migration 5 derived it (the most recent interaction's latest lifecycle
// event alone), on the sessions V1Inserts made.
func OldStatusUpdates(events []store.Event, ph func(n int) string) []Statement {
	ids, bySession := sessionsOf(events)
	var out []Statement
	for _, sid := range ids {
		recent, _ := store.MostRecent(store.FoldInteractions(bySession[sid]))
		out = append(out, Statement{fmt.Sprintf(`UPDATE sessions SET status = %s WHERE id = %s`, ph(1), ph(2)),
			[]any{recent.Status, sid}})
	}
	return out
}

// CheckStatusBackfill checks a Store opened on a database that V1Inserts
// and OldStatusUpdates filled before migration 5: the ACP session closed
// while idle is completed now, the runs cancelled mid-turn stay cancelled,
// and each session's status is what this release derives from its events.
func CheckStatusBackfill(t *testing.T, s store.Store, events []store.Event) {
	t.Helper()
	want := map[string]string{"sf-acp-idle": store.StatusCompleted, "sf-live-mid": store.StatusCancelled, "sf-oneshot": store.StatusCancelled,
		"sf-terminal": store.StatusCompleted}
	bySession := map[string][]store.Event{}
	for _, e := range events {
		bySession[e.SessionID] = append(bySession[e.SessionID], e)
	}
	for sid, evs := range bySession {
		got := mustSession(t, s, sid)
		if d := store.Derive(evs); got.Status != d.Status || got.Status != want[sid] {
			t.Errorf("%s: status %q after the migration; derived %q, want %q", sid, got.Status, d.Status, want[sid])
		}
	}
	// The old terminal run's turn and tokens are counted from its
	// transcript, each message once; its cost is unknown.
	term := mustSession(t, s, "sf-terminal")
	if wantU := (store.Usage{InputTokens: 100, OutputTokens: 20, CacheReadInputTokens: 3, CacheCreationInputTokens: 4}); term.Turns != 1 ||
		term.Usage != wantU || term.CostUSD != 0 {
		t.Errorf("sf-terminal after the migration: %d turns, %+v, $%v; want 1 turn, %+v, $0", term.Turns, term.Usage, term.CostUSD, wantU)
	}
	// The rule holds for events that arrive after the migration too.
	mustAppend(t, s, ev("sf-live-mid", "i3", 1, wire.TypeMessageSent, 10*time.Second, `{"v":2,"run_id":"r","prompt":"third"}`),
		ev("sf-live-mid", "i3", 2, wire.TypeTurnCompleted, 11*time.Second, `{"v":2,"run_id":"r","turn":3,"status":"completed","result":{"exitCode":0}}`),
		ev("sf-live-mid", "i3", 3, store.EventRunCancelled, 12*time.Second, `{"v":1,"run_id":"r","status":"cancelled","result":{"exitCode":130}}`))
	if got := mustSession(t, s, "sf-live-mid"); got.Status != store.StatusCompleted {
		t.Errorf("sf-live-mid after a turn that completed and an idle close: status %q, want completed", got.Status)
	}
}

// PolicyFixture is a session a release before the approvals' policy
// columns stored: an approval the central policy's dashboard-only rule
// asked for (CheckApprovalPolicy's "pb-a").
func PolicyFixture() []store.Event {
	return []store.Event{PolicyApprovalRequested("pb", "i1", 1, 1, "run1", "pb-a")}
}

// PolicyInserts are the rows a release before the policy columns held for
// events (V1Inserts) and their approvals, without approver, policy_rule
// and policy_reason.
func PolicyInserts(events []store.Event, ph func(n int) string) []Statement {
	out := V1Inserts(events, ph)
	cols := strings.TrimSuffix(ingest.ApprovalColumns, ", approver, policy_rule, policy_reason")
	for _, sid := range sortedSessions(events) {
		var evs []store.Event
		for i, e := range events {
			if e.SessionID == sid {
				e.Cursor = int64(i + 1)
				evs = append(evs, e)
			}
		}
		d := store.DeriveAll(evs)
		for _, id := range slices.Sorted(maps.Keys(d.Approvals)) {
			args, _ := ingest.ApprovalArgs(d.Approvals[id])
			args = args[:len(args)-3]
			phs := make([]string, len(args))
			for i := range phs {
				phs[i] = ph(i + 1)
			}
			out = append(out, Statement{`INSERT INTO approvals (` + cols + `) VALUES (` + strings.Join(phs, ", ") + `)`, args})
		}
	}
	return out
}

func sortedSessions(events []store.Event) []string {
	ids, _ := sessionsOf(events)
	sort.Strings(ids)
	return ids
}
