package sqlite

import (
	"context"
	"fmt"
	"strconv"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/server/store/internal/ingest"
)

var _ store.AuditReader = (*Store)(nil)

// The audit trail's order is the events table's rowid: SQLite assigns it
// under the write lock (one writer at a time, across processes), so a row
// committed later always has a greater rowid than every row a reader could
// already see, and events are never deleted, so no rowid is reused. A
// Position is the rowid in decimal.

// auditMachine is the host name of the event's run, from its
// relay.run_started (json_valid guards json_extract, which fails the whole
// query on text that is not JSON).
const auditMachine = `COALESCE((SELECT CAST(json_extract(r.event_data, '$.host') AS TEXT) FROM events r
		WHERE r.session_id = e.session_id AND r.event_type = 'relay.run_started' AND json_valid(r.event_data)
			AND json_extract(r.event_data, '$.run_id') = json_extract(e.event_data, '$.run_id')
		ORDER BY r.cursor LIMIT 1), '')`

// auditInput is the approval's input as its request defined it, for a
// decision.
const auditInput = `COALESCE((SELECT a.input FROM approvals a
		WHERE e.event_type = 'relay.approval_resolved' AND a.approval_id = json_extract(e.event_data, '$.approval_id')), '')`

// Audit implements store.AuditReader.
func (s *Store) Audit(ctx context.Context, q store.AuditQuery, fn func(store.AuditEvent) error) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	var after int64
	if q.After != "" {
		n, err := strconv.ParseInt(q.After, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("sqlite: audit after %q: %w", q.After, store.ErrBadAuditCursor)
		}
		after = n
	}
	args := []any{after}
	filters, args := ingest.AuditFilterSQL(dialect, q, args)
	args = append(args, store.AuditLimit(q.Limit))
	rows, err := s.r.QueryContext(ctx, `SELECT e.rowid, `+ingest.AuditColumns+`, `+auditMachine+`, `+auditInput+`
		FROM events e JOIN sessions s ON s.id = e.session_id
		WHERE e.rowid > ? AND json_valid(e.event_data) AND `+ingest.AuditTypeSQL("e.event_type")+filters+`
		ORDER BY e.rowid LIMIT ?`, args...)
	if err != nil {
		return fmt.Errorf("sqlite: audit: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var pos int64
		ev, err := ingest.ScanAudit(rows, &pos)
		if err != nil {
			return fmt.Errorf("sqlite: audit: %w", err)
		}
		ev.Position = strconv.FormatInt(pos, 10)
		if err := fn(ev); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlite: audit: %w", err)
	}
	return nil
}
