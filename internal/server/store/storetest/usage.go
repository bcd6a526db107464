package storetest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

func mustUsage(t *testing.T, s store.Store, q store.UsageQuery) []store.UsageRow {
	t.Helper()
	rows, err := s.Usage(context.Background(), q)
	if err != nil {
		t.Fatalf("Usage(%+v): %v", q, err)
	}
	return rows
}

func usageRowEq(a, b store.UsageRow) bool {
	return a.Day == b.Day && a.Model == b.Model && a.Project == b.Project && a.Usage == b.Usage &&
		math.Abs(a.CostUSD-b.CostUSD) < 1e-9 && a.Results == b.Results && a.Sessions == b.Sessions
}

func checkUsageRows(t *testing.T, what string, got, want []store.UsageRow) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = usageRowEq(got[i], want[i])
	}
	if !ok {
		var b strings.Builder
		for _, r := range got {
			fmt.Fprintf(&b, "\n\tgot  %+v", r)
		}
		for _, r := range want {
			fmt.Fprintf(&b, "\n\twant %+v", r)
		}
		t.Errorf("%s:%s", what, b.String())
	}
}

// testUsageRows: results split by model (the CLI's per-result breakdown
// first, else modelUsage, else the session's model), by UTC day and the
// session's project, each counted once.
func testUsageRows(t *testing.T, s store.Store) {
	const day = 24 * time.Hour
	r1 := ev("use-1", "i1", 2, "result", 1, `{"type":"result","uuid":"r1","total_cost_usd":9,
		"usage":{"input_tokens":999},
		"modelUsage":{"claude-opus-5-5":{"inputTokens":100,"outputTokens":50,"costUSD":5}},
		"model_usage_since_last_result":{
			"claude-opus-5-5":{"inputTokens":10,"outputTokens":5,"cacheReadInputTokens":2,"cacheCreationInputTokens":1,"costUSD":0.1},
			"claude-haiku-4-5":{"inputTokens":3,"outputTokens":1,"costUSD":0.01}}}`)
	resent := r1
	resent.EventID = uuid.NewString()
	mustAppend(t, s,
		ev("use-1", "i1", 1, store.EventRunStarted, 0, `{"prompt":"p","cwd":"/p1","model":"opus"}`),
		r1, resent,
		ev("use-1", "i2", 1, "result", day, `{"type":"result","modelUsage":{"claude-opus-5-5":{"inputTokens":20,"outputTokens":10,"costUSD":0.2}}}`),
	)
	// Before the event that names the session's model: the row follows it.
	mustAppend(t, s, ev("use-1", "i2", 2, "result", day+1, `{"type":"result","uuid":"r3","usage":{"input_tokens":4,"output_tokens":2},"total_cost_usd":0.04}`))
	mustAppend(t, s, ev("use-1", "i1", 3, "system", 2, `{"type":"system","subtype":"init","model":"claude-opus-5-5"}`))
	for _, sid := range []string{"use-2", "use-4"} {
		mustAppend(t, s,
			ev(sid, "i1", 1, store.EventRunStarted, 0, `{"prompt":"p","cwd":"/p2","model":"sonnet"}`),
			ev(sid, "i1", 2, "result", 3, `{"type":"result","usage":{"input_tokens":7,"output_tokens":1},"total_cost_usd":0.07}`),
		)
	}
	mustAppend(t, s, ev("use-3", "i1", 1, "result", 0, `{"type":"result","usage":{"input_tokens":1},"total_cost_usd":0.5}`))
	mustAppend(t, s, ev("use-5", "i1", 1, "assistant", 0, `{"type":"assistant"}`)) // no results, no rows

	d1, d2 := store.UsageDay(t0), store.UsageDay(t0.Add(day))
	row := func(day, model, project string, u store.Usage, cost float64, results, sessions int64) store.UsageRow {
		return store.UsageRow{Day: day, Model: model, Project: project, Usage: u, CostUSD: cost, Results: results, Sessions: sessions}
	}
	all := []store.UsageRow{
		row(d1, "", "", store.Usage{InputTokens: 1}, 0.5, 1, 1),
		row(d1, "claude-haiku-4-5", "/p1", store.Usage{InputTokens: 3, OutputTokens: 1}, 0.01, 1, 1),
		row(d1, "claude-opus-5-5", "/p1", store.Usage{InputTokens: 10, OutputTokens: 5, CacheReadInputTokens: 2, CacheCreationInputTokens: 1}, 0.1, 1, 1),
		row(d1, "sonnet", "/p2", store.Usage{InputTokens: 14, OutputTokens: 2}, 0.14, 2, 2),
		row(d2, "claude-opus-5-5", "/p1", store.Usage{InputTokens: 24, OutputTokens: 12}, 0.24, 2, 1),
	}
	checkUsageRows(t, "all", mustUsage(t, s, store.UsageQuery{}), all)
	midnight := t0.Add(day).Truncate(day)
	checkUsageRows(t, "from the second day", mustUsage(t, s, store.UsageQuery{From: midnight}), all[4:])
	checkUsageRows(t, "before the second day", mustUsage(t, s, store.UsageQuery{To: midnight}), all[:4])
	checkUsageRows(t, "one project", mustUsage(t, s, store.UsageQuery{Project: "/p1"}), []store.UsageRow{all[1], all[2], all[4]})
	checkUsageRows(t, "an empty range", mustUsage(t, s, store.UsageQuery{From: midnight, To: midnight}), []store.UsageRow{})
	if got := mustSession(t, s, "use-1"); got.Turns != 3 || math.Abs(got.CostUSD-0.35) > 1e-9 ||
		got.Usage != (store.Usage{InputTokens: 37, OutputTokens: 18, CacheReadInputTokens: 2, CacheCreationInputTokens: 1}) {
		t.Errorf("use-1: turns %d, cost %v, usage %+v; want 3, 0.35 and the rows' sums", got.Turns, got.CostUSD, got.Usage)
	}
}

