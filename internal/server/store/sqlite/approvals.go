package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/server/store/internal/ingest"
)

// Usage implements store.Store, aggregating in SQL.
func (s *Store) Usage(ctx context.Context, uq store.UsageQuery) ([]store.UsageRow, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	q, args := ingest.UsageQuery(dialect, uq)
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: usage: %w", err)
	}
	out, err := collect(rows, ingest.ScanUsageRow)
	if err != nil {
		return nil, fmt.Errorf("sqlite: usage: %w", err)
	}
	return out, nil
}

// Approvals implements store.Store.
func (s *Store) Approvals(ctx context.Context, f store.ApprovalFilter) ([]store.Approval, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	q, args := ingest.ApprovalsQuery(dialect, f)
	recs, err := queryApprovals(ctx, s.r, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: approvals: %w", err)
	}
	return ingest.ApprovalsOf(recs), nil
}

// queryer is a *sql.DB or *sql.Tx.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func queryApprovals(ctx context.Context, db queryer, q string, args ...any) ([]*store.ApprovalRecord, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return collect(rows, ingest.ScanApproval)
}

// Approval implements store.Store.
func (s *Store) Approval(ctx context.Context, id string) (store.Approval, error) {
	if s.closed.Load() {
		return store.Approval{}, store.ErrClosed
	}
	r, err := ingest.ScanApproval(s.st.readApproval.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Approval{}, fmt.Errorf("approval %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Approval{}, fmt.Errorf("sqlite: approval %q: %w", id, err)
	}
	return r.Approval, nil
}

const selectApproval = `SELECT ` + ingest.ApprovalColumns + `, ` + ingest.RemoteColumns + ` FROM approvals WHERE approval_id = ?`

// Decide implements store.Store. The conditional UPDATE runs in an
// IMMEDIATE transaction, which holds the file's write lock: of concurrent
// deciders, in any process, exactly one finds the approval undecided.
func (s *Store) Decide(ctx context.Context, d store.Decision) (store.Approval, error) {
	if s.closed.Load() {
		return store.Approval{}, store.ErrClosed
	}
	d, err := store.PrepareDecision(d)
	if err != nil {
		return store.Approval{}, err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return store.Approval{}, fmt.Errorf("sqlite: decide %q: begin: %w", d.ApprovalID, err)
	}
	defer func() { _ = tx.Rollback() }()
	res, err := tx.ExecContext(ctx, `UPDATE approvals SET decision_id = ?, remote_decision = ?,
		remote_reason = ?, remote_updated_input = ?, remote_answers = ?, remote_by = ?, decided_at = ?
		WHERE approval_id = ? AND state = 'pending' AND decision_id = ''`,
		append(ingest.DecisionArgs(&d), d.ApprovalID)...)
	if err != nil {
		return store.Approval{}, fmt.Errorf("sqlite: decide %q: %w", d.ApprovalID, err)
	}
	won, err := res.RowsAffected()
	if err != nil {
		return store.Approval{}, fmt.Errorf("sqlite: decide %q: %w", d.ApprovalID, err)
	}
	recs, err := queryApprovals(ctx, tx, selectApproval, d.ApprovalID)
	if err != nil {
		return store.Approval{}, fmt.Errorf("sqlite: decide %q: %w", d.ApprovalID, err)
	}
	if won == 0 {
		if len(recs) == 0 {
			return store.DecideRefused(d, nil)
		}
		return store.DecideRefused(d, recs[0])
	}
	rec := recs[0]
	note := store.Notification{SessionID: rec.SessionID}
	if err := tx.QueryRowContext(ctx, `SELECT last_cursor FROM sessions WHERE id = ?`, rec.SessionID).Scan(&note.Cursor); err != nil {
		return store.Approval{}, fmt.Errorf("sqlite: decide %q: session %q: %w", d.ApprovalID, rec.SessionID, err)
	}
	if err := tx.Commit(); err != nil {
		return store.Approval{}, fmt.Errorf("sqlite: decide %q: commit: %w", d.ApprovalID, err)
	}
	s.hub.Publish(note)
	return rec.Approval, nil
}

// Decisions implements store.Store.
func (s *Store) Decisions(ctx context.Context, ids []string) ([]store.Decision, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	list, err := jsonList(ids)
	if err != nil {
		return nil, err
	}
	recs, err := queryApprovals(ctx, s.r, `SELECT `+ingest.ApprovalColumns+`, `+ingest.RemoteColumns+`
		FROM approvals WHERE approval_id IN (SELECT value FROM json_each(?)) AND decision_id <> ''
		ORDER BY approval_id`, list)
	if err != nil {
		return nil, fmt.Errorf("sqlite: decisions: %w", err)
	}
	return ingest.DecisionsOf(recs), nil
}

// ClaimNotify implements store.Store: one conditional UPDATE, so exactly one
// caller in any process sets notified_at.
func (s *Store) ClaimNotify(ctx context.Context, approvalID string) (bool, error) {
	if s.closed.Load() {
		return false, store.ErrClosed
	}
	res, err := s.w.ExecContext(ctx, `UPDATE approvals SET notified_at = ? WHERE approval_id = ? AND notified_at = 0`,
		time.Now().UnixNano(), approvalID)
	if err != nil {
		return false, fmt.Errorf("sqlite: claim notification of %q: %w", approvalID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("sqlite: claim notification of %q: %w", approvalID, err)
	}
	if n == 1 {
		return true, nil
	}
	if _, err := s.Approval(ctx, approvalID); err != nil {
		return false, err
	}
	return false, nil
}
