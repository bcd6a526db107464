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

// writeTx is ingest.Tx on a READ COMMITTED transaction. Statements that do
// not depend on each other's results go in one pgx.Batch: one round trip.
type writeTx struct {
	tx pgx.Tx
}

var _ ingest.Tx = (*writeTx)(nil)

func (t *writeTx) KnownEvents(ctx context.Context, keys []ingest.EventKey) (map[ingest.EventKey]int64, error) {
	sessions, ids := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		sessions[i], ids[i] = k.SessionID, k.EventID
	}
	rows, err := t.tx.Query(ctx, `SELECT e.session_id, e.event_id, e.cursor
		FROM unnest($1::text[], $2::text[]) AS k (session_id, event_id)
		JOIN events AS e ON e.session_id = k.session_id AND e.event_id = k.event_id`, sessions, ids)
	if err != nil {
		return nil, fmt.Errorf("look up event ids: %w", err)
	}
	known := map[ingest.EventKey]int64{}
	var (
		k ingest.EventKey
		c int64
	)
	_, err = pgx.ForEachRow(rows, []any{&k.SessionID, &k.EventID, &c}, func() error {
		known[k] = c
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
func (t *writeTx) LockSessions(ctx context.Context, ids []string, now time.Time) (map[string]*ingest.State, error) {
	b := &pgx.Batch{}
	for _, id := range ids {
		// xmax = 0 only in a row this statement inserted: the session is new.
		b.Queue(`INSERT INTO sessions (id, created_at, updated_at) VALUES ($1, $2, $2)
			ON CONFLICT (id) DO UPDATE SET id = EXCLUDED.id
			RETURNING `+ingest.StateColumns+`, xmax = 0`, id, ingest.Nanos(now))
	}
	br := t.tx.SendBatch(ctx, b)
	out := make(map[string]*ingest.State, len(ids))
	for _, id := range ids {
		var isNew bool
		s, err := ingest.ScanState(withExtra{br.QueryRow(), &isNew})
		if err != nil {
			_ = br.Close()
			return nil, fmt.Errorf("lock session %q: %w", id, err)
		}
		s.New = isNew
		out[id] = s
	}
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("lock sessions: %w", err)
	}
	return out, nil
}

// withExtra scans a row with one more column than the scanner it is given
// asks for.
type withExtra struct {
	row   pgx.Row
	extra any
}

func (w withExtra) Scan(dest ...any) error { return w.row.Scan(append(dest, w.extra)...) }

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
	insertResultUsage = `INSERT INTO result_usage (session_id, result_key, model, day, at,
		input_tokens, output_tokens, cache_read_input_tokens, cache_creation_input_tokens, cost_usd)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`
	upsertInteraction = `INSERT INTO interactions (session_id, ` + ingest.InteractionColumns + `)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
		ON CONFLICT (session_id, interaction_id) DO UPDATE SET
			event_count = EXCLUDED.event_count, first_event_at = EXCLUDED.first_event_at,
			conv_id = EXCLUDED.conv_id, conv_seq = EXCLUDED.conv_seq, conv_at = EXCLUDED.conv_at,
			lifecycle_seq = EXCLUDED.lifecycle_seq, status = EXCLUDED.status,
			lifecycle_at = EXCLUDED.lifecycle_at, started_seq = EXCLUDED.started_seq,
			started_at = EXCLUDED.started_at, turn_done_seq = EXCLUDED.turn_done_seq`
	upsertSearch = `INSERT INTO session_search (session_id, text) VALUES ($1, $2)
		ON CONFLICT (session_id) DO UPDATE SET text = EXCLUDED.text`
	upsertApproval = `INSERT INTO approvals (` + ingest.ApprovalColumns + `)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)
		ON CONFLICT (approval_id) DO UPDATE SET
			run_id = EXCLUDED.run_id, tool_name = EXCLUDED.tool_name, title = EXCLUDED.title,
			input = EXCLUDED.input, kind = EXCLUDED.kind, options = EXCLUDED.options,
			requested_at = EXCLUDED.requested_at, state = EXCLUDED.state,
			decision = EXCLUDED.decision, resolved_by = EXCLUDED.resolved_by,
			reason = EXCLUDED.reason, resolved_at = EXCLUDED.resolved_at,
			requested = EXCLUDED.requested, request_event = EXCLUDED.request_event,
			closure = EXCLUDED.closure, closure_event = EXCLUDED.closure_event,
			approver = EXCLUDED.approver, policy_rule = EXCLUDED.policy_rule,
			policy_reason = EXCLUDED.policy_reason`
	// Keeps the earliest end whichever transaction stored one first.
	upsertRunEnd = `INSERT INTO run_ends (session_id, run_id, at, event_id) VALUES ($1, $2, $3, $4)
		ON CONFLICT (session_id, run_id) DO UPDATE SET at = EXCLUDED.at, event_id = EXCLUDED.event_id
		WHERE (EXCLUDED.at, EXCLUDED.event_id) < (run_ends.at, run_ends.event_id)`
)

