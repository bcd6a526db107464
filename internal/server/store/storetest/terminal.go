package storetest

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// testTerminalUsage: a terminal run's turns (relay.turn_completed with mode
// terminal) count as results, tokens by model and no cost; its end (mode
// terminal, with the CLI's cost) adds the cost by model and neither a turn
// nor tokens; a background run's turn and end events count nothing (its
// result lines do). Each once, in any arrival order, as store.Derive says,
// and the usage rows sum to the session.
func testTerminalUsage(t *testing.T, s store.Store) {
	const (
		sid    = "term-usage"
		day    = 24 * time.Hour
		opus   = "claude-opus-5-5"
		haiku  = "claude-haiku-4-5"
		sonnet = "claude-sonnet-5"
	)
	u := func(in, out, cr, cc int64) wire.Usage {
		return wire.Usage{InputTokens: in, OutputTokens: out, CacheReadInputTokens: cr, CacheCreationInputTokens: cc}
	}
	cost := func(v float64) *float64 { return &v }
	var (
		t1, t2a, t2b, t3 = u(100, 20, 7, 3), u(200, 30, 0, 0), u(10, 5, 0, 0), u(400, 50, 0, 0)
		bg               = u(9, 9, 9, 9)
	)
	turn := func(run string, n int, status wire.Status, usage wire.Usage, models map[string]wire.ModelUsage) string {
		return mustJSON(wire.TurnCompleted{RunID: run, Turn: n, Mode: wire.ModeTerminal, Status: status, ConversationID: "c1",
			Usage: &usage, Models: models})
	}
	first := ev(sid, "i1", 4, wire.TypeTurnCompleted, 3, turn("r1", 1, wire.StatusCompleted, t1,
		map[string]wire.ModelUsage{opus: {Usage: t1}}))
	resent := first
	resent.EventID = uuid.NewString()
	sum := t1.Add(t2a).Add(t2b)
	events := []store.Event{
		// A terminal run with two turns, the first sent twice.
		ev(sid, "i1", 1, store.EventRunStarted, 0, mustJSON(wire.RunStarted{RunID: "r1", Mode: wire.ModeTerminal, Cwd: "/w/t"})),
		ev(sid, "i1", 2, "hook.UserPromptSubmit", 1, `{"session_id":"c1","prompt":"Run the echo","cwd":"/w/t"}`),
		ev(sid, "i1", 3, "transcript.assistant", 2, `{"type":"assistant","sessionId":"c1","requestId":"q1",
			"message":{"id":"m1","model":"claude-opus-5-5","usage":{"input_tokens":100,"output_tokens":20}}}`),
		first, resent,
		ev(sid, "i1", 5, wire.TypeTurnCompleted, 5, turn("r1", 2, wire.StatusCompleted, t2a.Add(t2b),
			map[string]wire.ModelUsage{opus: {Usage: t2a}, haiku: {Usage: t2b}})),
		// Its end: tokens again (not counted) and the CLI's cost by model.
		ev(sid, "i1", 6, store.EventRunCompleted, 6, mustJSON(wire.RunEnded{RunID: "r1", Mode: wire.ModeTerminal,
			Status: wire.StatusCompleted, ConversationID: "c1", Usage: &sum, TotalCostUSD: cost(0.3),
			Models: map[string]wire.ModelUsage{opus: {Usage: t1.Add(t2a), CostUSD: cost(0.25)}, haiku: {Usage: t2b, CostUSD: cost(0.05)}}})),
		// The next day, a resumed terminal run: a turn naming no model, an
		// end with a cost naming none; both count under the session's model.
		ev(sid, "i2", 1, store.EventRunStarted, day, mustJSON(wire.RunStarted{RunID: "r2", Mode: wire.ModeTerminal, Cwd: "/w/t", Resume: "c1"})),
		ev(sid, "i2", 2, wire.TypeTurnCompleted, day+1, turn("r2", 1, wire.StatusCompleted, t3, nil)),
		ev(sid, "i2", 3, store.EventRunFailed, day+2, mustJSON(wire.RunEnded{RunID: "r2", Mode: wire.ModeTerminal,
			Status: wire.StatusFailed, ConversationID: "c1", Usage: &t3, TotalCostUSD: cost(0.1)})),
		// A background run: its result counts, its turn and end repeat it.
		ev(sid, "i3", 1, store.EventRunStarted, day+3, mustJSON(wire.RunStarted{RunID: "r3", Cwd: "/w/t"})),
		ev(sid, "i3", 2, "result", day+4, `{"type":"result","uuid":"res-1","session_id":"c1","total_cost_usd":0.07,
			"model_usage_since_last_result":{"claude-sonnet-5":{"inputTokens":9,"outputTokens":9,"cacheReadInputTokens":9,"cacheCreationInputTokens":9,"costUSD":0.07}}}`),
		ev(sid, "i3", 3, wire.TypeTurnCompleted, day+5, mustJSON(wire.TurnCompleted{RunID: "r3", Turn: 1, Status: wire.StatusCompleted,
			Usage: &bg, TotalCostUSD: cost(0.07)})),
		ev(sid, "i3", 4, store.EventRunCompleted, day+6, mustJSON(wire.RunEnded{RunID: "r3", Status: wire.StatusCompleted,
			ConversationID: "c1", Usage: &bg, TotalCostUSD: cost(0.07)})),
		// A terminal run stopped mid-turn, the CLI's cost unknown: an
		// interrupted turn with no tokens still counts, the end nothing.
		ev(sid, "i4", 1, store.EventRunStarted, day+7, mustJSON(wire.RunStarted{RunID: "r4", Mode: wire.ModeTerminal, Cwd: "/w/t"})),
		ev(sid, "i4", 2, wire.TypeTurnCompleted, day+8, turn("r4", 1, wire.StatusInterrupted, wire.Usage{}, nil)),
		ev(sid, "i4", 3, store.EventRunCancelled, day+9, mustJSON(wire.RunEnded{RunID: "r4", Mode: wire.ModeTerminal,
			Status: wire.StatusCancelled, ConversationID: "c1"})),
	}
	rng := rand.New(rand.NewPCG(23, 4))
	shuffled := append([]store.Event(nil), events...)
	rng.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
	for rest := shuffled; len(rest) > 0; {
		n := min(len(rest), 1+rng.IntN(4))
		mustAppend(t, s, rest[:n]...)
		rest = rest[n:]
	}

	got := mustSession(t, s, sid)
	checkDerived(t, got, store.Derive(events))
	wantUsage := t1.Add(t2a).Add(t2b).Add(t3).Add(bg)
	if got.Turns != 5 || got.Usage != wantUsage || math.Abs(got.CostUSD-0.47) > 1e-9 || got.Model != opus || got.Source != store.SourceTerminal {
		t.Errorf("session: %d turns, %+v, $%v, model %q, source %q; want 5 turns, %+v, $0.47, %s, terminal",
			got.Turns, got.Usage, got.CostUSD, got.Model, got.Source, wantUsage, opus)
	}
	d1, d2 := store.UsageDay(t0), store.UsageDay(t0.Add(day))
	row := func(day, model string, u wire.Usage, cost float64, results int64) store.UsageRow {
		return store.UsageRow{Day: day, Model: model, Project: "/w/t", Usage: u, CostUSD: cost, Results: results, Sessions: 1}
	}
	checkUsageRows(t, "terminal usage rows", mustUsage(t, s, store.UsageQuery{Project: "/w/t"}), []store.UsageRow{
		row(d1, haiku, t2b, 0.05, 1),
		row(d1, opus, t1.Add(t2a), 0.25, 2), // two turns; the end adds its cost, no result
		row(d2, opus, t3, 0.1, 2),           // i2's turn and end, i4's turn
		row(d2, sonnet, bg, 0.07, 1),
	})
}
