package budget

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestWindow(t *testing.T) {
	for _, tc := range []struct {
		name       string
		rule       Rule
		now        string
		start, end string
	}{
		{"day", Rule{Period: Day}, "2026-03-10T15:04:05Z", "2026-03-10T00:00:00Z", "2026-03-11T00:00:00Z"},
		{"day at midnight", Rule{Period: Day}, "2026-03-10T00:00:00Z", "2026-03-10T00:00:00Z", "2026-03-11T00:00:00Z"},
		{"day in another zone is UTC's", Rule{Period: Day}, "2026-03-10T23:30:00-05:00", "2026-03-11T00:00:00Z", "2026-03-12T00:00:00Z"},
		{"day over a year end", Rule{Period: Day}, "2026-12-31T23:59:59Z", "2026-12-31T00:00:00Z", "2027-01-01T00:00:00Z"},
		// 2026-03-10 is a Tuesday.
		{"week from monday", Rule{Period: Week}, "2026-03-10T12:00:00Z", "2026-03-09T00:00:00Z", "2026-03-16T00:00:00Z"},
		{"week on its first day", Rule{Period: Week}, "2026-03-09T00:00:00Z", "2026-03-09T00:00:00Z", "2026-03-16T00:00:00Z"},
		{"week from sunday", Rule{Period: Week, WeekStart: "sunday"}, "2026-03-10T12:00:00Z", "2026-03-08T00:00:00Z", "2026-03-15T00:00:00Z"},
		{"week from wednesday, before it", Rule{Period: Week, WeekStart: "wednesday"}, "2026-03-10T12:00:00Z", "2026-03-04T00:00:00Z", "2026-03-11T00:00:00Z"},
		{"week over a year end", Rule{Period: Week}, "2027-01-01T08:00:00Z", "2026-12-28T00:00:00Z", "2027-01-04T00:00:00Z"},
		{"month", Rule{Period: Month}, "2026-03-10T12:00:00Z", "2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z"},
		{"month from the 15th, before it", Rule{Period: Month, MonthStartDay: 15}, "2026-03-10T12:00:00Z", "2026-02-15T00:00:00Z", "2026-03-15T00:00:00Z"},
		{"month from the 15th, on it", Rule{Period: Month, MonthStartDay: 15}, "2026-03-15T00:00:00Z", "2026-03-15T00:00:00Z", "2026-04-15T00:00:00Z"},
		{"month from the 28th over February", Rule{Period: Month, MonthStartDay: 28}, "2026-03-01T00:00:00Z", "2026-02-28T00:00:00Z", "2026-03-28T00:00:00Z"},
		{"month over a year end", Rule{Period: Month, MonthStartDay: 5}, "2027-01-02T00:00:00Z", "2026-12-05T00:00:00Z", "2027-01-05T00:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start, end := tc.rule.Window(at(tc.now))
			if !start.Equal(at(tc.start)) || !end.Equal(at(tc.end)) || start.Location() != time.UTC {
				t.Errorf("Window(%s) = %s, %s; want %s, %s (UTC)", tc.now, start, end, tc.start, tc.end)
			}
		})
	}
}

func TestCovers(t *testing.T) {
	for _, tc := range []struct {
		pattern, project string
		want             bool
	}{
		{"*", "/home/a/app", true},
		{"*", "", true},
		{"/home/a/app", "/home/a/app", true},
		{"/home/a/app", "/home/a/app/", true},
		{"/home/a/app", "/home/b/app", false},
		{"/home/a/app", "/home/a/app/sub", false},
		{"app", "/home/a/app", true},
		{"app", "/srv/b/app/", true},
		{"app", "/home/a/application", false},
		{"app", "", false},
	} {
		if got := Covers(tc.pattern, tc.project); got != tc.want {
			t.Errorf("Covers(%q, %q) = %v, want %v", tc.pattern, tc.project, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := Rule{Project: "*", Period: "Week", USD: 5, WeekStart: "Sunday"}
	if err := ok.Validate(); err != nil || ok.WarnAt != DefaultWarnAt || ok.Period != Week || ok.WeekStart != "sunday" {
		t.Fatalf("Validate = %v, %+v", err, ok)
	}
	for _, tc := range []struct {
		rule Rule
		says string
	}{
		{Rule{Period: Day, USD: 1}, "project is missing"},
		{Rule{Project: "*", Period: "year", USD: 1}, `period "year"`},
		{Rule{Project: "*", Period: Day}, "usd 0"},
		{Rule{Project: "*", Period: Day, USD: -1}, "usd -1"},
		{Rule{Project: "*", Period: Day, USD: 1, WarnAt: 1.5}, "warn_at 1.5"},
		{Rule{Project: "*", Period: Month, USD: 1, MonthStartDay: 31}, "month_start_day 31"},
		{Rule{Project: "*", Period: Day, USD: 1, MonthStartDay: 2}, "month_start_day is for period month"},
		{Rule{Project: "*", Period: Week, USD: 1, WeekStart: "mon"}, `week_start "mon"`},
		{Rule{Project: "*", Period: Day, USD: 1, WeekStart: "monday"}, "week_start is for period week"},
	} {
		err := tc.rule.Validate()
		if !errors.Is(err, ErrRule) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Validate(%+v) = %v; want one that says %q", tc.rule, err, tc.says)
		}
	}
}

func TestStatusAndDecide(t *testing.T) {
	now := at("2026-03-10T15:00:00Z")
	r := Rule{Project: "app", Period: Day, USD: 1, WarnAt: 0.8}
	for _, tc := range []struct {
		spent float64
		want  State
	}{{0.1, OK}, {0.8, Warning}, {1, Exhausted}, {3, Exhausted}} {
		if s := StatusOf(r, tc.spent, now); s.State != tc.want || s.RemainingUSD != max(1-tc.spent, 0) {
			t.Errorf("StatusOf(spent %v) = %+v, want %s", tc.spent, s, tc.want)
		}
	}
	all := StatusOf(Rule{Project: "*", Period: Month, USD: 10}, 9.5, now)
	app := StatusOf(r, 0.2, now)
	g, err := Decide([]Status{all, app}, "/w/app")
	if err != nil || !g.Limited || g.RemainingUSD != 0.5 || g.Budget.Project != "*" {
		t.Errorf("Decide = %+v, %v; want the * budget's $0.5", g, err)
	}
	if g, err := Decide([]Status{app}, "/w/other"); err != nil || g.Limited {
		t.Errorf("Decide(uncovered) = %+v, %v; want unlimited", g, err)
	}
	spent := StatusOf(r, 1.25, now)
	_, err = Decide([]Status{all, spent}, "/w/app")
	var ex *ExhaustedError
	if !errors.As(err, &ex) || !errors.Is(err, ErrExhausted) {
		t.Fatalf("Decide(exhausted) = %v", err)
	}
	for _, want := range []string{"project app", "$1.2500", "$1.00 daily", "2026-03-11T00:00:00Z"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not say %q", err, want)
		}
	}
}
