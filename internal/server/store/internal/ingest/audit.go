package ingest

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

// AuditTypeSQL is the SQL predicate on column col that holds for the event
// types of the audit trail (store.IsAuditType), the same text in every
// dialect, so that PostgreSQL's partial index matches the queries.
func AuditTypeSQL(col string) string {
	quoted := make([]string, len(store.AuditTypes))
	for i, t := range store.AuditTypes {
		quoted[i] = "'" + t + "'"
	}
	var b strings.Builder
	b.WriteString("(" + col + " IN (" + strings.Join(quoted, ", ") + ")")
	for _, p := range store.AuditPrefixes {
		// substr, not LIKE: '_' is a LIKE wildcard and ESCAPE differs
		// between dialects.
		b.WriteString(" OR substr(" + col + ", 1, " + strconv.Itoa(len(p)) + ") = '" + p + "'")
	}
	b.WriteString(")")
	return b.String()
}

// AuditFilterSQL is the WHERE clause's filters of q after the position
// and type predicates: receive time and project. args holds the query's
// arguments so far; the filters' are appended (placeholders numbered on).
func AuditFilterSQL(d Dialect, q store.AuditQuery, args []any) (string, []any) {
	var where []string
	if !q.From.IsZero() {
		args = append(args, Nanos(q.From))
		where = append(where, "e.received_at >= "+d.Placeholder(len(args)))
	}
	if !q.To.IsZero() {
		args = append(args, Nanos(q.To))
		where = append(where, "e.received_at < "+d.Placeholder(len(args)))
	}
	if q.Project != "" {
		args = append(args, q.Project)
		where = append(where, "s.project = "+d.Placeholder(len(args)))
	}
	if len(where) == 0 {
		return "", args
	}
	return " AND " + strings.Join(where, " AND "), args
}

// AuditColumns follow the position column(s) in an audit query: the
// event, its receive time and project, the machine and approval input
// expressions the dialect gives.
const AuditColumns = `e.session_id, e.interaction_id, e.event_id, e.seq, e.event_type, e.event_data,
	e.timestamp, e.source, e.cursor, e.received_at, s.project`

// ScanAudit reads AuditColumns then machine and approval input (text, ”
// for none) into ev, after the position columns dest.
func ScanAudit(row Scanner, dest ...any) (store.AuditEvent, error) {
	var (
		ev       store.AuditEvent
		data     []byte
		ts, recv int64
		input    string
	)
	dest = append(dest, &ev.SessionID, &ev.InteractionID, &ev.EventID, &ev.Seq, &ev.EventType,
		&data, &ts, &ev.Source, &ev.Cursor, &recv, &ev.Project, &ev.Machine, &input)
	if err := row.Scan(dest...); err != nil {
		return store.AuditEvent{}, err
	}
	ev.EventData = json.RawMessage(data)
	ev.Timestamp, ev.ReceivedAt = Time(ts), Time(recv)
	if input != "" {
		ev.ApprovalInput = json.RawMessage(input)
	}
	return ev, nil
}
