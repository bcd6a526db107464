package dashboard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/claude-relay/claude-relay/internal/server/backend/memstore"
	"github.com/claude-relay/claude-relay/internal/testkit/browser"
)

// billingSource is relay.billing_source as the helper posts it.
func billingSource(kind, source, label string) ev {
	return ev{"relay.billing_source", "relay", map[string]any{"v": 1, "run_id": "r", "kind": kind, "source": source, "label": label, "policy": "any"}}
}

// TestBilledToInBrowser (issue 26): the list and the session page say where
// a session's runs are billed: the billing guard's record, an older
// helper's system/init apiKeySource, nothing when no event said; the
// billing guard's refusal shows on the session page as an error.
func TestBilledToInBrowser(t *testing.T) {
	s := newSite(t, memstore.New())
	now := time.Now().UTC()
	key := append(backgroundRun("k1", "Billed to a key", "/work/webapp", "claude-sonnet-4-5", "Bash", 0.12),
		billingSource("api_key", "ANTHROPIC_API_KEY", "API key ANTHROPIC_API_KEY"))
	s.postAt("k1", now, key...)
	s.postAt("s1", now.Add(time.Second), append(backgroundRun("s1", "Billed to a login", "/work/webapp", "claude-sonnet-4-5", "Read", 0.02),
		billingSource("subscription", "", "subscription (Claude Max)"))...)
	old := backgroundRun("o1", "From an older helper", "/work/infra", "claude-sonnet-4-5", "Bash", 0.05)
	old[1].data.(map[string]any)["apiKeySource"] = "ANTHROPIC_API_KEY"
	s.postAt("o1", now.Add(2*time.Second), old...)
	s.postAt("n1", now.Add(3*time.Second), backgroundRun("n1", "Says nothing", "/work/infra", "claude-sonnet-4-5", "Bash", 0.01)...)
	s.postAt("r1", now.Add(4*time.Second), runStarted("run-r1", "Refused", "/work/webapp", "", ""),
		billingSource("api_key", "ANTHROPIC_API_KEY", "API key ANTHROPIC_API_KEY"),
		ev{"relay.billing_refused", "relay", map[string]any{"v": 1, "run_id": "run-r1", "kind": "api_key", "source": "ANTHROPIC_API_KEY",
			"label": "API key ANTHROPIC_API_KEY", "policy": "subscription",
			"message": "billing guard: the Claude CLI would bill this run to API key ANTHROPIC_API_KEY, but claude.billing is subscription; nothing was sent to the API."}},
		ev{"relay.run_failed", "relay", map[string]any{"run_id": "run-r1", "status": "failed", "reason": "billing guard",
			"result": map[string]any{"stdout": "", "stderr": "", "exitCode": 78, "duration_ms": 900}}})

	var list struct {
		Sessions []struct {
			ID       string `json:"id"`
			BilledTo string `json:"billed_to"`
		} `json:"sessions"`
	}
	s.get("/api/sessions", &list)
	got := map[string]string{}
	for _, x := range list.Sessions {
		got[x.ID] = x.BilledTo
	}
	want := map[string]string{"k1": "API key ANTHROPIC_API_KEY", "s1": "subscription (Claude Max)", "o1": "API key ANTHROPIC_API_KEY", "n1": "", "r1": "API key ANTHROPIC_API_KEY"}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("GET /api/sessions: %s billed to %q, want %q", id, got[id], w)
		}
	}

	tab := browser.New(t, browser.Options{Width: 1280, Height: 800})
	ctx := tab.Ctx
	must(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)))
	login(t, ctx, s.url)
	must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/")))
	browser.WaitJS(t, ctx, `document.querySelectorAll('#sessions tbody tr').length === 5`, 20*time.Second)
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#sessions tbody tr')).map(r => {
		const b = r.querySelector('td.source .billed');
		return r.dataset.id + "|" + (b ? b.textContent + "|" + (b.querySelector('code') ? b.querySelector('code').textContent : "") + "|" + b.querySelector('.billed-to').classList.contains('billed-key') : "none");
	})`))
	must(t, err)
	wantRows := []string{
		"r1|billed to: API key ANTHROPIC_API_KEY|ANTHROPIC_API_KEY|true",
		"n1|none",
		"o1|billed to: API key ANTHROPIC_API_KEY|ANTHROPIC_API_KEY|true",
		"s1|billed to: subscription (Claude Max)||false",
		"k1|billed to: API key ANTHROPIC_API_KEY|ANTHROPIC_API_KEY|true",
	}
	if strings.Join(rows, "\n") != strings.Join(wantRows, "\n") {
		t.Errorf("list rows:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(wantRows, "\n"))
	}
	screenshot(t, tab, "billed-list.png", 1280, 800)

	must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/sessions/r1")))
	browser.WaitJS(t, ctx, `document.getElementById('s-billed').textContent !== '–' && document.body.innerText.includes("claude.billing is subscription")`, 20*time.Second)
	page, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('s-billed').textContent + "|" + document.getElementById('s-billed').querySelector('code').textContent + "|" + document.body.innerText.includes("claude.billing is subscription")`))
	must(t, err)
	if page != "API key ANTHROPIC_API_KEY|ANTHROPIC_API_KEY|true" {
		t.Errorf("session page: %q", page)
	}
	screenshot(t, tab, "billed-session.png", 1280, 800)

	must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/sessions/s1")))
	browser.WaitJS(t, ctx, `document.getElementById('s-billed').textContent === 'subscription (Claude Max)'`, 20*time.Second)
	noScriptErrors(t, tab, "401")
}
