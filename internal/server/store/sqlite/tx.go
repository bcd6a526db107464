package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/server/store/internal/ingest"
)

// writeTx is ingest.Tx on an IMMEDIATE transaction: it holds the database's
// write lock from BEGIN, so LockSessions has nothing left to lock.
type writeTx struct {
	tx *sql.Tx
	st *statements
	// owned: st was prepared on tx itself (a migration's backfill, which
	// runs before the Store's statements can be prepared).
	owned bool
}

var _ ingest.Tx = (*writeTx)(nil)

// stmt binds a statement prepared on the writer to the transaction; the
// writer has one connection, so it is parsed once per Store.
func (t *writeTx) stmt(ctx context.Context, s *sql.Stmt) *sql.Stmt {
	if t.owned {
		return s
	}
	return t.tx.StmtContext(ctx, s)
}

// query runs a statement whose one list parameter is a JSON array (see
// jsonList), calling scan for every row.
func (t *writeTx) query(ctx context.Context, s *sql.Stmt, args []any, scan func(*sql.Rows) error) error {
	rows, err := t.stmt(ctx, s).QueryContext(ctx, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// jsonList passes a list as one parameter, which the statements expand
// with json_each: one prepared statement serves any length, where an
// IN (?, ?, ...) list would be a new statement for every length.
func jsonList(keys []string) (string, error) {
	if keys == nil {
		keys = []string{} // "[]", not "null"
	}
	b, err := json.Marshal(keys)
	return string(b), err
}

// KnownEvents passes keys as one JSON array of [session_id, event_id]
// pairs (see jsonList).
func (t *writeTx) KnownEvents(ctx context.Context, keys []ingest.EventKey) (map[ingest.EventKey]int64, error) {
	pairs := make([][2]string, len(keys))
	for i, k := range keys {
		pairs[i] = [2]string{k.SessionID, k.EventID}
	}
	list, err := json.Marshal(pairs)
	if err != nil {
		return nil, err
	}
	known := map[ingest.EventKey]int64{}
	err = t.query(ctx, t.st.knownEvents, []any{string(list)}, func(rows *sql.Rows) error {
		var k ingest.EventKey
		var c int64
		if err := rows.Scan(&k.SessionID, &k.EventID, &c); err != nil {
			return err
		}
		known[k] = c
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("look up event ids: %w", err)
	}
	return known, nil
}

func (t *writeTx) LockSessions(ctx context.Context, ids []string, now time.Time) (map[string]*ingest.State, error) {
	out := make(map[string]*ingest.State, len(ids))
	for _, id := range ids {
		s, err := ingest.ScanState(t.stmt(ctx, t.st.session).QueryRowContext(ctx, id))
		if errors.Is(err, sql.ErrNoRows) {
			s = &ingest.State{New: true, Session: store.Session{ID: id, Status: store.StatusUnknown,
				CreatedAt: now, UpdatedAt: now, ConversationIDs: []store.ConversationRef{}}}
			_, err = t.stmt(ctx, t.st.insertSession).ExecContext(ctx, id, ingest.Nanos(now))
		}
		if err != nil {
			return nil, fmt.Errorf("session %q: %w", id, err)
		}
		out[id] = s
	}
	return out, nil
}

func (t *writeTx) Interactions(ctx context.Context, sessionID string, ids []string) (map[string]store.Interaction, error) {
	list, err := jsonList(ids)
	if err != nil {
		return nil, err
	}
	out := map[string]store.Interaction{}
	err = t.query(ctx, t.st.interactions, []any{sessionID, list},
		func(rows *sql.Rows) error {
			in, err := ingest.ScanInteraction(rows)
			if err != nil {
				return err
			}
			out[in.ID] = in
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("interactions of %q: %w", sessionID, err)
	}
	return out, nil
}

func (t *writeTx) KnownResults(ctx context.Context, sessionID string, keys []string) (map[string]bool, error) {
	list, err := jsonList(keys)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	err = t.query(ctx, t.st.knownResults, []any{sessionID, list}, func(rows *sql.Rows) error {
		var k string
		if err := rows.Scan(&k); err != nil {
			return err
		}
		out[k] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("results of %q: %w", sessionID, err)
	}
	return out, nil
}

func (t *writeTx) Search(ctx context.Context, sessionID string) (string, error) {
	var text string
	err := t.stmt(ctx, t.st.search).QueryRowContext(ctx, sessionID).Scan(&text)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("search text of %q: %w", sessionID, err)
	}
	return text, nil
}

func (t *writeTx) Approvals(ctx context.Context, sessionID string, ids, runIDs []string) (map[string]*store.ApprovalRecord, error) {
	idList, err := jsonList(ids)
	if err != nil {
		return nil, err
	}
	runList, err := jsonList(runIDs)
	if err != nil {
		return nil, err
	}
	out := map[string]*store.ApprovalRecord{}
	err = t.query(ctx, t.st.approvals, []any{idList, sessionID, runList}, func(rows *sql.Rows) error {
		r, err := ingest.ScanApproval(rows)
		if err != nil {
			return err
		}
		out[r.ApprovalID] = r
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("approvals of %q: %w", sessionID, err)
	}
	return out, nil
}

func (t *writeTx) RunEnds(ctx context.Context, sessionID string, runIDs []string) (map[string]store.RunEndRef, error) {
	list, err := jsonList(runIDs)
	if err != nil {
		return nil, err
	}
	out := map[string]store.RunEndRef{}
	err = t.query(ctx, t.st.runEnds, []any{sessionID, list}, func(rows *sql.Rows) error {
		var (
			run string
			at  int64
			e   store.RunEndRef
		)
		if err := rows.Scan(&run, &at, &e.EventID); err != nil {
			return err
		}
		e.At = ingest.Time(at)
		out[run] = e
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("run ends of %q: %w", sessionID, err)
	}
	return out, nil
}

func (t *writeTx) Write(ctx context.Context, w ingest.Writes) error {
	insertEvent := t.stmt(ctx, t.st.insertEvent)
	for i := range w.Events {
		if _, err := insertEvent.ExecContext(ctx, append(ingest.EventArgs(&w.Events[i]), ingest.Nanos(w.ReceivedAt))...); err != nil {
			return fmt.Errorf("insert event %s: %w", w.Events[i].EventID, err)
		}
	}
	if err := t.writeResults(ctx, w.Results); err != nil {
		return err
	}
	upsert := t.stmt(ctx, t.st.upsertInteraction)
	for i := range w.Interactions {
		if _, err := upsert.ExecContext(ctx, ingest.InteractionArgs(&w.Interactions[i])...); err != nil {
			return fmt.Errorf("upsert interaction %s: %w", w.Interactions[i].ID, err)
		}
	}
	// Bound to the transaction once per Write, and only when used: most
	// appends carry no search text, approval or run end.
	if len(w.Search) > 0 {
		upsertSearch := t.stmt(ctx, t.st.upsertSearch)
		for _, r := range w.Search {
			if _, err := upsertSearch.ExecContext(ctx, r.SessionID, r.Text); err != nil {
				return fmt.Errorf("search text of %q: %w", r.SessionID, err)
			}
		}
	}
	if len(w.Approvals) > 0 {
		upsertApproval := t.stmt(ctx, t.st.upsertApproval)
		for i := range w.Approvals {
			args, err := ingest.ApprovalArgs(&w.Approvals[i])
			if err != nil {
				return err
			}
			if _, err := upsertApproval.ExecContext(ctx, args...); err != nil {
				return fmt.Errorf("upsert approval %s: %w", w.Approvals[i].ApprovalID, err)
			}
		}
	}
	if len(w.RunEnds) > 0 {
		upsertRunEnd := t.stmt(ctx, t.st.upsertRunEnd)
		for _, e := range w.RunEnds {
			if _, err := upsertRunEnd.ExecContext(ctx, e.SessionID, e.RunID, ingest.Nanos(e.At), e.EventID); err != nil {
				return fmt.Errorf("end of run %s: %w", e.RunID, err)
			}
		}
	}
	return nil
}

func (t *writeTx) writeResults(ctx context.Context, results []ingest.ResultRow) error {
	if len(results) == 0 {
		return nil // most appends carry no result: bind nothing
	}
	insertResult := t.stmt(ctx, t.st.insertResult)
	insertUsage := t.stmt(ctx, t.st.insertResultUsage)
	for _, r := range results {
		if _, err := insertResult.ExecContext(ctx, r.SessionID, r.Key, r.EventID); err != nil {
			return fmt.Errorf("insert result %s: %w", r.Key, err)
		}
		for _, m := range r.Models {
			if _, err := insertUsage.ExecContext(ctx, r.SessionID, r.Key, m.Model, r.Day, ingest.Nanos(r.At),
				m.Usage.InputTokens, m.Usage.OutputTokens, m.Usage.CacheReadInputTokens,
				m.Usage.CacheCreationInputTokens, m.CostUSD); err != nil {
				return fmt.Errorf("insert usage of result %s: %w", r.Key, err)
			}
		}
	}
	return nil
}

func (t *writeTx) Summary(ctx context.Context, sessionID string) (ingest.Summary, error) {
	var sum ingest.Summary
	err := t.stmt(ctx, t.st.topConversation).QueryRowContext(ctx, sessionID).Scan(&sum.ConversationID)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return sum, fmt.Errorf("conversation of %q: %w", sessionID, err)
	}
	sum.Recent, err = ingest.ScanInteraction(t.stmt(ctx, t.st.topInteraction).QueryRowContext(ctx, sessionID))
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return sum, fmt.Errorf("latest interaction of %q: %w", sessionID, err)
	default:
		sum.HasRecent = true
	}
	return sum, nil
}

func (t *writeTx) UpdateSession(ctx context.Context, s *ingest.State) error {
	args, err := ingest.StateArgs(s)
	if err != nil {
		return err
	}
	// args[0] is the id; the rest follow StateColumns.
	_, err = t.stmt(ctx, t.st.updateSession).ExecContext(ctx, append(args[1:], args[0])...)
	if err != nil {
		return fmt.Errorf("update session %q: %w", s.ID, err)
	}
	return nil
}
