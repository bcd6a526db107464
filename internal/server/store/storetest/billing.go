package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// Issue 26: a session records where its runs are billed ("billed to").

// billingSource is a relay.billing_source as the helper writes it.
func billingSource(kind, source, subscription, label string) string {
	return mustJSON(wire.Billing{RunID: "r", Kind: kind, Source: source, SubscriptionType: subscription, Label: label, Policy: "any"})
}

// initLine is the CLI's system/init line with an apiKeySource.
func initLine(apiKeySource string) string {
	return mustJSON(map[string]any{"type": "system", "subtype": "init", "session_id": "c1", "model": "m", "apiKeySource": apiKeySource})
}

// billedCases are sessions whose "billed to" the rules decide.
func billedCases() []struct {
	name   string
	events func(sid string) []store.Event
	want   string
} {
	const h = time.Hour
	return []struct {
		name   string
		events func(sid string) []store.Event
		want   string
	}{
		{"the guard's record", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i1", 1, store.EventRunStarted, 0, runStarted(map[string]any{"run_id": "r", "prompt": "p"})),
				ev(sid, "i1", 2, wire.TypeBillingSource, 1, billingSource("api_key", "ANTHROPIC_API_KEY", "", "API key ANTHROPIC_API_KEY")),
				ev(sid, "i1", 3, "system", 2, initLine("ANTHROPIC_API_KEY")),
			}
		}, "API key ANTHROPIC_API_KEY"},
		{"the latest run's source", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i1", 1, wire.TypeBillingSource, 0, billingSource("api_key", "ANTHROPIC_API_KEY", "", "API key ANTHROPIC_API_KEY")),
				ev(sid, "i2", 1, wire.TypeBillingSource, h, billingSource("subscription", "", "Claude Max", "subscription (Claude Max)")),
			}
		}, "subscription (Claude Max)"},
		{"the guard's record outranks a later init line", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i1", 1, wire.TypeBillingSource, 0, billingSource("subscription", "claude.ai", "", "subscription")),
				ev(sid, "i2", 1, "system", h, initLine("ANTHROPIC_API_KEY")),
			}
		}, "subscription"},
		{"an older helper: the init line's key", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i1", 1, store.EventRunStarted, 0, runStarted(map[string]any{"run_id": "r", "prompt": "p"})),
				ev(sid, "i1", 2, "system", 1, initLine("ANTHROPIC_API_KEY")),
			}
		}, "API key ANTHROPIC_API_KEY"},
		{"an init line without a key says nothing", func(sid string) []store.Event {
			return []store.Event{ev(sid, "i1", 1, "system", 0, initLine("none"))}
		}, ""},
		{"no label: made of kind and source", func(sid string) []store.Event {
			return []store.Event{ev(sid, "i1", 1, wire.TypeBillingSource, 0, `{"v":1,"run_id":"r","kind":"auth_token","source":"ANTHROPIC_AUTH_TOKEN"}`)}
		}, "auth token ANTHROPIC_AUTH_TOKEN"},
		{"a label on one line, bounded", func(sid string) []store.Event {
			return []store.Event{ev(sid, "i1", 1, wire.TypeBillingSource, 0, billingSource("api_key", "K", "", "API key\n\tK\x00"+string(make([]byte, 300))))}
		}, billedCut("API key K")},
	}
}

// billedCut is the stored form of a label followed by 300 NULs: one line,
// NULs as U+FFFD, 120 runes at most with "…" ending a cut one.
func billedCut(prefix string) string {
	r := []rune(prefix)
	for len(r) < 119 {
		r = append(r, '\uFFFD')
	}
	return string(r[:119]) + "…"
}

