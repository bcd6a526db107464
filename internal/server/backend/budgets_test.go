package backend

import (
	"strings"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/budget"
)

// TestBudgets: spend per budget from the usage rows of its period and the
// projects it covers, readable with an ingest (helper) token and with read,
// and a push once per threshold per period.
func TestBudgets(t *testing.T) {
	for _, st := range []struct {
		name string
		env  func(*testing.T, ...envOption) *env
	}{
		{"memory", newEnv},
		{"sqlite", func(t *testing.T, o ...envOption) *env { return newEnvWith(t, openSQLite(t), o...) }},
	} {
		t.Run(st.name, func(t *testing.T) { testBudgets(t, st.env) })
	}
}

func testBudgets(t *testing.T, newE func(*testing.T, ...envOption) *env) {
	p := newFakePusher()
	rules := []budget.Rule{
		{Project: "*", Period: budget.Day, USD: 10, WarnAt: 0.8},
		{Project: "app", Period: budget.Day, USD: 1, WarnAt: 0.5},
		{Project: "/work/docs", Period: budget.Month, USD: 100, WarnAt: 0.8},
	}
	e := newE(t, func(o *Options) {
		o.ServeTokens, o.Budgets, o.pusher, o.PublicURL = scopedTokens, rules, p, "https://relay.example"
	})
	now := time.Now().UTC()
	e.postRun(run{session: "a", prompt: "p", cwd: "/work/app", model: "m", tool: "Bash", cost: 0.25, tokens: 1, at: now})
	e.postRun(run{session: "b", prompt: "p", cwd: "/other/app", model: "m", tool: "Bash", cost: 0.5, tokens: 1, at: now})
	e.postRun(run{session: "c", prompt: "p", cwd: "/work/docs", model: "m", tool: "Bash", cost: 2, tokens: 1, at: now})
	e.postRun(run{session: "old", prompt: "p", cwd: "/work/app", model: "m", tool: "Bash", cost: 5, tokens: 1, at: now.AddDate(0, 0, -40)})

	for _, tok := range []string{ingestToken, readToken, helperToken} {
		var got budget.Response
		if code := e.call("GET", "/api/budgets", nil, bearer(tok), &got); code != 200 || len(got.Budgets) != 3 {
			t.Fatalf("GET /api/budgets with %s: %d %+v", tok, code, got)
		}
		all, app, docs := got.Budgets[0], got.Budgets[1], got.Budgets[2]
		if all.SpentUSD != 2.75 || all.State != budget.OK || all.RemainingUSD != 7.25 {
			t.Errorf("*: %+v", all)
		}
		if app.SpentUSD != 0.75 || app.State != budget.Warning || app.RemainingUSD != 0.25 || !app.PeriodEnd.Equal(app.PeriodStart.AddDate(0, 0, 1)) {
			t.Errorf("app (both machines' app): %+v", app)
		}
		if docs.SpentUSD != 2 || docs.Period != budget.Month || docs.PeriodStart.Day() != 1 {
			t.Errorf("/work/docs: %+v", docs)
		}
	}
	if code := e.call("GET", "/api/budgets", nil, bearer("not-a-token"), nil); code != 401 {
		t.Errorf("no token: %d, want 401", code)
	}

	select {
	case m := <-p.sent:
		if m.Title != "Budget warning: Project app" || !strings.Contains(m.Body, "$0.750 of $1.00") || m.ClickURL != "https://relay.example/#budgets" {
			t.Errorf("push: %+v", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no budget push")
	}
	// Over the cap: the exhaustion is pushed once; the warning not again.
	e.postRun(run{session: "d", prompt: "p", cwd: "/work/app", model: "m", tool: "Bash", cost: 0.5, tokens: 1, at: now})
	select {
	case m := <-p.sent:
		if m.Title != "Budget exhausted: Project app" || !strings.Contains(m.Body, "refused") {
			t.Errorf("push: %+v", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no exhaustion push")
	}
	e.srv.pushBudgets(t.Context(), time.Now())
	select {
	case m := <-p.sent:
		t.Errorf("a push again: %+v", m)
	default:
	}
}
