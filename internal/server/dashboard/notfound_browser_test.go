package dashboard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/claude-relay/claude-relay/internal/server/backend/memstore"
	"github.com/claude-relay/claude-relay/internal/testkit/browser"
)

// TestPagesDoNotContradictThemselves (issue 23, item 8): a run that failed
// before reaching the model ("Not logged in": an error result whose subtype
// says success) is labelled an error and offers no resume; a mistyped
// session ID and an unknown path get the dashboard's own not-found page
// with a search box and a way back.
func TestPagesDoNotContradictThemselves(t *testing.T) {
	s := newSite(t, memstore.New())
	const conv = "7d2f6c1e-1b9a-4c55-9f0e-3a1b2c3d4e5f"
	s.post("nologin",
		ev{"relay.run_started", "relay", map[string]any{"run_id": "r1", "prompt": "fix the test", "cwd": "/work/project"}},
		initEvent(conv),
		ev{"assistant", "", map[string]any{"type": "assistant", "session_id": conv, "message": map[string]any{
			"role": "assistant", "model": "<synthetic>", "content": []any{text("Not logged in · Please run /login")}}}},
		ev{"result", "", map[string]any{"type": "result", "subtype": "success", "is_error": true, "session_id": conv,
			"result": "Not logged in · Please run /login", "duration_ms": 800, "total_cost_usd": 0}},
		ev{"relay.run_failed", "relay", map[string]any{"run_id": "r1", "status": "failed"}},
	)
	s.post("answered", ev{"relay.run_started", "relay", map[string]any{"run_id": "r2", "prompt": "go"}},
		initEvent("0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"),
		ev{"assistant", "", map[string]any{"type": "assistant", "session_id": "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9",
			"message": map[string]any{"role": "assistant", "model": "claude-sonnet-4-5", "content": []any{text("Done.")}}}},
		result("0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"))
	tab := browser.New(t, browser.Options{})
	ctx := tab.Ctx

	spOpen(t, tab, s, "/sessions/nologin")
	labels := browser.Eval[[]string](t, ctx, `Array.from(document.querySelectorAll('#timeline .entry .meta .kind')).map(e => e.textContent)`)
	joined := strings.Join(labels, "|")
	if strings.Contains(joined, "result: success") || !strings.Contains(joined, "result: error") {
		t.Errorf("the failed run's cards are labelled %q; want \"result: error\", never \"result: success\"", labels)
	}
	if hidden := browser.Eval[bool](t, ctx, `document.getElementById('resume').hidden`); !hidden {
		t.Errorf("resume is offered for a conversation the model never answered")
	}
	// The header agrees with its one turn (800 ms by the CLI's account,
	// though its events arrived within a millisecond).
	if head, turn := browser.Eval[string](t, ctx, `document.getElementById('s-duration').textContent`),
		browser.Eval[string](t, ctx, `document.querySelector('#timeline .entry.turn .stat').textContent`); head != turn {
		t.Errorf("header duration %q, its only turn %q", head, turn)
	}
	screenshot(t, tab, "session-not-logged-in.png", 1100, 700)

	must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/sessions/answered")))
	browser.WaitJS(t, ctx, `document.body.dataset.state === "ready"`, 30*time.Second)
	browser.WaitJS(t, ctx, `document.getElementById('resume').hidden === false`, 10*time.Second)

	for _, tt := range []struct{ path, title, query string }{
		{"/sessions/no-such-sess", "No session “no-such-sess”", "no-such-sess"},
		{"/nowhere/at/all", "Nothing at /nowhere/at/all", ""},
	} {
		must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+tt.path)))
		browser.WaitJS(t, ctx, `!!document.getElementById('nf-title')`, 10*time.Second)
		if got := browser.Eval[string](t, ctx, `document.getElementById('nf-title').textContent`); got != tt.title {
			t.Errorf("%s: title %q, want %q", tt.path, got, tt.title)
		}
		if got := browser.Eval[string](t, ctx, `document.getElementById('nf-q').value`); got != tt.query {
			t.Errorf("%s: search box %q, want %q", tt.path, got, tt.query)
		}
		if got := browser.Eval[string](t, ctx, `document.getElementById('nf-back').getAttribute('href')`); got != "/" {
			t.Errorf("%s: way back %q", tt.path, got)
		}
		if tt.query != "" {
			screenshot(t, tab, "not-found.png", 1100, 500)
		}
	}
	// The search box leads to the list, searching.
	must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/sessions/nologi"), chromedp.Click(chromedp.CSS(`.nf-search button`))))
	browser.WaitJS(t, ctx, `location.pathname === "/" && location.search.includes("q=nologi")`, 10*time.Second)
	noScriptErrors(t, tab, "404")
}
