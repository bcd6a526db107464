package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/claude-relay/claude-relay/internal/store/internal/ingest"
)

// statements are prepared once per Store: parsing SQL was a third of an
// Append's CPU time.
type statements struct {
	// writer
	knownEvents, session, insertSession, interactions, knownResults *sql.Stmt
	insertEvent, insertResult, upsertInteraction                    *sql.Stmt
	topConversation, topInteraction, updateSession                  *sql.Stmt
	// readers
	readSession, readSessions, readEvents *sql.Stmt

	all []*sql.Stmt
}

func prepare(ctx context.Context, w, r *sql.DB) (*statements, error) {
	st := &statements{}
	var err error
	p := func(db *sql.DB, dst **sql.Stmt, q string) {
		if err != nil {
			return
		}
		*dst, err = db.PrepareContext(ctx, q)
		if err != nil {
			err = fmt.Errorf("prepare %q: %w", q, err)
			return
		}
		st.all = append(st.all, *dst)
	}
	p(w, &st.knownEvents, `SELECT event_id, cursor FROM events WHERE event_id IN (SELECT value FROM json_each(?))`)
	p(w, &st.session, `SELECT `+ingest.SessionColumns+` FROM sessions WHERE id = ?`)
	p(w, &st.insertSession, `INSERT INTO sessions (id, created_at, updated_at) VALUES (?1, ?2, ?2)`)
	p(w, &st.interactions, `SELECT `+ingest.InteractionColumns+` FROM interactions
		WHERE session_id = ? AND interaction_id IN (SELECT value FROM json_each(?))`)
	p(w, &st.knownResults, `SELECT result_key FROM results
		WHERE session_id = ? AND result_key IN (SELECT value FROM json_each(?))`)
	p(w, &st.insertEvent, `INSERT INTO events (`+ingest.EventColumns+`, received_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	p(w, &st.insertResult, `INSERT INTO results (session_id, result_key, event_id) VALUES (?, ?, ?)`)
	p(w, &st.upsertInteraction, `INSERT INTO interactions (session_id, `+ingest.InteractionColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (session_id, interaction_id) DO UPDATE SET
			event_count = excluded.event_count, first_event_at = excluded.first_event_at,
			conv_id = excluded.conv_id, conv_seq = excluded.conv_seq, conv_at = excluded.conv_at,
			lifecycle_seq = excluded.lifecycle_seq, status = excluded.status,
			lifecycle_at = excluded.lifecycle_at, started_seq = excluded.started_seq,
			started_at = excluded.started_at`)
	// Ordered as store.MoreRecent orders (BINARY collation is byte order, as
	// Go compares strings).
	p(w, &st.topConversation, `SELECT conv_id FROM interactions WHERE session_id = ? AND conv_id <> ''
		ORDER BY conv_at DESC, interaction_id DESC LIMIT 1`)
	p(w, &st.topInteraction, `SELECT `+ingest.InteractionColumns+` FROM interactions WHERE session_id = ?
		ORDER BY first_event_at DESC, interaction_id DESC LIMIT 1`)
	p(w, &st.updateSession, `UPDATE sessions SET external_conversation_id = ?,
		conversation_ids = ?, status = ?, event_count = ?, interaction_count = ?,
		input_tokens = ?, output_tokens = ?, cache_read_input_tokens = ?,
		cache_creation_input_tokens = ?, total_cost_usd = ?, created_at = ?, updated_at = ?,
		started_at = ?, ended_at = ?, last_cursor = ? WHERE id = ?`)
	p(r, &st.readSession, `SELECT `+ingest.SessionColumns+` FROM sessions WHERE id = ?`)
	p(r, &st.readSessions, `SELECT `+ingest.SessionColumns+` FROM sessions
		ORDER BY updated_at DESC, id LIMIT ?`)
	p(r, &st.readEvents, `SELECT `+ingest.EventColumns+` FROM events
		WHERE session_id = ? AND cursor > ? ORDER BY cursor LIMIT ?`)
	if err != nil {
		_ = st.close()
		return nil, err
	}
	return st, nil
}

func (st *statements) close() error {
	var errs []error
	for _, s := range st.all {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
