package dashboard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/claude-relay/claude-relay/internal/server/backend/memstore"
	"github.com/claude-relay/claude-relay/internal/testkit/browser"
)

// TestStoppedTurnIsInterrupted: a live run's turn the user stopped reads
// "interrupted" with who stopped it, not a red "result:
// error_during_execution" card; the CLI's words stay in the card's details.
// A run cancelled mid-turn (exit 130) is a cancel, not a failure.
func TestStoppedTurnIsInterrupted(t *testing.T) {
	const conv = "7e57ab1e-0000-4000-8000-0000000051a9"
	s := newSite(t, memstore.New())
	at := func(inter string) func(e ev) spInter { return func(e ev) spInter { return spInter{inter, e} } }
	i1, i2 := at("i1"), at("i2")
	stopped := ev{"result", "", map[string]any{"type": "result", "subtype": "error_during_execution", "is_error": true,
		"session_id": conv, "duration_ms": 2100, "num_turns": 2, "total_cost_usd": 0.002,
		"errors": []any{"[ede_diagnostic] result_type=user last_content_type=n/a stop_reason=tool_use"}}}
	s.spPost("stopped",
		i1(ev{"relay.run_started", "relay", map[string]any{"v": 2, "run_id": "r1", "prompt": "run the slow tests", "cwd": "/work/p"}}),
		i1(initEvent(conv)),
		i1(assistant(conv, text("Running them."))),
		i1(stopped),
		i1(ev{"relay.turn_completed", "relay", map[string]any{"v": 2, "run_id": "r1", "turn": 1, "status": "interrupted",
			"by": "extension", "reason": "stopped from the editor",
			"result": map[string]any{"stdout": "", "stderr": "stopped from the editor\nError during execution", "exitCode": 130, "duration_ms": 2100}}}),
		i2(ev{"relay.message_sent", "relay", map[string]any{"v": 2, "run_id": "r1", "prompt": "only the fast ones"}}),
		i2(assistant(conv, text("Running the fast ones."))),
		i2(ev{"relay.turn_completed", "relay", map[string]any{"v": 2, "run_id": "r1", "turn": 2, "status": "interrupted",
			"reason": "closed by the client during a turn", "result": map[string]any{"exitCode": 130, "duration_ms": 500}}}),
		i2(ev{"relay.run_cancelled", "relay", map[string]any{"v": 1, "run_id": "r1", "status": "cancelled",
			"reason": "closed by the client during a turn", "result": map[string]any{"stderr": "Cancelled", "exitCode": 130, "duration_ms": 3000}}}),
	)
	tab := browser.New(t, browser.Options{Width: 1280, Height: 900})
	ctx := tab.Ctx
	login(t, ctx, s.url)
	if err := chromedp.Do(ctx, chromedp.Navigate(s.url+"/sessions/stopped")); err != nil {
		t.Fatal(err)
	}
	browser.WaitJS(t, ctx, `document.body.dataset.state === "ready" && document.querySelectorAll('.entry.turn').length === 2`, 20*time.Second)
	stats := browser.Eval[[]string](t, ctx, `Array.from(document.querySelectorAll('.entry.turn .turn-stats')).map(e => e.textContent)`)
	for i, st := range stats {
		if !strings.HasPrefix(st, "interrupted") {
			t.Errorf("turn %d stats %q, want interrupted", i+1, st)
		}
	}
	all := browser.Eval[string](t, ctx, `Array.from(document.querySelectorAll('#timeline .entry')).map(e => e.textContent).join('|')`)
	for _, want := range []string{"stopped from the editor", "run cancelled", "closed by the client during a turn"} {
		if !strings.Contains(all, want) {
			t.Errorf("the timeline does not say %q:\n%s", want, all)
		}
	}
	for _, bad := range []string{"error_during_execution", "run failed", "exit 130"} {
		if strings.Contains(strings.ToLower(all), bad) {
			t.Errorf("the timeline says %q for a turn the user stopped:\n%s", bad, all)
		}
	}
	screenshot(t, tab, "stopped-turn.png", 1280, 900)
	noScriptErrors(t, tab)
}
