package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/server/store/internal/ingest"
)

var _ store.AuditReader = (*Store)(nil)

// The audit trail's order. A sequence alone would not do: concurrent
// Appends (other sessions, other replicas) take numbers in one order and
// commit in another, so a poller that saw number 11 could miss 10
// committing a moment later. Each event records the ID of the transaction
// that wrote it (ingest_tx, xid8: 64 bits, never wraps) and an identity
// (ingest_id, increasing within a transaction), and a query lists only
// rows whose transaction is older than every transaction still running
// (pg_snapshot_xmin of its snapshot): those are final, and every later
// transaction gets a greater ID. So (ingest_tx, ingest_id) is an order in
// which nothing is ever inserted before a position already listed. The
// price: the trail lags behind the oldest open transaction on the server.
// A Position is "ingest_tx.ingest_id".
var auditMigration = `
ALTER TABLE events ADD COLUMN ingest_tx xid8 NOT NULL DEFAULT pg_current_xact_id();
ALTER TABLE events ADD COLUMN ingest_id bigint GENERATED ALWAYS AS IDENTITY;
CREATE INDEX events_audit ON events (ingest_tx, ingest_id) WHERE ` + ingest.AuditTypeSQL("event_type")

// auditMachine is the host name of the event's run, from its
// relay.run_started.
const auditMachine = `COALESCE((SELECT r.event_data::json ->> 'host' FROM events r
		WHERE r.session_id = e.session_id AND r.event_type = 'relay.run_started'
			AND r.event_data::json ->> 'run_id' = e.event_data::json ->> 'run_id'
		ORDER BY r.cursor LIMIT 1), '')`

// auditInput is the approval's input as its request defined it, for a
// decision.
const auditInput = `COALESCE((SELECT a.input FROM approvals a
		WHERE e.event_type = 'relay.approval_resolved'
			AND a.approval_id = (e.event_data::json ->> 'approval_id') COLLATE "C"), '')`

// Audit implements store.AuditReader.
func (s *Store) Audit(ctx context.Context, q store.AuditQuery, fn func(store.AuditEvent) error) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	tx, id, err := parseAuditPosition(q.After)
	if err != nil {
		return fmt.Errorf("postgres: audit after %q: %w", q.After, err)
	}
	args := []any{tx, id}
	filters, args := ingest.AuditFilterSQL(dialect, q, args)
	args = append(args, store.AuditLimit(q.Limit))
	rows, err := s.pool.Query(ctx, `SELECT e.ingest_tx::text, e.ingest_id, `+ingest.AuditColumns+`, `+auditMachine+`, `+auditInput+`
		FROM events e JOIN sessions s ON s.id = e.session_id
		WHERE (e.ingest_tx, e.ingest_id) > ($1::text::xid8, $2::bigint)
			AND e.ingest_tx < pg_snapshot_xmin(pg_current_snapshot())
			AND `+ingest.AuditTypeSQL("e.event_type")+filters+`
		ORDER BY e.ingest_tx, e.ingest_id LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return fmt.Errorf("postgres: audit: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			txt string
			n   int64
		)
		ev, err := ingest.ScanAudit(rows, &txt, &n)
		if err != nil {
			return fmt.Errorf("postgres: audit: %w", err)
		}
		ev.Position = txt + "." + strconv.FormatInt(n, 10)
		if err := fn(ev); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("postgres: audit: %w", err)
	}
	return nil
}

// parseAuditPosition reads a Position; "" is before the first.
func parseAuditPosition(p string) (tx string, id int64, err error) {
	if p == "" {
		return "0", 0, nil
	}
	t, n, ok := strings.Cut(p, ".")
	tn, err1 := strconv.ParseUint(t, 10, 64)
	id, err2 := strconv.ParseInt(n, 10, 64)
	if !ok || err1 != nil || err2 != nil || id < 0 {
		return "", 0, store.ErrBadAuditCursor
	}
	return strconv.FormatUint(tn, 10), id, nil
}
