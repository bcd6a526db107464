// Package store is the reference backend's storage: the Store interface that
// the HTTP API consumes, the event and session types, and the pure rules that
// derive a session's state from its events (conversation ID, status, usage).
// Implementations live in sqlite/ (the default) and postgres/ and pass one
// shared suite in storetest/.
//
// # Derived state
//
// A session's state is folded from its events as they arrive, in the same
// transaction as the events, and does not depend on the order in which they
// arrive (derive.go; Derive is the from-scratch reference):
//
//   - The "most recent interaction" is the one whose earliest envelope
//     timestamp is greatest (ties: the greater interaction_id, byte order).
//     Envelope timestamps are when the relay produced the events, so a late
//     retry of an old interaction cannot make it current.
//   - external_conversation_id: of the most recent interaction among those
//     with a conversation-ID candidate (timestamps of candidate-bearing
//     events only), the candidate of its lowest-seq such event (CONTRACT §6).
//     ConversationIDs keeps every ID seen, ordered by first sighting, so a
//     dashboard can show forks.
//   - status: of the most recent interaction (over all its events), from
//     its highest-seq relay lifecycle event; "unknown" without one.
//   - usage and cost: summed over CLI result events, each counted once per
//     session even when re-sent under another event_id.
//
// Cursors number a session's events 1, 2, 3… in arrival order, without gaps,
// whichever process appends.
package store

import (
	"github.com/claude-relay/claude-relay/internal/wire"

	"context"
	"encoding/json"
	"errors"
	"time"
)

// Errors of every Store.
var (
	ErrNotFound = errors.New("not found")
	ErrClosed   = errors.New("store closed")
	// ErrInvalid wraps the reason an Append rejected its events (an empty
	// event_id or session_id, event_data that is not JSON); nothing of that
	// call was stored.
	ErrInvalid = errors.New("invalid event")
)

// Event is one envelope as posted (CONTRACT §6), plus what the backend assigns.
type Event struct {
	SessionID     string          `json:"session_id"`
	InteractionID string          `json:"interaction_id"`
	EventID       string          `json:"event_id"`
	Seq           int64           `json:"seq"`
	EventType     string          `json:"event_type"`
	EventData     json.RawMessage `json:"event_data"`
	Timestamp     time.Time       `json:"timestamp"`
	Source        string          `json:"source"`
	Cursor        int64           `json:"cursor"` // per-session, assigned in arrival order, from 1
}

// Usage is token usage, summed over a session's results.
type Usage = wire.Usage

// ConversationRef is one conversation ID a session had, for showing forks.
type ConversationRef struct {
	ID            string    `json:"id"`
	InteractionID string    `json:"interaction_id"`
	FirstSeen     time.Time `json:"first_seen"`
}

// Session is the derived state of a session.
type Session struct {
	ID                     string            `json:"id"`
	ExternalConversationID string            `json:"external_conversation_id"`
	ConversationIDs        []ConversationRef `json:"conversation_ids"`
	Status                 string            `json:"status"` // running, completed, failed, cancelled, or unknown
	EventCount             int64             `json:"event_count"`
	InteractionCount       int64             `json:"interaction_count"`
	Usage                  Usage             `json:"usage"`
	CostUSD                float64           `json:"total_cost_usd"`
	CreatedAt              time.Time         `json:"created_at"` // first event received
	UpdatedAt              time.Time         `json:"updated_at"` // last event received
	StartedAt              *time.Time        `json:"started_at,omitempty"`
	EndedAt                *time.Time        `json:"ended_at,omitempty"`
	LastCursor             int64             `json:"last_cursor"`
}

// AppendResult says what happened to one event of an Append.
type AppendResult struct {
	EventID   string
	Cursor    int64 // the stored event's cursor (the original one for a duplicate)
	Duplicate bool  // the event_id was stored before; nothing changed
}

// Notification says a session has new events up to Cursor.
type Notification struct {
	SessionID string
	Cursor    int64
}

// ListOptions pages the session list, newest (UpdatedAt) first.
type ListOptions struct {
	Limit int // 0: 100
}

// Store is what the HTTP API needs. Every method is safe for concurrent use,
// also across processes sharing one database.
type Store interface {
	// Append stores events idempotently on event_id (all sessions allowed in
	// one call), assigns cursors, and updates each session's derived state in
	// the same transaction. Results are in input order.
	Append(ctx context.Context, events []Event) ([]AppendResult, error)
	Session(ctx context.Context, id string) (Session, error)
	Sessions(ctx context.Context, opts ListOptions) ([]Session, error)
	// Events returns a session's events with cursor > after, in cursor order.
	Events(ctx context.Context, sessionID string, after int64, limit int) ([]Event, error)
	// Subscribe delivers a Notification for every Append that stored new
	// events, from any process on the same database, until ctx ends. The
	// channel is closed then. Slow receivers may miss notifications but
	// never the latest cursor of a session for long (coalesced).
	Subscribe(ctx context.Context) (<-chan Notification, error)
	Close() error
}