// testBilledTo: a session's "billed to" is its latest relay.billing_source's
// label, else the API key an init line names, whatever the arrival order;
// the list shows it.
func testBilledTo(t *testing.T, s store.Store) {
	rng := rand.New(rand.NewPCG(26, 2))
	for i, tc := range billedCases() {
		t.Run(tc.name, func(t *testing.T) {
			for round := range 3 {
				sid := fmt.Sprintf("billed-%d-%d", i, round)
				events := tc.events(sid)
				if round > 0 {
					rng.Shuffle(len(events), func(a, b int) { events[a], events[b] = events[b], events[a] })
				}
				mustAppend(t, s, events...)
				if got := mustSession(t, s, sid).BilledTo; got != tc.want {
					t.Errorf("order %d: billed to %q, want %q", round, got, tc.want)
				}
				if got := store.Derive(events).BilledTo; got != tc.want {
					t.Errorf("order %d: store.Derive's billed to %q, want %q", round, got, tc.want)
				}
			}
		})
	}
	list, err := s.Sessions(context.Background(), store.ListOptions{Limit: 100})
	if err != nil {
		t.Fatalf("Sessions: %v", err)
	}
	for _, sess := range list {
		if sess.ID == "billed-1-0" && sess.BilledTo != "subscription (Claude Max)" {
			t.Errorf("listed billed to %q", sess.BilledTo)
		}
	}
}

// BilledFixture is sessions a release before migration 7 stored: a run of
// a helper with the billing guard, and one of an older helper whose CLI
// named its API key in system/init.
func BilledFixture() []store.Event {
	return []store.Event{
		ev("bf-guard", "i1", 1, store.EventRunStarted, 0, runStarted(map[string]any{"run_id": "r", "prompt": "p", "cwd": "/w"})),
		ev("bf-guard", "i1", 2, wire.TypeBillingSource, 1, billingSource("subscription", "", "Claude Max", "subscription (Claude Max)")),
		ev("bf-old", "i1", 1, store.EventRunStarted, 0, runStarted(map[string]any{"run_id": "r", "prompt": "q", "cwd": "/w"})),
		ev("bf-old", "i1", 2, "system", 1, initLine("ANTHROPIC_API_KEY")),
	}
}

// ListUpdates are the list fields a release before migration 7 derived for
// events' sessions (no billed_to), as statements on the sessions
// V1Inserts made (ph numbers placeholders).
func ListUpdates(events []store.Event, ph func(n int) string) []Statement {
	ids, bySession := sessionsOf(events)
	var out []Statement
	for _, sid := range ids {
		l := store.DeriveAll(bySession[sid]).Listing
		l.BilledTo, l.BilledRank, l.BilledKey = "", 0, store.EventKey{}
		keys, err := json.Marshal(l)
		if err != nil {
			panic(err)
		}
		out = append(out, Statement{fmt.Sprintf(`UPDATE sessions SET title = %s, project = %s, source = %s, model = %s, list_keys = %s WHERE id = %s`,
			ph(1), ph(2), ph(3), ph(4), ph(5), ph(6)), []any{l.Title, l.Project, l.Source, l.Model, string(keys), sid}})
	}
	return out
}

// CheckBilledBackfill checks a Store opened on a database that V1Inserts
// and ListUpdates filled before migration 7: each session is billed to what
// its stored events say, listed so, and a new run's record replaces it.
func CheckBilledBackfill(t *testing.T, s store.Store, events []store.Event) {
	t.Helper()
	want := map[string]string{"bf-guard": "subscription (Claude Max)", "bf-old": "API key ANTHROPIC_API_KEY"}
	list, err := s.Sessions(context.Background(), store.ListOptions{Limit: 100})
	if err != nil {
		t.Fatalf("Sessions: %v", err)
	}
	seen := 0
	for _, sess := range list {
		if w, ok := want[sess.ID]; ok {
			seen++
			if sess.BilledTo != w || sess.Title == "" {
				t.Errorf("%s: listed billed to %q (title %q), want %q", sess.ID, sess.BilledTo, sess.Title, w)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("listed %d of the fixture's sessions", seen)
	}
	mustAppend(t, s, ev("bf-old", "i2", 1, wire.TypeBillingSource, time.Hour, billingSource("none", "", "", "no credentials")))
	if got := mustSession(t, s, "bf-old").BilledTo; got != "no credentials" {
		t.Errorf("bf-old after a new run: billed to %q", got)
	}
}
