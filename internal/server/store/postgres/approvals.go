package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/server/store/internal/ingest"
)

// Usage implements store.Store, aggregating in SQL.
func (s *Store) Usage(ctx context.Context, uq store.UsageQuery) ([]store.UsageRow, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	q, args := ingest.UsageQuery(dialect, uq)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: usage: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.UsageRow, error) { return ingest.ScanUsageRow(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: usage: %w", err)
	}
	if out == nil {
		out = []store.UsageRow{}
	}
	return out, nil
}

// Approvals implements store.Store.
func (s *Store) Approvals(ctx context.Context, f store.ApprovalFilter) ([]store.Approval, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	q, args := ingest.ApprovalsQuery(dialect, f)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: approvals: %w", err)
	}
	recs, err := pgx.CollectRows(rows, scanApproval)
	if err != nil {
		return nil, fmt.Errorf("postgres: approvals: %w", err)
	}
	return ingest.ApprovalsOf(recs), nil
}

const selectApproval = `SELECT ` + ingest.ApprovalColumns + `, ` + ingest.RemoteColumns + ` FROM approvals WHERE approval_id = $1`

// Approval implements store.Store.
func (s *Store) Approval(ctx context.Context, id string) (store.Approval, error) {
	if s.closed.Load() {
		return store.Approval{}, store.ErrClosed
	}
	r, err := ingest.ScanApproval(s.pool.QueryRow(ctx, selectApproval, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Approval{}, fmt.Errorf("approval %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Approval{}, fmt.Errorf("postgres: approval %q: %w", id, err)
	}
	return r.Approval, nil
}

// Decide implements store.Store. Under READ COMMITTED, an UPDATE that waited
// for another's row lock checks its WHERE again on the row as committed, so
// of concurrent deciders on any replica exactly one finds the approval
// undecided. The winner's NOTIFY (the approval's session at its cursor)
// reaches every replica's listener at commit, and so the helpers waiting
// there.
func (s *Store) Decide(ctx context.Context, d store.Decision) (store.Approval, error) {
	if s.closed.Load() {
		return store.Approval{}, store.ErrClosed
	}
	d, err := store.PrepareDecision(d)
	if err != nil {
		return store.Approval{}, err
	}
	var (
		rec *store.ApprovalRecord
		won bool
	)
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var sessionID string
		err := tx.QueryRow(ctx, `UPDATE approvals SET decision_id = $1, remote_decision = $2,
			remote_reason = $3, remote_updated_input = $4, remote_answers = $5, remote_by = $6,
			decided_at = $7
			WHERE approval_id = $8 AND state = 'pending' AND decision_id = ''
			RETURNING session_id`, append(ingest.DecisionArgs(&d), d.ApprovalID)...).Scan(&sessionID)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		default:
			won = true
			if _, err := tx.Exec(ctx, `SELECT pg_notify($1, id || ':' || last_cursor) FROM sessions WHERE id = $2`,
				channel, sessionID); err != nil {
				return fmt.Errorf("notify: %w", err)
			}
		}
		rec, err = ingest.ScanApproval(tx.QueryRow(ctx, selectApproval, d.ApprovalID))
		if errors.Is(err, pgx.ErrNoRows) {
			rec, err = nil, nil
		}
		return err
	})
	if err != nil {
		return store.Approval{}, fmt.Errorf("postgres: decide %q: %w", d.ApprovalID, err)
	}
	if !won {
		return store.DecideRefused(d, rec)
	}
	return rec.Approval, nil
}

// Decisions implements store.Store.
func (s *Store) Decisions(ctx context.Context, ids []string) ([]store.Decision, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.pool.Query(ctx, `SELECT `+ingest.ApprovalColumns+`, `+ingest.RemoteColumns+`
		FROM approvals WHERE approval_id = ANY($1) AND decision_id <> '' ORDER BY approval_id`, ids)
	if err != nil {
		return nil, fmt.Errorf("postgres: decisions: %w", err)
	}
	recs, err := pgx.CollectRows(rows, scanApproval)
	if err != nil {
		return nil, fmt.Errorf("postgres: decisions: %w", err)
	}
	return ingest.DecisionsOf(recs), nil
}

// ClaimNotify implements store.Store: one conditional UPDATE, so exactly one
// caller on any replica sets notified_at.
func (s *Store) ClaimNotify(ctx context.Context, approvalID string) (bool, error) {
	if s.closed.Load() {
		return false, store.ErrClosed
	}
	tag, err := s.pool.Exec(ctx, `UPDATE approvals SET notified_at = $1 WHERE approval_id = $2 AND notified_at = 0`,
		time.Now().UnixNano(), approvalID)
	if err != nil {
		return false, fmt.Errorf("postgres: claim notification of %q: %w", approvalID, err)
	}
	if tag.RowsAffected() == 1 {
		return true, nil
	}
	if _, err := s.Approval(ctx, approvalID); err != nil {
		return false, err
	}
	return false, nil
}
