// Package budget is spend caps across runs and machines (issue 26, item 1):
// the rules `serve.budgets` configures, the periods they count over (UTC
// day, week or month, with a configurable start), which projects a rule
// covers, the status the backend serves at GET /api/budgets, and the
// helper's client that asks for it before a run or a turn starts.
//
// Spend is the backend's own usage rows (store.Usage), so every machine's
// runs count toward one cap. The helper refuses a run when a budget that
// covers its working directory is exhausted (ExhaustedError), and passes
// the smallest remaining amount to the CLI as --max-budget-usd, so the CLI
// stops a run that would cross the cap with its own accounting.
//
// # Concurrent runs
//
// Budget is not reserved per run: each run that starts is given what
// remains when it starts. So k runs started while R remains may spend up
// to k·R together, and each may pass its limit by one API response (the
// CLI checks its budget after each response). The overshoot is bounded by
// (runs started in the same period while the budget was not exhausted) ×
// (remaining at their start) + one response each, and it stops there: the
// next run or turn after their spend reached the backend is refused.
// Reservation would bound it tighter, but it needs a ledger that releases
// what a crashed helper or an offline machine never spent, and it would
// refuse runs against budget that mostly goes unused; a cap that is a
// team's guard rail, not a billing system, does better with the simple
// bound.
package budget
