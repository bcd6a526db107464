package store

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/claude-relay/claude-relay/internal/wire"
)

// The audit trail (issue 26, GET /api/audit) is a view of the events table,
// not a table of its own: the events are already stored once, durably and
// in an order the store can name, so no migration copies them (PostgreSQL
// adds the one column that order needs, see package postgres).

// AuditTypes are the event types the audit trail lists exactly;
// AuditPrefixes the families it lists by prefix (the policy's and the
// budgets' events, whose members grow).
var (
	AuditTypes = []string{
		wire.TypeApprovalRequested, wire.TypeApprovalResolved, wire.TypeModeChanged,
		wire.TypeBillingRefused, wire.TypeRunCompleted, wire.TypeRunFailed, wire.TypeRunCancelled,
	}
	AuditPrefixes = []string{"relay.policy_", "relay.budget_"}
)

// IsAuditType reports whether events of type t are in the audit trail.
func IsAuditType(t string) bool {
	for _, a := range AuditTypes {
		if t == a {
			return true
		}
	}
	for _, p := range AuditPrefixes {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// ErrBadAuditCursor is an AuditQuery.After this store did not hand out.
var ErrBadAuditCursor = errors.New("not an audit cursor of this store")

// AuditQuery selects audit events: those received in [From, To) (zero:
// open), of sessions whose Project is Project (exact; "" any), after the
// position After ("" from the start), at most Limit (0: 100).
type AuditQuery struct {
	From, To time.Time
	Project  string
	After    string
	Limit    int
}

// AuditEvent is one event of the audit trail with what the backend knows
// around it.
type AuditEvent struct {
	Event
	// Position is the event's place in the store's ingest order, opaque:
	// an AuditQuery.After continues after it.
	Position   string
	ReceivedAt time.Time // when the backend stored it
	Project    string    // the session's project (its first run's cwd)
	// Machine is the host name the helper posted in its run's
	// relay.run_started ("" when that run's start is not stored or
	// predates the field).
	Machine string
	// ApprovalInput is, for a relay.approval_resolved, the input of the
	// approval as its request defined it (nil when unknown).
	ApprovalInput json.RawMessage
}

// AuditReader is a Store that lists the audit trail. The order is the
// store's ingest order, final once listed: an event stored later is never
// placed before a position already handed out, so a poller that continues
// from its last Position sees every audit event once, without gaps.
type AuditReader interface {
	// Audit calls fn with each audit event of q in order, streaming from
	// the database; it stops at fn's first error and returns it.
	Audit(ctx context.Context, q AuditQuery, fn func(AuditEvent) error) error
}

// AuditLimit is a page size as the stores apply it: 0 is 100, at most
// MaxAuditLimit.
func AuditLimit(n int) int {
	switch {
	case n <= 0:
		return 100
	case n > MaxAuditLimit:
		return MaxAuditLimit
	}
	return n
}

// MaxAuditLimit bounds a page (wire.MaxAuditPage): a request is one read
// transaction.
const MaxAuditLimit = wire.MaxAuditPage
