package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/claude-relay/claude-relay/internal/store"
	"github.com/claude-relay/claude-relay/internal/store/internal/ingest"
)

// writeTx is ingest.Tx on a READ COMMITTED transaction. Statements that do
// not depend on each other's results go in one pgx.Batch: one round trip.
type writeTx struct {
	tx pgx.Tx
}

var _ ingest.Tx = (*writeTx)(nil)

func (t *writeTx) KnownEvents(ctx context.Context, ids []string) (map[string]int64, error) {
	rows, err := t.tx.Query(ctx, `SELECT event_id, cursor FROM events WHERE event_id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("look up event ids: %w", err)
	}
	known := map[string]int64{}
	var (
		id string
		c  int64
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &c}, func() error {
		known[id] = c
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("look up event ids: %w", err)
	}
	return known, nil
}

// LockSessions upserts each session row and takes its row lock in one
// statement: a new session is inserted (a concurrent inserter waits for us,
// then takes the update path), an existing one "updated" to itself, which
// locks it like SELECT ... FOR UPDATE. ids arrive sorted and the batch runs
// in order, so every transaction locks in the same order.
func (t *writeTx) LockSessions(ctx context.Context, ids []string, now time.Time) (map[string]*store.Session, error) {
	b := &pgx.Batch{}
	for _, id := range ids {
		b.Queue(`INSERT INTO sessions (id, created_at, updated_at) VALUES ($1, $2, $2)
			ON CONFLICT (id) DO UPDATE SET id = EXCLUDED.id
			RETURNING `+ingest.SessionColumns, id, ingest.Nanos(now))
	}
	br := t.tx.SendBatch(ctx, b)
	out := make(map[string]*store.Session, len(ids))
	for _, id := range ids {
		s, err := ingest.ScanSession(br.QueryRow())
		if err != nil {
			_ = br.Close()
			return nil, fmt.Errorf("lock session %q: %w", id, err)
		}
		out[id] = &s
	}
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("lock sessions: %w", err)
	}
	return out, nil
}

func (t *writeTx) Interactions(ctx context.Context, sessionID string, ids []string) (map[string]store.Interaction, error) {
	rows, err := t.tx.Query(ctx, `SELECT `+ingest.InteractionColumns+` FROM interactions
		WHERE session_id = $1 AND interaction_id = ANY($2)`, sessionID, ids)
	if err != nil {
		return nil, fmt.Errorf("interactions of %q: %w", sessionID, err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Interaction, error) {
		return ingest.ScanInteraction(r)
	})
	if err != nil {
		return nil, fmt.Errorf("interactions of %q: %w", sessionID, err)
	}
	out := make(map[string]store.Interaction, len(list))
	for _, in := range list {
		out[in.ID] = in
	}
	return out, nil
}

func (t *writeTx) KnownResults(ctx context.Context, sessionID string, keys []string) (map[string]bool, error) {
	rows, err := t.tx.Query(ctx, `SELECT result_key FROM results WHERE session_id = $1 AND result_key = ANY($2)`,
		sessionID, keys)
	if err != nil {
		return nil, fmt.Errorf("results of %q: %w", sessionID, err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("results of %q: %w", sessionID, err)
	}
	out := make(map[string]bool, len(list))
	for _, k := range list {
		out[k] = true
	}
	return out, nil
}

const (
	insertEvent = `INSERT INTO events (` + ingest.EventColumns + `, received_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`
	insertResult      = `INSERT INTO results (session_id, result_key, event_id) VALUES ($1, $2, $3)`
	upsertInteraction = `INSERT INTO interactions (session_id, ` + ingest.InteractionColumns + `)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
		ON CONFLICT (session_id, interaction_id) DO UPDATE SET
			event_count = EXCLUDED.event_count, first_event_at = EXCLUDED.first_event_at,
			conv_id = EXCLUDED.conv_id, conv_seq = EXCLUDED.conv_seq, conv_at = EXCLUDED.conv_at,
			lifecycle_seq = EXCLUDED.lifecycle_seq, status = EXCLUDED.status,
			lifecycle_at = EXCLUDED.lifecycle_at, started_seq = EXCLUDED.started_seq,
			started_at = EXCLUDED.started_at`
)

// Write sends every row in one batch.
func (t *writeTx) Write(ctx context.Context, w ingest.Writes) error {
	b := &pgx.Batch{}
	received := ingest.Nanos(w.ReceivedAt)
	for i := range w.Events {
		b.Queue(insertEvent, append(ingest.EventArgs(&w.Events[i]), received)...)
	}
	for _, r := range w.Results {
		b.Queue(insertResult, r.SessionID, r.Key, r.EventID)
	}
	for i := range w.Interactions {
		b.Queue(upsertInteraction, ingest.InteractionArgs(&w.Interactions[i])...)
	}
	if err := t.tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("write rows: %w", err)
	}
	return nil
}

// Summary reads both tops in one round trip, ordered as store.MoreRecent.
func (t *writeTx) Summary(ctx context.Context, sessionID string) (ingest.Summary, error) {
	b := &pgx.Batch{}
	b.Queue(`SELECT conv_id FROM interactions WHERE session_id = $1 AND conv_id <> ''
		ORDER BY conv_at DESC, interaction_id DESC LIMIT 1`, sessionID)
	b.Queue(`SELECT `+ingest.InteractionColumns+` FROM interactions WHERE session_id = $1
		ORDER BY first_event_at DESC, interaction_id DESC LIMIT 1`, sessionID)
	br := t.tx.SendBatch(ctx, b)
	defer br.Close()
	var sum ingest.Summary
	if err := br.QueryRow().Scan(&sum.ConversationID); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return sum, fmt.Errorf("conversation of %q: %w", sessionID, err)
	}
	in, err := ingest.ScanInteraction(br.QueryRow())
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return sum, fmt.Errorf("latest interaction of %q: %w", sessionID, err)
	default:
		sum.Recent, sum.HasRecent = in, true
	}
	if err := br.Close(); err != nil {
		return sum, fmt.Errorf("summary of %q: %w", sessionID, err)
	}
	return sum, nil
}

func (t *writeTx) UpdateSession(ctx context.Context, s *store.Session) error {
	args, err := ingest.SessionArgs(s)
	if err != nil {
		return err
	}
	_, err = t.tx.Exec(ctx, `UPDATE sessions SET external_conversation_id = $2,
		conversation_ids = $3, status = $4, event_count = $5, interaction_count = $6,
		input_tokens = $7, output_tokens = $8, cache_read_input_tokens = $9,
		cache_creation_input_tokens = $10, total_cost_usd = $11, created_at = $12, updated_at = $13,
		started_at = $14, ended_at = $15, last_cursor = $16 WHERE id = $1`, args...)
	if err != nil {
		return fmt.Errorf("update session %q: %w", s.ID, err)
	}
	return nil
}
