package backend

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

func TestUsageBadParams(t *testing.T) {
	e := newEnv(t)
	for _, tt := range []struct{ query, name, value string }{
		{"from=last-week", "from", "last-week"},
		{"to=21.11.2026", "to", "21.11.2026"},
		{"from=2026-11-22&to=2026-11-20", "to", "2026-11-20"},
	} {
		var eb errorBody
		code := e.call("GET", "/api/usage?"+tt.query, nil, nil, &eb)
		if code != 400 || !strings.HasPrefix(eb.Error, tt.name+" must be ") || !strings.Contains(eb.Error, tt.value) {
			t.Errorf("?%s: %d %q, want 400 naming %s and %q", tt.query, code, eb.Error, tt.name, tt.value)
		}
	}
}

// TestUsage: rows per (day, model, project) from the store, totals that are
// their sum, and the range and project filters.
func TestUsage(t *testing.T) { eachStore(t, testUsage) }

func testUsage(t *testing.T, e *env) {
	day := func(d int) time.Time { return time.Date(2026, 11, d, 12, 0, 0, 0, time.UTC) }
	runs := []run{
		{session: "a", prompt: "p", cwd: "/work/app", model: "claude-sonnet-4-5", tool: "Bash", cost: 0.25, tokens: 100, at: day(18)},
		{session: "b", prompt: "p", cwd: "/work/app", model: "claude-opus-4-1", tool: "Bash", cost: 1.5, tokens: 200, at: day(18)},
		{session: "c", prompt: "p", cwd: "/work/docs", model: "claude-sonnet-4-5", tool: "Bash", cost: 0.125, tokens: 300, at: day(19)},
		{session: "d", prompt: "p", cwd: "/work/app", model: "claude-sonnet-4-5", tool: "Bash", cost: 0.0625, tokens: 400, at: day(20)},
	}
	for _, r := range runs {
		e.postRun(r)
	}

	var all usageResponse
	if code := e.call("GET", "/api/usage", nil, nil, &all); code != 200 {
		t.Fatalf("usage: %d", code)
	}
	var got []string
	for _, r := range all.Rows {
		got = append(got, r.Day+" "+r.Model+" "+r.Project)
	}
	want := []string{
		"2026-11-18 claude-opus-4-1 /work/app",
		"2026-11-18 claude-sonnet-4-5 /work/app",
		"2026-11-19 claude-sonnet-4-5 /work/docs",
		"2026-11-20 claude-sonnet-4-5 /work/app",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var cost float64
	var input int64
	for _, r := range runs {
		cost += r.cost
		input += r.tokens
	}
	tot := all.Totals
	if math.Abs(tot.CostUSD-cost) > 1e-9 || tot.Usage.InputTokens != input || tot.Usage.OutputTokens != 4 || tot.Results != 4 {
		t.Errorf("totals %+v, want cost %v, %d input tokens, 4 output, 4 results", tot, cost, input)
	}

	for _, tt := range []struct {
		query string
		cost  float64
		rows  int
	}{
		{"from=2026-11-19", 0.1875, 2},
		{"to=2026-11-18", 1.75, 2}, // a date in to includes that day
		{"from=2026-11-19&to=2026-11-19", 0.125, 1},
		{"from=2026-11-18T12:00:01Z&to=2026-11-20T00:00:00Z", 0.125, 1},
		{"project=%2Fwork%2Fapp", 1.8125, 3},
		{"project=%2Fwork%2Fapp&from=2026-11-19", 0.0625, 1},
		{"from=2026-11-21", 0, 0},
	} {
		var u usageResponse
		code := e.call("GET", "/api/usage?"+tt.query, nil, nil, &u)
		if code != 200 || len(u.Rows) != tt.rows || math.Abs(u.Totals.CostUSD-tt.cost) > 1e-9 {
			t.Errorf("?%s: %d, %d rows, $%v; want %d rows, $%v", tt.query, code, len(u.Rows), u.Totals.CostUSD, tt.rows, tt.cost)
		}
	}

	resp := e.do("GET", "/api/usage?from=2026-11-21", nil, nil)
	body := readAll(t, resp)
	if !strings.Contains(body, `"rows":[]`) {
		t.Errorf("no rows: %s, want []", body)
	}
	if st := resp.Header.Get("Server-Timing"); !serverTiming.MatchString(st) {
		t.Errorf("Server-Timing %q", st)
	}
}

func TestSumUsage(t *testing.T) {
	rows := []store.UsageRow{
		{Usage: store.Usage{InputTokens: 1, OutputTokens: 2, CacheReadInputTokens: 3, CacheCreationInputTokens: 4}, CostUSD: 0.5, Results: 1},
		{Usage: store.Usage{InputTokens: 10, OutputTokens: 20, CacheReadInputTokens: 30, CacheCreationInputTokens: 40}, CostUSD: 0.25, Results: 2},
	}
	got := sumUsage(rows)
	want := usageTotals{Usage: store.Usage{InputTokens: 11, OutputTokens: 22, CacheReadInputTokens: 33, CacheCreationInputTokens: 44}, CostUSD: 0.75, Results: 3}
	if got != want {
		t.Errorf("sumUsage = %+v, want %+v", got, want)
	}
	if z := sumUsage(nil); z != (usageTotals{}) {
		t.Errorf("sumUsage(nil) = %+v", z)
	}
}
