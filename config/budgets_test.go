package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/internal/budget"
)

func TestBudgetsFromFileAndEnv(t *testing.T) {
	dir := t.TempDir()
	l, err := Load(LoadOptions{LookupEnv: envOf(map[string]string{"HOME": dir})})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Config.Serve.Budgets) != 0 || l.Config.Budgets.Offline != budget.OfflineAllow {
		t.Errorf("defaults: %+v, %q", l.Config.Serve.Budgets, l.Config.Budgets.Offline)
	}
	file := writeFile(t, dir, "serve:\n  budgets:\n    - project: \"*\"\n      period: day\n      usd: 5\n"+
		"    - project: app\n      period: month\n      usd: 50\n      warn_at: 0.5\n      month_start_day: 15\nbudgets:\n  offline: deny\n")
	l, err = Load(LoadOptions{File: file, LookupEnv: envOf(map[string]string{"HOME": dir})})
	if err != nil {
		t.Fatal(err)
	}
	want := []budget.Rule{{Project: "*", Period: budget.Day, USD: 5, WarnAt: 0.8},
		{Project: "app", Period: budget.Month, USD: 50, WarnAt: 0.5, MonthStartDay: 15}}
	if got := l.Config.Serve.Budgets; len(got) != 2 || got[0] != want[0] || got[1] != want[1] || l.Config.Budgets.Offline != budget.OfflineDeny {
		t.Errorf("from the file: %+v, %q", got, l.Config.Budgets.Offline)
	}
	l, err = Load(LoadOptions{File: file, LookupEnv: envOf(map[string]string{"HOME": dir,
		"CLAUDE_RELAY_SERVE_BUDGETS": `[{"project":"/w/app","period":"week","usd":0.01,"week_start":"sunday"}]`})})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Config.Serve.Budgets; len(got) != 1 || got[0] != (budget.Rule{Project: "/w/app", Period: budget.Week, USD: 0.01, WarnAt: 0.8, WeekStart: "sunday"}) ||
		l.Origins["serve.budgets"].Source != FromEnv {
		t.Errorf("env over the file: %+v, %v", got, l.Origins["serve.budgets"])
	}
}

func TestBudgetsValidation(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ env, says string }{
		{`[{"project":"*","period":"year","usd":1}]`, `budget 1: invalid budget: period "year"`},
		{`[{"project":"*","period":"day","usd":1},{"project":"*","period":"day","usd":-2}]`, "budget 2: invalid budget: usd -2"},
		{`[{"project":"*","period":"day","usd":1,"warn":0.5}]`, `unknown field "warn"`},
		{`{"project":"*"}`, "a list of budgets"},
	} {
		_, err := Load(LoadOptions{LookupEnv: envOf(map[string]string{"HOME": dir, "CLAUDE_RELAY_SERVE_BUDGETS": tc.env})})
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Key != "serve.budgets" || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v; want a serve.budgets error that says %q", tc.env, err, tc.says)
		}
	}
	_, err := Load(LoadOptions{LookupEnv: envOf(map[string]string{"HOME": dir, "CLAUDE_RELAY_BUDGETS_OFFLINE": "maybe"})})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "allow, deny") {
		t.Errorf("budgets.offline maybe: %v", err)
	}
}
