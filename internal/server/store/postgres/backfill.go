package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/server/store/internal/ingest"
)

// backfill is migration 2's: ingest.Backfill in the migration's transaction.
func backfill(ctx context.Context, tx pgx.Tx) error {
	return ingest.Backfill(ctx, &writeTx{tx: tx}, txSource{tx})
}

// txSource reads sessions and events in a transaction.
type txSource struct{ tx pgx.Tx }

func (s txSource) SessionIDs(ctx context.Context) ([]string, error) {
	rows, err := s.tx.Query(ctx, `SELECT id FROM sessions ORDER BY id`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

func (s txSource) Events(ctx context.Context, sessionID string) ([]store.Event, error) {
	rows, err := s.tx.Query(ctx, `SELECT `+ingest.EventColumns+` FROM events
		WHERE session_id = $1 ORDER BY cursor`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("events of %q: %w", sessionID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Event, error) { return ingest.ScanEvent(r) })
	if err != nil {
		return nil, fmt.Errorf("events of %q: %w", sessionID, err)
	}
	return out, nil
}

// backfillTitles is migration 4's: ingest.BackfillTitles in the migration's
// transaction.
func backfillTitles(ctx context.Context, tx pgx.Tx) error {
	return ingest.BackfillTitles(ctx, &writeTx{tx: tx}, txSource{tx})
}

// backfillStatuses is migration 5's: ingest.BackfillStatuses in the
// migration's transaction.
func backfillStatuses(ctx context.Context, tx pgx.Tx) error {
	return ingest.BackfillStatuses(ctx, &writeTx{tx: tx}, txSource{tx})
}

// backfillApprovals is migration 9's: ingest.BackfillApprovals in the
// migration's transaction.
func backfillApprovals(ctx context.Context, tx pgx.Tx) error {
	return ingest.BackfillApprovals(ctx, &writeTx{tx: tx}, txSource{tx})
}