func (t *writeTx) Search(ctx context.Context, sessionID string) (string, error) {
	var text string
	err := t.tx.QueryRow(ctx, `SELECT text FROM session_search WHERE session_id = $1`, sessionID).Scan(&text)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("search text of %q: %w", sessionID, err)
	}
	return text, nil
}

func (t *writeTx) Approvals(ctx context.Context, sessionID string, ids, runIDs []string) (map[string]*store.ApprovalRecord, error) {
	rows, err := t.tx.Query(ctx, `SELECT `+ingest.ApprovalColumns+`, `+ingest.RemoteColumns+` FROM approvals
		WHERE approval_id = ANY($1) OR (session_id = $2 AND run_id = ANY($3))`, ids, sessionID, runIDs)
	if err != nil {
		return nil, fmt.Errorf("approvals of %q: %w", sessionID, err)
	}
	list, err := pgx.CollectRows(rows, scanApproval)
	if err != nil {
		return nil, fmt.Errorf("approvals of %q: %w", sessionID, err)
	}
	out := make(map[string]*store.ApprovalRecord, len(list))
	for _, r := range list {
		out[r.ApprovalID] = r
	}
	return out, nil
}

func scanApproval(r pgx.CollectableRow) (*store.ApprovalRecord, error) { return ingest.ScanApproval(r) }

func (t *writeTx) RunEnds(ctx context.Context, sessionID string, runIDs []string) (map[string]store.RunEndRef, error) {
	rows, err := t.tx.Query(ctx, `SELECT run_id, at, event_id FROM run_ends
		WHERE session_id = $1 AND run_id = ANY($2)`, sessionID, runIDs)
	if err != nil {
		return nil, fmt.Errorf("run ends of %q: %w", sessionID, err)
	}
	out := map[string]store.RunEndRef{}
	var (
		run, eventID string
		at           int64
	)
	_, err = pgx.ForEachRow(rows, []any{&run, &at, &eventID}, func() error {
		out[run] = store.RunEndRef{At: ingest.Time(at), EventID: eventID}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("run ends of %q: %w", sessionID, err)
	}
	return out, nil
}

// Write sends every row in one batch.
func (t *writeTx) Write(ctx context.Context, w ingest.Writes) error {
	b := &pgx.Batch{}
	received := ingest.Nanos(w.ReceivedAt)
	for i := range w.Events {
		b.Queue(insertEvent, append(ingest.EventArgs(&w.Events[i]), received)...)
	}
	for _, r := range w.Results {
		b.Queue(insertResult, r.SessionID, r.Key, r.EventID)
		for _, m := range r.Models {
			b.Queue(insertResultUsage, r.SessionID, r.Key, m.Model, r.Day, ingest.Nanos(r.At),
				m.Usage.InputTokens, m.Usage.OutputTokens, m.Usage.CacheReadInputTokens,
				m.Usage.CacheCreationInputTokens, m.CostUSD)
		}
	}
	for i := range w.Interactions {
		b.Queue(upsertInteraction, ingest.InteractionArgs(&w.Interactions[i])...)
	}
	for _, r := range w.Search {
		b.Queue(upsertSearch, r.SessionID, r.Text)
	}
	for i := range w.Approvals {
		args, err := ingest.ApprovalArgs(&w.Approvals[i])
		if err != nil {
			return err
		}
		b.Queue(upsertApproval, args...)
	}
	for _, e := range w.RunEnds {
		b.Queue(upsertRunEnd, e.SessionID, e.RunID, ingest.Nanos(e.At), e.EventID)
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

func (t *writeTx) UpdateSession(ctx context.Context, s *ingest.State) error {
	args, err := ingest.StateArgs(s)
	if err != nil {
		return err
	}
	_, err = t.tx.Exec(ctx, `UPDATE sessions SET external_conversation_id = $2,
		conversation_ids = $3, status = $4, event_count = $5, interaction_count = $6,
		input_tokens = $7, output_tokens = $8, cache_read_input_tokens = $9,
		cache_creation_input_tokens = $10, total_cost_usd = $11, created_at = $12, updated_at = $13,
		started_at = $14, ended_at = $15, last_cursor = $16, title = $17, project = $18,
		source = $19, model = $20, turns = $21, billed_to = $22, list_keys = $23 WHERE id = $1`, args...)
	if err != nil {
		return fmt.Errorf("update session %q: %w", s.ID, err)
	}
	return nil
}
