package budget

import (
	"errors"
	"fmt"
	"time"
)

// State is where a budget stands in its period.
type State string

// The states: under the warning threshold, at or over it, used up.
const (
	OK        State = "ok"
	Warning   State = "warning"
	Exhausted State = "exhausted"
)

// Status is one budget as GET /api/budgets serves it.
type Status struct {
	Project      string    `json:"project"`
	Period       Period    `json:"period"`
	CapUSD       float64   `json:"cap_usd"`
	SpentUSD     float64   `json:"spent_usd"`
	RemainingUSD float64   `json:"remaining_usd"` // never below 0
	WarnAt       float64   `json:"warn_at"`
	State        State     `json:"state"`
	PeriodStart  time.Time `json:"period_start"`
	PeriodEnd    time.Time `json:"period_end"` // when it resets
}

// Response is GET /api/budgets' body.
type Response struct {
	Budgets []Status  `json:"budgets"`
	Now     time.Time `json:"now"`
}

// StatusOf is r's status in the period that holds now, with spent spent
// in it.
func StatusOf(r Rule, spent float64, now time.Time) Status {
	start, end := r.Window(now)
	warnAt := r.WarnAt
	if warnAt == 0 {
		warnAt = DefaultWarnAt
	}
	s := Status{Project: r.Project, Period: r.Period, CapUSD: r.USD, SpentUSD: spent, RemainingUSD: max(r.USD-spent, 0),
		WarnAt: warnAt, State: OK, PeriodStart: start, PeriodEnd: end}
	switch {
	case spent >= r.USD:
		s.State = Exhausted
	case spent >= warnAt*r.USD:
		s.State = Warning
	}
	return s
}

// ErrExhausted is what an ExhaustedError wraps.
var ErrExhausted = errors.New("budget exhausted")

// ExhaustedError refuses a run or a turn: a budget that covers its
// project is used up until PeriodEnd.
type ExhaustedError struct{ Status Status }

func (e *ExhaustedError) Error() string {
	s := e.Status
	scope := "every project"
	if s.Project != AllProjects {
		scope = "project " + s.Project
	}
	return fmt.Sprintf("budget exhausted: %s has spent $%.4f of its $%.2f %s budget (serve.budgets); it resets at %s",
		scope, s.SpentUSD, s.CapUSD, periodly(s.Period), s.PeriodEnd.UTC().Format(time.RFC3339))
}

func (e *ExhaustedError) Unwrap() error { return ErrExhausted }

func periodly(p Period) string {
	switch p {
	case Day:
		return "daily"
	case Week:
		return "weekly"
	case Month:
		return "monthly"
	}
	return string(p)
}
