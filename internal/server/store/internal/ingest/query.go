package ingest

import (
	"strconv"
	"strings"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

// Dialect is what differs between the backends' read queries.
type Dialect struct {
	// Placeholder is the n-th (from 1) parameter: "?" or "$n".
	Placeholder func(n int) string
	// Contains is a case-sensitive substring test of two text expressions;
	// both sides are lower-cased already (store.SearchNeedle).
	Contains func(haystack, needle string) string
	// Int is an integer aggregate as the driver reads it into an int64.
	Int func(expr string) string
	// ByteOrder is appended to text in ORDER BY to sort in byte order, as Go
	// compares strings.
	ByteOrder string
}

// query builds a statement's WHERE clause and arguments.
type query struct {
	d     Dialect
	where []string
	args  []any
}

// arg adds a parameter and returns its placeholder.
func (q *query) arg(v any) string {
	q.args = append(q.args, v)
	return q.d.Placeholder(len(q.args))
}

func (q *query) and(cond string) { q.where = append(q.where, cond) }

func (q *query) whereClause() string {
	if len(q.where) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(q.where, " AND ")
}

// ListQuery is Sessions' statement: newest UpdatedAt first, then greatest
// ID; filters as store.ListOptions says. Staleness is judged in the query,
// against opts.StaleBefore: it changes with the clock, so no column holds it.
//
// A search reads session_search (one bounded text per session), never
// events, and reads it first, whole, in one sequential scan: walking the
// list in order and looking each session's text up (what both planners
// choose for a plain subquery, expecting many matches) took 2–10 times as
// long at 10,000 sessions when few match, the case that reads everything.
func ListQuery(d Dialect, opts store.ListOptions) (string, []any) {
	q := &query{d: d}
	with := ""
	if n := store.SearchNeedle(opts.Query); n != "" {
		with = "WITH found AS MATERIALIZED (SELECT session_id FROM session_search WHERE " +
			d.Contains("text", q.arg(n)) + ") "
		q.and("id IN (SELECT session_id FROM found)")
	}
	switch opts.Status {
	case "":
	case store.StatusStale: // running, no event since the cutoff (computed now: no column)
		q.and("status = " + q.arg(store.StatusRunning) + " AND updated_at < " + q.arg(Nanos(opts.StaleBefore())))
	case store.StatusRunning:
		q.and("status = " + q.arg(store.StatusRunning) + " AND updated_at >= " + q.arg(Nanos(opts.StaleBefore())))
	default:
		q.and("status = " + q.arg(opts.Status))
	}
	if opts.Project != "" {
		q.and("project = " + q.arg(opts.Project))
	}
	if !opts.From.IsZero() {
		q.and("created_at >= " + q.arg(Nanos(opts.From)))
	}
	if !opts.To.IsZero() {
		q.and("created_at < " + q.arg(Nanos(opts.To)))
	}
	if c := opts.After; c != nil {
		q.and("(updated_at, id) < (" + q.arg(Nanos(c.UpdatedAt)) + ", " + q.arg(c.ID) + ")")
	}
	return with + "SELECT " + SessionColumns + " FROM sessions" + q.whereClause() +
		" ORDER BY updated_at DESC, id DESC LIMIT " + q.arg(Limit(opts.Limit)), q.args
}

// UsageQuery is Usage's statement: the usage rows of counted results,
// grouped by (day, model, project) in SQL. A row without a model takes its
// session's; the project is the session's, as it is now. Results counts
// turns: a cost-only result's rows (store.EndKeyPrefix) add their cost but
// no result.
func UsageQuery(d Dialect, uq store.UsageQuery) (string, []any) {
	q := &query{d: d}
	if !uq.From.IsZero() {
		q.and("u.at >= " + q.arg(Nanos(uq.From)))
	}
	if !uq.To.IsZero() {
		q.and("u.at < " + q.arg(Nanos(uq.To)))
	}
	if uq.Project != "" {
		q.and("s.project = " + q.arg(uq.Project))
	}
	return `SELECT day, model, project, ` + d.Int("SUM(in_tok)") + `, ` + d.Int("SUM(out_tok)") + `, ` +
		d.Int("SUM(cr_tok)") + `, ` + d.Int("SUM(cc_tok)") + `, SUM(cost), ` +
		d.Int("SUM(turn)") + `, ` + d.Int("COUNT(DISTINCT session_id)") + `
		FROM (SELECT u.day,
			CASE WHEN u.model <> '' THEN u.model ELSE s.model END AS model,
			s.project, u.session_id, u.input_tokens AS in_tok, u.output_tokens AS out_tok,
			u.cache_read_input_tokens AS cr_tok, u.cache_creation_input_tokens AS cc_tok,
			u.cost_usd AS cost,
			CASE WHEN substr(u.result_key, 1, ` + strconv.Itoa(len(store.EndKeyPrefix)) + `) = '` + store.EndKeyPrefix + `' THEN 0 ELSE 1 END AS turn
			FROM result_usage u JOIN sessions s ON s.id = u.session_id` + q.whereClause() + `) r
		GROUP BY day, model, project
		ORDER BY day, model ` + d.ByteOrder + `, project ` + d.ByteOrder, q.args
}

// ApprovalsQuery is Approvals' statement: requested approvals, newest
// request first (ties: greatest approval_id).
func ApprovalsQuery(d Dialect, f store.ApprovalFilter) (string, []any) {
	q := &query{d: d}
	q.and("requested = 1")
	if f.State != "" {
		q.and("state = " + q.arg(f.State))
	}
	if f.SessionID != "" {
		q.and("session_id = " + q.arg(f.SessionID))
	}
	return "SELECT " + ApprovalColumns + ", " + RemoteColumns + " FROM approvals" + q.whereClause() +
		" ORDER BY requested_at DESC, approval_id DESC LIMIT " + q.arg(Limit(f.Limit)), q.args
}
