package config

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cast"

	"github.com/claude-relay/claude-relay/internal/budget"
)

// Budgets is the helper's side of spend caps (issue 26): what it does when
// the backend cannot be asked. The caps themselves are Serve.Budgets.
type Budgets struct {
	Offline budget.Offline // allow (default) or deny
}

// budgetKeys are the budget keys, in a block of their own so that other
// features' keys merge beside them; init appends them to keys (after every
// other key, which is also where `claude-relay config` lists them).
var budgetKeys = []key{
	{name: "serve.budgets", def: constant(""), apply: func(c *Config, raw any) error {
		rules, err := budgetRules(raw)
		c.Serve.Budgets = rules
		return err
	}},
	{name: "budgets.offline", def: constant(string(budget.OfflineAllow)), apply: func(c *Config, raw any) error {
		s, err := enum(raw, string(budget.OfflineAllow), string(budget.OfflineDeny))
		c.Budgets.Offline = budget.Offline(s)
		return err
	}},
}

func init() { keys = append(keys, budgetKeys...) }

// budgetRules reads serve.budgets: a YAML list of maps, or the same list
// as JSON (CLAUDE_RELAY_SERVE_BUDGETS). Each entry is checked
// (budget.Rule.Validate); the error names the entry.
func budgetRules(raw any) ([]budget.Rule, error) {
	var items []any
	switch v := raw.(type) {
	case nil:
		return nil, nil
	case []any:
		items = v
	case []map[string]any:
		for _, m := range v {
			items = append(items, m)
		}
	case string:
		s := strings.TrimSpace(v)
		if s == "" {
			return nil, nil
		}
		if err := json.Unmarshal([]byte(s), &items); err != nil {
			return nil, fmt.Errorf(`allowed: a list of budgets, as JSON in the environment: [{"project":"*","period":"day","usd":5}] (%v)`, err)
		}
	default:
		return nil, fmt.Errorf(`allowed: a list of budgets, each {project, period, usd, warn_at, week_start, month_start_day}`)
	}
	out := make([]budget.Rule, 0, len(items))
	for i, item := range items {
		r, err := budgetRule(item)
		if err == nil {
			err = r.Validate()
		}
		if err != nil {
			return nil, fmt.Errorf("budget %d: %w; allowed: project (\"*\", a full path or a basename), period (day, week, month), usd (> 0), "+
				"optional warn_at (0–1, default 0.8), week_start (monday…sunday), month_start_day (1–28)", i+1, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// budgetRule reads one entry; unknown fields are mistakes, not ignored, so
// a misspelt warn_at does not silently take the default.
func budgetRule(item any) (budget.Rule, error) {
	m, ok := item.(map[string]any)
	if !ok {
		return budget.Rule{}, fmt.Errorf("%w: an entry is not a map", budget.ErrRule)
	}
	var r budget.Rule
	var err error
	for k, v := range m {
		switch strings.ToLower(k) {
		case "project":
			r.Project, err = cast.ToStringE(v)
		case "period":
			var p string
			p, err = cast.ToStringE(v)
			r.Period = budget.Period(p)
		case "usd":
			r.USD, err = cast.ToFloat64E(v)
		case "warn_at":
			r.WarnAt, err = cast.ToFloat64E(v)
		case "week_start":
			r.WeekStart, err = cast.ToStringE(v)
		case "month_start_day":
			r.MonthStartDay, err = cast.ToIntE(v)
		default:
			err = fmt.Errorf("unknown field %q", k)
		}
		if err != nil {
			return r, fmt.Errorf("%w: %s: %w", budget.ErrRule, k, err)
		}
	}
	return r, nil
}
