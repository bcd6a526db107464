package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/claude-relay/claude-relay/internal/server/store/internal/ingest"
)

// statements are prepared once per Store: parsing SQL was a third of an
// Append's CPU time.
type statements struct {
	// writer
	knownEvents, session, insertSession, interactions, knownResults *sql.Stmt
	insertEvent, insertResult, insertResultUsage, upsertInteraction *sql.Stmt
	topConversation, topInteraction, updateSession                  *sql.Stmt
	search, upsertSearch, approvals, runEnds, upsertApproval        *sql.Stmt
	upsertRunEnd                                                    *sql.Stmt
	// readers
	readSession, readEvents, readApproval *sql.Stmt

	all []*sql.Stmt
}

// preparer is a *sql.DB, or the *sql.Tx of a migration's backfill.
type preparer interface {
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

func prepare(ctx context.Context, w, r *sql.DB) (*statements, error) {
	st := &statements{}
	err := st.prepareWriter(ctx, w)
	if err == nil {
		err = st.prepareReaders(ctx, r)
	}
	if err != nil {
		_ = st.close()
		return nil, err
	}
	return st, nil
}

// p prepares q into dst, doing nothing after a failure (reported once).
func (st *statements) p(ctx context.Context, db preparer, err *error, dst **sql.Stmt, q string) {
	if *err != nil {
		return
	}
	*dst, *err = db.PrepareContext(ctx, q)
	if *err != nil {
		*err = fmt.Errorf("prepare %q: %w", q, *err)
		return
	}
	st.all = append(st.all, *dst)
}

func (st *statements) prepareWriter(ctx context.Context, w preparer) error {
	var err error
	p := func(dst **sql.Stmt, q string) { st.p(ctx, w, &err, dst, q) }
	// CROSS JOIN keeps the pairs as the outer loop: one primary-key lookup
	// of (session_id, event_id) each.
	p(&st.knownEvents, `SELECT e.session_id, e.event_id, e.cursor FROM json_each(?) AS k
		CROSS JOIN events AS e
		ON e.session_id = json_extract(k.value, '$[0]') AND e.event_id = json_extract(k.value, '$[1]')`)
	p(&st.session, `SELECT `+ingest.StateColumns+` FROM sessions WHERE id = ?`)
	p(&st.insertSession, `INSERT INTO sessions (id, created_at, updated_at) VALUES (?1, ?2, ?2)`)
	p(&st.interactions, `SELECT `+ingest.InteractionColumns+` FROM interactions
		WHERE session_id = ? AND interaction_id IN (SELECT value FROM json_each(?))`)
	p(&st.knownResults, `SELECT result_key FROM results
		WHERE session_id = ? AND result_key IN (SELECT value FROM json_each(?))`)
	p(&st.insertEvent, `INSERT INTO events (`+ingest.EventColumns+`, received_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	p(&st.insertResult, `INSERT INTO results (session_id, result_key, event_id) VALUES (?, ?, ?)`)
	p(&st.insertResultUsage, `INSERT INTO result_usage (session_id, result_key, model, day, at,
		input_tokens, output_tokens, cache_read_input_tokens, cache_creation_input_tokens, cost_usd)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	p(&st.upsertInteraction, `INSERT INTO interactions (session_id, `+ingest.InteractionColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (session_id, interaction_id) DO UPDATE SET
			event_count = excluded.event_count, first_event_at = excluded.first_event_at,
			conv_id = excluded.conv_id, conv_seq = excluded.conv_seq, conv_at = excluded.conv_at,
			lifecycle_seq = excluded.lifecycle_seq, status = excluded.status,
			lifecycle_at = excluded.lifecycle_at, started_seq = excluded.started_seq,
			started_at = excluded.started_at, turn_done_seq = excluded.turn_done_seq`)
	// Ordered as store.MoreRecent orders (BINARY collation is byte order, as
	// Go compares strings).
	p(&st.topConversation, `SELECT conv_id FROM interactions WHERE session_id = ? AND conv_id <> ''
		ORDER BY conv_at DESC, interaction_id DESC LIMIT 1`)
	p(&st.topInteraction, `SELECT `+ingest.InteractionColumns+` FROM interactions WHERE session_id = ?
		ORDER BY first_event_at DESC, interaction_id DESC LIMIT 1`)
	p(&st.updateSession, `UPDATE sessions SET external_conversation_id = ?,
		conversation_ids = ?, status = ?, event_count = ?, interaction_count = ?,
		input_tokens = ?, output_tokens = ?, cache_read_input_tokens = ?,
		cache_creation_input_tokens = ?, total_cost_usd = ?, created_at = ?, updated_at = ?,
		started_at = ?, ended_at = ?, last_cursor = ?, title = ?, project = ?, source = ?,
		model = ?, turns = ?, billed_to = ?, list_keys = ? WHERE id = ?`)
	p(&st.search, `SELECT text FROM session_search WHERE session_id = ?`)
	p(&st.upsertSearch, `INSERT INTO session_search (session_id, text) VALUES (?, ?)
		ON CONFLICT (session_id) DO UPDATE SET text = excluded.text`)
	p(&st.approvals, `SELECT `+ingest.ApprovalColumns+`, `+ingest.RemoteColumns+` FROM approvals
		WHERE approval_id IN (SELECT value FROM json_each(?1))
		OR (session_id = ?2 AND run_id IN (SELECT value FROM json_each(?3)))`)
	p(&st.runEnds, `SELECT run_id, at, event_id FROM run_ends
		WHERE session_id = ? AND run_id IN (SELECT value FROM json_each(?))`)
	p(&st.upsertApproval, `INSERT INTO approvals (`+ingest.ApprovalColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (approval_id) DO UPDATE SET
			run_id = excluded.run_id, tool_name = excluded.tool_name, title = excluded.title,
			input = excluded.input, kind = excluded.kind, options = excluded.options,
			requested_at = excluded.requested_at, state = excluded.state,
			decision = excluded.decision, resolved_by = excluded.resolved_by,
			reason = excluded.reason, resolved_at = excluded.resolved_at,
			requested = excluded.requested, request_event = excluded.request_event,
			closure = excluded.closure, closure_event = excluded.closure_event,
			approver = excluded.approver, policy_rule = excluded.policy_rule,
			policy_reason = excluded.policy_reason`)
	// Keeps the earliest end whichever transaction stored one first.
	p(&st.upsertRunEnd, `INSERT INTO run_ends (session_id, run_id, at, event_id) VALUES (?, ?, ?, ?)
		ON CONFLICT (session_id, run_id) DO UPDATE SET at = excluded.at, event_id = excluded.event_id
		WHERE (excluded.at, excluded.event_id) < (run_ends.at, run_ends.event_id)`)
	return err
}

func (st *statements) prepareReaders(ctx context.Context, r preparer) error {
	var err error
	p := func(dst **sql.Stmt, q string) { st.p(ctx, r, &err, dst, q) }
	p(&st.readSession, `SELECT `+ingest.SessionColumns+` FROM sessions WHERE id = ?`)
	p(&st.readEvents, `SELECT `+ingest.EventColumns+` FROM events
		WHERE session_id = ? AND cursor > ? ORDER BY cursor LIMIT ?`)
	p(&st.readApproval, `SELECT `+ingest.ApprovalColumns+`, `+ingest.RemoteColumns+` FROM approvals
		WHERE approval_id = ?`)
	return err
}

func (st *statements) close() error {
	var errs []error
	for _, s := range st.all {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
