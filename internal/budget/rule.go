package budget

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"
)

// Period is how long a budget's spend accumulates before it resets.
type Period string

// The periods, in UTC.
const (
	Day   Period = "day"
	Week  Period = "week"
	Month Period = "month"
)

// DefaultWarnAt is the share of the cap at which a budget warns.
const DefaultWarnAt = 0.8

// AllProjects is the project of a rule that covers every project.
const AllProjects = "*"

// Rule is one serve.budgets entry.
type Rule struct {
	// Project is "*", a project's full path (it contains a '/'), or its
	// basename, which covers every project of that name on any machine.
	Project string  `json:"project"`
	Period  Period  `json:"period"`
	USD     float64 `json:"usd"`
	// WarnAt is the share of USD at which the budget warns (0 < WarnAt ≤
	// 1); zero means DefaultWarnAt.
	WarnAt float64 `json:"warn_at,omitempty"`
	// WeekStart is the first day of a week period ("monday" when empty).
	WeekStart string `json:"week_start,omitempty"`
	// MonthStartDay is the day of the month a month period starts on
	// (1–28, so every month has it; 0 means 1).
	MonthStartDay int `json:"month_start_day,omitempty"`
}

// ErrRule is what every Validate error wraps.
var ErrRule = errors.New("invalid budget")

var weekdays = map[string]time.Weekday{
	"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
}

// Validate checks r and fills its defaults (WarnAt, WeekStart lower-cased).
func (r *Rule) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrRule, fmt.Sprintf(format, args...))
	}
	r.Project = strings.TrimSpace(r.Project)
	r.Period = Period(strings.ToLower(strings.TrimSpace(string(r.Period))))
	r.WeekStart = strings.ToLower(strings.TrimSpace(r.WeekStart))
	switch {
	case r.Project == "":
		return bad(`project is missing (allowed: "*", a project's full path, or its basename)`)
	case r.Period != Day && r.Period != Week && r.Period != Month:
		return bad("period %q (allowed: day, week, month)", r.Period)
	case math.IsNaN(r.USD) || math.IsInf(r.USD, 0) || r.USD <= 0:
		return bad("usd %v (allowed: a positive amount of dollars, like 5 or 0.5)", r.USD)
	case math.IsNaN(r.WarnAt) || r.WarnAt < 0 || r.WarnAt > 1:
		return bad("warn_at %v (allowed: a share of usd above 0 and at most 1, like 0.8)", r.WarnAt)
	case r.MonthStartDay < 0 || r.MonthStartDay > 28:
		return bad("month_start_day %d (allowed: 1 to 28, so that every month has it)", r.MonthStartDay)
	case r.MonthStartDay != 0 && r.Period != Month:
		return bad("month_start_day is for period month, not %s", r.Period)
	case r.WeekStart != "" && r.Period != Week:
		return bad("week_start is for period week, not %s", r.Period)
	}
	if _, ok := weekdays[r.WeekStart]; r.WeekStart != "" && !ok {
		return bad("week_start %q (allowed: monday … sunday)", r.WeekStart)
	}
	if r.WarnAt == 0 {
		r.WarnAt = DefaultWarnAt
	}
	return nil
}

// Window is the period of r that holds now: [start, end), in UTC.
func (r Rule) Window(now time.Time) (start, end time.Time) {
	now = now.UTC()
	midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	switch r.Period {
	case Week:
		first := time.Monday
		if d, ok := weekdays[r.WeekStart]; ok {
			first = d
		}
		back := (int(now.Weekday()) - int(first) + 7) % 7
		start = midnight.AddDate(0, 0, -back)
		return start, start.AddDate(0, 0, 7)
	case Month:
		day := max(r.MonthStartDay, 1)
		start = time.Date(now.Year(), now.Month(), day, 0, 0, 0, 0, time.UTC)
		if now.Before(start) {
			start = start.AddDate(0, -1, 0) // day ≤ 28: no normalisation into another month
		}
		return start, start.AddDate(0, 1, 0)
	default:
		return midnight, midnight.AddDate(0, 0, 1)
	}
}

// Covers reports whether r counts the spend of project (a working
// directory as the backend records it, or the helper's cwd).
func (r Rule) Covers(project string) bool {
	return Covers(r.Project, project)
}

// Covers reports whether a rule's project pattern covers project: "*"
// every project, a pattern with a '/' the same path, any other pattern the
// projects of that basename.
func Covers(pattern, project string) bool {
	switch {
	case pattern == AllProjects:
		return true
	case project == "":
		return false
	case strings.ContainsRune(pattern, '/'):
		return filepath.Clean(pattern) == filepath.Clean(project)
	default:
		return filepath.Base(filepath.Clean(project)) == pattern
	}
}
