package dashboard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/budget"
	"github.com/claude-relay/claude-relay/internal/server/backend"
	"github.com/claude-relay/claude-relay/internal/server/backend/memstore"
	"github.com/claude-relay/claude-relay/internal/testkit/browser"
)

// TestBudgetsInBrowser (issue 26): the session list shows each budget as
// spent / cap with a bar and its period, and a banner once one reaches its
// warning threshold; the cost page shows the same panel.
func TestBudgetsInBrowser(t *testing.T) {
	st := memstore.New()
	url := serve(t, backend.Options{
		Store:  st,
		Tokens: func() []config.Secret { return []config.Secret{token} },
		Budgets: []budget.Rule{
			{Project: "*", Period: budget.Month, USD: 50, WarnAt: 0.8},
			{Project: "webapp", Period: budget.Day, USD: 2, WarnAt: 0.8},
			{Project: "/work/infra", Period: budget.Week, USD: 1, WarnAt: 0.5},
		},
	})
	s := &site{t: t, url: url, seq: map[string]int64{}}
	now := time.Now().UTC()
	s.postAt("b1", now, runStarted("run-b1", "Spend", "/work/webapp", "claude-sonnet-4-5", ""),
		initModel("conv-b1", "claude-sonnet-4-5", "/work/webapp"), resultCost("conv-b1", 1.7, 1000, 100), runCompleted("run-b1"))
	s.postAt("b2", now, runStarted("run-b2", "Spend", "/work/infra", "claude-sonnet-4-5", ""),
		initModel("conv-b2", "claude-sonnet-4-5", "/work/infra"), resultCost("conv-b2", 0.2, 1000, 100), runCompleted("run-b2"))

	tab := browser.New(t, browser.Options{Width: 1280, Height: 800})
	ctx := tab.Ctx
	must(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)))
	login(t, ctx, url)
	must(t, chromedp.Do(ctx, chromedp.Navigate(url+"/")))
	browser.WaitJS(t, ctx, `document.getElementById('budgets').dataset.loaded === "true"`, 20*time.Second)

	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll('#budgets li.budget')).map(li => li.dataset.state + "|" + li.querySelector('.budget-project').textContent + "|" + li.querySelector('.budget-figures').textContent + "|" + li.querySelector('.budget-fill').style.width + "|" + li.querySelector('.budget-period').textContent + "|" + li.querySelector('time.budget-reset').dateTime)`))
	must(t, err)
	if len(rows) != 3 {
		t.Fatalf("budget rows: %q", rows)
	}
	for i, want := range []string{"ok|All projects|$1.90 / $50.00|3.8%|month", "warning|webapp|$1.70 / $2.00|85%|day", "ok|/work/infra|$0.20 / $1.00|20%|week"} {
		if !strings.HasPrefix(rows[i], want) {
			t.Errorf("row %d = %q, want it to start %q", i, rows[i], want)
		}
	}
	if !strings.Contains(rows[1], "|"+now.AddDate(0, 0, 1).Format("2006-01-02")+"T00:00:00Z") {
		t.Errorf("the day budget does not say when it resets: %q", rows[1])
	}
	banner, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector('#budgets .budget-banner[role=alert]') || {}).textContent || ""`))
	must(t, err)
	if !strings.Contains(banner, "webapp: 85 % of the day budget of $2.00 spent.") || strings.Contains(banner, "infra") {
		t.Errorf("banner %q", banner)
	}
	screenshot(t, tab, "budgets-list.png", 1280, 800)

	must(t, chromedp.Do(ctx, chromedp.Navigate(url+"/cost")))
	browser.WaitJS(t, ctx, `document.getElementById('budgets').dataset.loaded === "true" && document.querySelectorAll('#budgets li.budget').length === 3`, 20*time.Second)
	screenshot(t, tab, "budgets-cost.png", 1280, 800)
	noScriptErrors(t, tab, "401")
}
