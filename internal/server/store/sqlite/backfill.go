package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/server/store/internal/ingest"
)

// backfill is migration 2's: ingest.Backfill through the writer's
// statements, prepared on the migration's transaction.
func backfill(ctx context.Context, tx *sql.Tx) (err error) {
	st := &statements{}
	defer func() { err = errors.Join(err, st.close()) }()
	if err := st.prepareWriter(ctx, tx); err != nil {
		return err
	}
	return ingest.Backfill(ctx, &writeTx{tx: tx, st: st, owned: true}, txSource{tx})
}

// txSource reads sessions and events in a transaction.
type txSource struct{ tx *sql.Tx }

func (s txSource) SessionIDs(ctx context.Context) ([]string, error) {
	rows, err := s.tx.QueryContext(ctx, `SELECT id FROM sessions ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

func (s txSource) Events(ctx context.Context, sessionID string) ([]store.Event, error) {
	rows, err := s.tx.QueryContext(ctx, `SELECT `+ingest.EventColumns+` FROM events
		WHERE session_id = ? ORDER BY cursor`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("events of %q: %w", sessionID, err)
	}
	out, err := collect(rows, ingest.ScanEvent)
	if err != nil {
		return nil, fmt.Errorf("events of %q: %w", sessionID, err)
	}
	return out, nil
}

// backfillTitles is migration 4's: ingest.BackfillTitles through the
// writer's statements, prepared on the migration's transaction.
func backfillTitles(ctx context.Context, tx *sql.Tx) (err error) {
	st := &statements{}
	defer func() { err = errors.Join(err, st.close()) }()
	if err := st.prepareWriter(ctx, tx); err != nil {
		return err
	}
	return ingest.BackfillTitles(ctx, &writeTx{tx: tx, st: st, owned: true}, txSource{tx})
}

// backfillStatuses is migration 5's: ingest.BackfillStatuses through the
// writer's statements, prepared on the migration's transaction.
func backfillStatuses(ctx context.Context, tx *sql.Tx) (err error) {
	st := &statements{}
	defer func() { err = errors.Join(err, st.close()) }()
	if err := st.prepareWriter(ctx, tx); err != nil {
		return err
	}
	return ingest.BackfillStatuses(ctx, &writeTx{tx: tx, st: st, owned: true}, txSource{tx})
}

// backfillApprovals is migration 8's: ingest.BackfillApprovals through the
// writer's statements, prepared on the migration's transaction.
func backfillApprovals(ctx context.Context, tx *sql.Tx) (err error) {
	st := &statements{}
	defer func() { err = errors.Join(err, st.close()) }()
	if err := st.prepareWriter(ctx, tx); err != nil {
		return err
	}
	return ingest.BackfillApprovals(ctx, &writeTx{tx: tx, st: st, owned: true}, txSource{tx})
}
