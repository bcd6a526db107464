package dashboard_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/claude-relay/claude-relay/internal/server/backend/memstore"
	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/testkit/browser"
)

// TestCostPageInBrowser: three days of two models' results draw three
// stacked bars of two segments, with a legend and hover titles, and the
// totals are the sum of the sessions' costs.
func TestCostPageInBrowser(t *testing.T) {
	s := newSite(t, memstore.New())
	today := time.Now().UTC().Truncate(24 * time.Hour)
	type spend struct {
		day            int // days before today
		model, project string
		cost           float64
		in, out        int
	}
	spends := []spend{
		{2, "claude-sonnet-4-5", "/work/webapp", 0.4213, 120000, 8000},
		{2, "claude-opus-4-1", "/work/infra", 1.25, 40000, 3000},
		{1, "claude-sonnet-4-5", "/work/webapp", 0.8, 210000, 12000},
		{1, "claude-opus-4-1", "/work/webapp", 2.1, 70000, 5200},
		{0, "claude-sonnet-4-5", "/work/infra", 0.3341, 90000, 6100},
		{0, "claude-opus-4-1", "/work/infra", 0.95, 30000, 2500},
	}
	var want, infra float64
	for i, sp := range spends {
		id := fmt.Sprintf("cost-%d", i)
		conv := "conv-" + id
		at := today.AddDate(0, 0, -sp.day).Add(time.Hour)
		s.postAt(id, at,
			runStarted("run-"+id, "Spend some tokens", sp.project, sp.model, ""),
			initModel(conv, sp.model, sp.project),
			resultCost(conv, sp.cost, sp.in, sp.out),
			runCompleted("run-"+id))
		want += sp.cost
		if sp.project == "/work/infra" {
			infra += sp.cost
		}
	}
	// A session before the default range (30 days) is not counted.
	s.postAt("old", today.AddDate(0, 0, -45), runStarted("run-old", "old", "/work/webapp", "claude-opus-4-1", ""),
		initModel("conv-old", "claude-opus-4-1", "/work/webapp"), resultCost("conv-old", 9, 1, 1), runCompleted("run-old"))

	// The page's total is what the sessions themselves say they cost.
	var list struct{ Sessions []store.Session }
	s.get("/api/sessions", &list)
	var sessions float64
	for _, ss := range list.Sessions {
		if ss.ID != "old" {
			sessions += ss.CostUSD
		}
	}
	if math.Abs(sessions-want) > 1e-9 {
		t.Fatalf("sessions cost $%v, posted $%v", sessions, want)
	}

	tab := browser.New(t, browser.Options{Width: 1280, Height: 800})
	ctx := tab.Ctx
	// The window's frame takes some of its height: make the page itself
	// 1280x800, the screenshots' size.
	must(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)))
	login(t, ctx, s.url)
	must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/cost")))
	browser.WaitJS(t, ctx, `document.body.dataset.state === "ready"`, 20*time.Second)

	t.Run("bars", func(t *testing.T) {
		days, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
			`Array.from(document.querySelectorAll('svg.chart g.day')).filter(g => g.querySelector('rect.bar')).map(g => g.dataset.day + ":" + Array.from(g.querySelectorAll('rect.bar')).map(r => r.dataset.model).sort().join("+"))`))
		must(t, err)
		var wantDays []string
		for d := 2; d >= 0; d-- {
			wantDays = append(wantDays, today.AddDate(0, 0, -d).Format("2006-01-02")+":claude-opus-4-1+claude-sonnet-4-5")
		}
		if strings.Join(days, " ") != strings.Join(wantDays, " ") {
			t.Errorf("bars %v, want %v", days, wantDays)
		}
		slots, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('svg.chart g.day').length`))
		if err != nil || slots != 30 {
			t.Errorf("%d day slots (%v), want 30 (the default range)", slots, err)
		}
		// Segments stack: a day's bar is as tall as its two segments.
		stacked, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`Array.from(document.querySelectorAll('svg.chart g.day')).every(g => {
			const r = Array.from(g.querySelectorAll('rect.bar')).map(b => [+b.getAttribute('y'), +b.getAttribute('height')]).sort((a, b) => a[0] - b[0]);
			return r.every((b, i) => i === 0 || Math.abs(r[i-1][0] + r[i-1][1] - b[0]) < 0.01);
		})`))
		if err != nil || !stacked {
			t.Errorf("segments do not stack (%v)", err)
		}
		title, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('svg.chart rect.bar[data-model="claude-opus-4-1"] title').textContent`))
		if err != nil || !strings.Contains(title, "claude-opus-4-1") || !strings.Contains(title, "$1.25") {
			t.Errorf("hover title %q (%v)", title, err)
		}
		legend, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#legend li')).map(li => li.textContent)`))
		if err != nil || len(legend) != 2 || !strings.HasPrefix(legend[0], "claude-opus-4-1") {
			t.Errorf("legend %q (%v), want opus (the bigger spend) then sonnet", legend, err)
		}
		labels, err := chromedp.Run(ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll('svg.chart text')).map(e => e.textContent).join("|")`))
		if err != nil || !strings.Contains(labels, "USD") || !strings.Contains(labels, "day (UTC)") || !strings.Contains(labels, "$0.00") {
			t.Errorf("axis labels %q (%v)", labels, err)
		}
	})

	t.Run("totals", func(t *testing.T) {
		wantText := fmt.Sprintf("$%.2f", want)
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('t-cost').textContent`))
		if err != nil || got != wantText {
			t.Errorf("total %q (%v), want %q, the sum of the sessions' costs", got, err, wantText)
		}
		foot, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#by-model tfoot td.cost').textContent + "|" + document.querySelector('#by-project tfoot td.cost').textContent`))
		if err != nil || foot != wantText+"|"+wantText {
			t.Errorf("table totals %q (%v)", foot, err)
		}
		tokens, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('t-tokens').textContent`))
		if err != nil || tokens != "596,800" {
			t.Errorf("tokens %q (%v), want 596,800 with thousands separators", tokens, err)
		}
		models, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#by-model tbody tr')).map(r => r.dataset.model + " " + r.querySelector('td.cost').textContent)`))
		if err != nil || strings.Join(models, ",") != "claude-opus-4-1 $4.30,claude-sonnet-4-5 $1.56" {
			t.Errorf("by model %q (%v)", models, err)
		}
		projects, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#by-project tbody tr')).map(r => r.querySelector('td.name').textContent)`))
		if err != nil || strings.Join(projects, ",") != "webapp,infra" {
			t.Errorf("by project %q (%v)", projects, err)
		}
		screenshot(t, tab, "cost.png", 0, 0)
	})

	t.Run("project filter", func(t *testing.T) {
		must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](
			`(() => { const e = document.getElementById('project'); e.value = '/work/infra'; e.dispatchEvent(new Event('change')); })()`)))
		wantText := fmt.Sprintf("$%.2f", infra)
		browser.WaitJS(t, ctx, `document.getElementById('t-cost').textContent === `+jsString(wantText), 10*time.Second)
		search, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.search`))
		if err != nil || search != "?project=%2Fwork%2Finfra" {
			t.Errorf("URL query %q (%v)", search, err)
		}
		// The other projects stay in the select.
		opts, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#project option').length`))
		if err != nil || opts != 3 {
			t.Errorf("%d project options (%v), want all projects, webapp, infra", opts, err)
		}
		must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`history.back()`)))
		browser.WaitJS(t, ctx, `document.getElementById('t-cost').textContent === `+jsString(fmt.Sprintf("$%.2f", want)), 10*time.Second)
	})

	t.Run("tokens and range", func(t *testing.T) {
		must(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("m-tokens"))))
		browser.WaitJS(t, ctx, `document.getElementById('chart-title').textContent === "Tokens by day" && location.search === "?metric=tokens"`, 10*time.Second)
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('svg.chart rect.bar').length`))
		if err != nil || n != 6 {
			t.Errorf("%d token bars (%v)", n, err)
		}
		// 90 days reach the old session.
		must(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.presets button[data-days="90"]`))))
		browser.WaitJS(t, ctx, `document.getElementById('t-cost').textContent === `+jsString(fmt.Sprintf("$%.2f", want+9)), 10*time.Second)
		// A range with nothing in it says so.
		must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/cost?from=2020-01-01&to=2020-01-31")))
		browser.WaitJS(t, ctx, `document.body.dataset.state === "ready" && !document.getElementById('empty').hidden`, 10*time.Second)
		msg, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('empty').textContent`))
		if err != nil || !strings.Contains(msg, "2020-01-01 and 2020-01-31") || !strings.Contains(msg, "widen the range") {
			t.Errorf("empty state %q (%v)", msg, err)
		}
	})

	t.Run("no script errors", func(t *testing.T) { noScriptErrors(t, tab, "401") })
}

// TestCostPageSafety: model and project names are text, in the chart's
// titles as in the tables.
func TestCostPageSafety(t *testing.T) {
	s := newSite(t, memstore.New())
	s.postAt("x", time.Now().UTC(), runStarted("run-x", "p", "/work/"+xssDir, xss, ""), initModel("conv-x", xss, "/work/"+xssDir),
		resultCost("conv-x", 0.01, 1, 1), runCompleted("run-x"))
	tab := browser.New(t, browser.Options{})
	login(t, tab.Ctx, s.url)
	must(t, chromedp.Do(tab.Ctx, chromedp.Navigate(s.url+"/cost")))
	browser.WaitJS(t, tab.Ctx, `document.body.dataset.state === "ready"`, 20*time.Second)
	got, err := chromedp.Run(tab.Ctx, chromedp.Evaluate[string](`document.querySelector('#by-model tbody td.name').textContent + "|" + document.querySelector('#by-project tbody td.name').textContent + "|" + document.querySelector('#legend .name').textContent`))
	if err != nil || got != xss+"|"+xssDir+"|"+xss {
		t.Errorf("names %q (%v)", got, err)
	}
	n, err := chromedp.Run(tab.Ctx, chromedp.Evaluate[int](`document.querySelectorAll('main img').length`))
	if err != nil || n != 0 {
		t.Errorf("%d <img> in the page (%v)", n, err)
	}
	noScriptErrors(t, tab, "401")
}
