package dashboard_test

import (
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/claude-relay/claude-relay/internal/server/backend/memstore"
	"github.com/claude-relay/claude-relay/internal/testkit/browser"
)

// countStreams counts the EventSources a page opens and how many are
// still open.
const countStreams = `(() => {
  const ES = window.EventSource;
  window.__streams = [];
  window.EventSource = function (url, opts) {
    const es = new ES(url, opts);
    window.__streams.push(es);
    return es;
  };
  window.EventSource.prototype = ES.prototype;
  Object.assign(window.EventSource, { CONNECTING: 0, OPEN: 1, CLOSED: 2 });
})();`

// TestSessionListHoldsOneStream: the list page and the approvals badge
// share one /api/stream (a browser has six connections per host over
// HTTP/1.1, and every open session page holds one).
func TestSessionListHoldsOneStream(t *testing.T) {
	s := newSite(t, memstore.New())
	s.post("one", ev{"relay.run_started", "relay", map[string]any{"prompt": "only one feed"}})
	tab := browser.New(t, browser.Options{})
	ctx := tab.Ctx
	_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: countStreams})
	must(t, err)
	login(t, ctx, s.url)
	browser.WaitJS(t, ctx, `document.body.textContent.includes("only one feed") && window.__streams.length > 0`, 20*time.Second)
	// The barrier, not a pause: the list's feed is open (the list hands it
	// to the badge as it creates it), the badge holds the browser's lock
	// (so it has run its own openStream, which opens a second feed unless
	// it was handed one) and its first poll is answered. Whatever could
	// open a second feed has run.
	browser.WaitJS(t, ctx, `document.body.dataset.live === "1" && window.CRPending.leader && document.body.dataset.pendingApprovals !== undefined`, 20*time.Second)
	open := browser.Eval[int](t, ctx, `window.__streams.filter(es => es.readyState !== 2 && es.url.endsWith("/api/stream")).length`)
	if open != 1 {
		t.Errorf("the list page holds %d /api/stream feeds, want 1 (%s)", open,
			browser.Eval[string](t, ctx, `JSON.stringify(window.__streams.map(es => [es.url, es.readyState]))`))
	}
}