// testUsageMatchesSessions: for random sessions (results with and without
// per-model figures, re-sent, in batches), each session's Usage and CostUSD
// equal the sums of its usage rows, and Turns the results counted.
func testUsageMatchesSessions(t *testing.T, s store.Store) {
	rng := rand.New(rand.NewPCG(11, 12))
	models := []string{"claude-opus-5-5", "claude-haiku-4-5", "claude-sonnet-5"}
	for i := range 12 {
		sid := fmt.Sprintf("sum-%d", i)
		project := "/sum/" + sid
		events := []store.Event{ev(sid, "i0", 1, store.EventRunStarted, 0, fmt.Sprintf(`{"cwd":%q,"model":"m-%d"}`, project, i))}
		for r := range 1 + rng.IntN(6) {
			at := time.Duration(rng.IntN(72)) * time.Hour
			var data string
			switch rng.IntN(3) {
			case 0:
				data = fmt.Sprintf(`{"type":"result","uuid":"%s-%d","usage":{"input_tokens":%d,"output_tokens":%d},"total_cost_usd":%v}`,
					sid, r, rng.IntN(1000), rng.IntN(1000), float64(rng.IntN(1000))/997)
			default:
				var parts []string
				for _, m := range models[:1+rng.IntN(len(models))] {
					parts = append(parts, fmt.Sprintf(`%q:{"inputTokens":%d,"outputTokens":%d,"cacheReadInputTokens":%d,"costUSD":%v}`,
						m, rng.IntN(1000), rng.IntN(1000), rng.IntN(1000), float64(rng.IntN(1000))/991))
				}
				key := "modelUsage"
				if rng.IntN(2) == 0 {
					key = "model_usage_since_last_result"
				}
				data = fmt.Sprintf(`{"type":"result","uuid":"%s-%d","total_cost_usd":123,%q:{%s}}`, sid, r, key, strings.Join(parts, ","))
			}
			e := ev(sid, fmt.Sprintf("i%d", r), 2, "result", at, data)
			again := e
			again.EventID = uuid.NewString()
			events = append(events, e, again)
		}
		rng.Shuffle(len(events), func(a, b int) { events[a], events[b] = events[b], events[a] })
		for rest := events; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN(4))
			mustAppend(t, s, rest[:n]...)
			rest = rest[n:]
		}
		sess := mustSession(t, s, sid)
		var (
			sum     store.Usage
			cost    float64
			results int64
		)
		for _, row := range mustUsage(t, s, store.UsageQuery{Project: project}) {
			sum, cost, results = sum.Add(row.Usage), cost+row.CostUSD, results+row.Results
			if row.Sessions != 1 || row.Model == "" {
				t.Errorf("%s: row %+v: want one session and a model", sid, row)
			}
		}
		if sess.Usage != sum || math.Abs(sess.CostUSD-cost) > 1e-9 {
			t.Errorf("%s: session usage %+v $%v, its rows sum to %+v $%v", sid, sess.Usage, sess.CostUSD, sum, cost)
		}
		if results < sess.Turns {
			t.Errorf("%s: %d turns, rows count %d results", sid, sess.Turns, results)
		}
		checkDerived(t, sess, store.Derive(events))
	}
}
