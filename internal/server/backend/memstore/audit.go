package memstore

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

var _ store.AuditReader = (*Store)(nil)

// auditRef is one stored event in arrival order: Append appends under the
// lock, so the log's index is the order the SQL stores keep. A Position is
// the index plus one, in decimal.
type auditRef struct {
	session string
	cursor  int64
	at      time.Time
}

// Audit implements store.AuditReader. The page is copied under the lock
// and handed to fn after, so fn may take its time.
func (s *Store) Audit(ctx context.Context, q store.AuditQuery, fn func(store.AuditEvent) error) error {
	page, err := s.auditPage(q)
	if err != nil {
		return err
	}
	for _, ev := range page {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) auditPage(q store.AuditQuery) ([]store.AuditEvent, error) {
	var after int
	if q.After != "" {
		n, err := strconv.Atoi(q.After)
		if err != nil || n < 0 {
			return nil, store.ErrBadAuditCursor
		}
		after = n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	limit := store.AuditLimit(q.Limit)
	var out []store.AuditEvent
	for i := after; i < len(s.audit) && len(out) < limit; i++ {
		ref := s.audit[i]
		ss := s.sessions[ref.session]
		ev := ss.events[ref.cursor-1]
		switch {
		case !store.IsAuditType(ev.EventType),
			!q.From.IsZero() && ref.at.Before(q.From),
			!q.To.IsZero() && !ref.at.Before(q.To),
			q.Project != "" && ss.info.Project != q.Project:
			continue
		}
		out = append(out, store.AuditEvent{Event: ev, Position: strconv.Itoa(i + 1), ReceivedAt: ref.at,
			Project: ss.info.Project, Machine: machineOf(ss, ev), ApprovalInput: s.approvalInput(ev)})
	}
	return out, nil
}

// runKey reads an event's run_id and approval_id.
type runKey struct {
	RunID      string `json:"run_id"`
	ApprovalID string `json:"approval_id"`
	Host       string `json:"host"`
}

func keysOf(ev store.Event) runKey {
	var k runKey
	_ = json.Unmarshal(ev.EventData, &k)
	return k
}

// machineOf is the host of ev's run's first relay.run_started.
func machineOf(ss *session, ev store.Event) string {
	run := keysOf(ev).RunID
	if run == "" {
		return ""
	}
	for _, e := range ss.events {
		if e.EventType == store.EventRunStarted {
			if k := keysOf(e); k.RunID == run {
				return k.Host
			}
		}
	}
	return ""
}

// approvalInput is a decision's approval input as its request defined it.
func (s *Store) approvalInput(ev store.Event) json.RawMessage {
	if ev.EventType != store.EventApprovalResolved {
		return nil
	}
	r := s.approvals[keysOf(ev).ApprovalID]
	if r == nil || !r.Requested || len(r.Input) == 0 {
		return nil
	}
	return append(json.RawMessage(nil), r.Input...)
}
