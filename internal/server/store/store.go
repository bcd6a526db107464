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
//     session even when re-sent under another event_id (key: its uuid, else
//     interaction and seq). A result's figures are its per-model breakdown
//     when it has one (model_usage_since_last_result, else modelUsage),
//     else usage and total_cost_usd (resultOf says why). Turns counts the
//     results counted.
//
// The fields the session list shows (listing.go, Listing):
//
//   - title: the earliest prompt (by envelope timestamp, then
//     interaction_id, then seq) of relay.run_started (background, terminal
//     and ACP runs) and hook.UserPromptSubmit (prompts typed in a terminal
//     session), on one line, trimmed, at most 200 runes ("…" ends a cut one).
//   - project: event_data.cwd of the earliest relay.run_started, else of the
//     earliest hook event that has one.
//   - source: "terminal" when a relay.run_started has mode "terminal" or the
//     session has hook.* or transcript.* events, else "acp" when one has mode
//     "acp", else "background" once a relay.run_started was seen; "" before.
//   - model: of the latest event (same order) that names one: the CLI's
//     system/init model, or relay.run_started's model before the CLI said.
//   - billed to: the label of the latest relay.billing_source, else (older
//     helpers) the API key a system/init line names as its apiKeySource.
//   - search text: a bounded (MaxSearchText), lower-cased list of the
//     session's ID, the distinct prompts, tool names (assistant tool_use
//     blocks, transcript assistant lines, hook.PreToolUse) and conversation
//     IDs it has, kept at ingest so that a search never reads events.
//
// Usage rows (Usage): each counted result splits by model (Result.Models)
// and counts on the UTC day of its envelope timestamp; a result that names
// no model counts under its session's model, and every result under its
// session's project, as they are when Usage is asked (so a late event that
// changes them moves the rows too). The rows of a session sum to its Usage
// and CostUSD.
//
// Approvals (approvals.go, ApprovalRecord): relay.approval_requested makes
// one pending; the earliest relay.approval_resolved resolves it, or else the
// end of its run (relay.run_completed, run_failed or run_cancelled with its
// run_id: By "cancelled", Reason "the run ended"), in whichever order the
// events arrive. Decide stores a remote decision beside the event-made
// state: the first wins, the helper then reports the outcome as an event.
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
	// What the dashboard lists a session by (issue 16), from its events:
	Title   string `json:"title"`   // the first prompt, on one line, at most 200 runes
	Project string `json:"project"` // the working directory of its first run
	Source  string `json:"source"`  // background, terminal or acp; "" before a run started
	Model   string `json:"model"`   // the model its latest run used or asked for
	Turns   int64  `json:"turns"`   // CLI results counted (one per turn)
	// BilledTo is where its latest run's credentials came from, for people
	// ("API key ANTHROPIC_API_KEY", "subscription (Claude Max)"; issue 26):
	// "" when no event said.
	BilledTo string `json:"billed_to"`
	// Stale is never stored: the API sets it when it serves the session
	// (MarkStale), when the session is running but has had no event for
	// StaleAfter ("no news since UpdatedAt").
	Stale bool `json:"stale,omitempty"`
}

// AppendResult says what happened to one event of an Append.
type AppendResult struct {
	EventID   string
	Cursor    int64 // the stored event's cursor (the original one for a duplicate)
	Duplicate bool  // the event_id was stored before in this session; nothing changed
	// ApprovalConflict names the approval whose relay.approval_requested
	// this event repeated with another event_id: the event is stored, its
	// request ignored (the first to arrive defines an approval).
	ApprovalConflict string
}

// Notification says a session has new events up to Cursor.
type Notification struct {
	SessionID string
	Cursor    int64
}

// ListOptions filters and pages the session list, newest (UpdatedAt, then
// ID descending) first. Zero fields do not filter.
type ListOptions struct {
	Limit int // 0: 100
	// Query matches, case-insensitively as a substring, a session's
	// prompts, its ID, any of its conversation IDs, or the name of a tool
	// it called.
	Query string
	// Status is one of the statuses, or StatusStale: running sessions with
	// no event for StaleAfter. StatusRunning lists the other running ones.
	Status   string
	Project  string    // exact working directory
	From, To time.Time // CreatedAt in [From, To)
	// After continues a listing after the last session of the previous
	// page (keyset paging: stable while sessions arrive).
	After *ListCursor
	// Now is when staleness is judged (zero: the time of the call).
	Now time.Time
}

// ListCursor is a position in the session list.
type ListCursor struct {
	UpdatedAt time.Time
	ID        string
}

// UsageQuery selects the CLI results that Usage aggregates: those whose
// event timestamp is in [From, To) (zero: open), of Project when set.
type UsageQuery struct {
	From, To time.Time
	Project  string
}

// UsageRow is spend and tokens of one (day, model, project), summed in SQL
// over counted results (each result once, as in Session.Usage).
type UsageRow struct {
	Day      string  `json:"day"`     // YYYY-MM-DD, UTC, of the result's timestamp
	Model    string  `json:"model"`   // "" when the result names none
	Project  string  `json:"project"` // the session's project
	Usage    Usage   `json:"usage"`
	CostUSD  float64 `json:"total_cost_usd"`
	Results  int64   `json:"results"`
	Sessions int64   `json:"sessions"` // distinct sessions in this row
}

// Approval states.
const (
	ApprovalPending  = "pending"
	ApprovalResolved = "resolved"
)

// Approval is what the backend knows of one tool approval (CONTRACT §10),
// from relay.approval_requested and the events that end it:
// relay.approval_resolved (any decider), or the end of its run
// (relay.run_completed / run_failed / run_cancelled with the same run_id:
// resolved with By "cancelled" and Reason "the run ended").
type Approval struct {
	ApprovalID string          `json:"approval_id"`
	SessionID  string          `json:"session_id"`
	RunID      string          `json:"run_id"`
	ToolName   string          `json:"tool_name"`
	Title      string          `json:"title"`
	Input      json.RawMessage `json:"input"`
	// InputSHA256 is wire.InputDigest(Input), which the API adds to what
	// it shows so that a decision can name the input it was made on.
	InputSHA256 string    `json:"input_sha256,omitempty"`
	Kind        string    `json:"kind"`
	Options     []string  `json:"options"`
	RequestedAt time.Time `json:"requested_at"` // the request event's timestamp
	State       string    `json:"state"`        // pending or resolved
	// The central policy's rule that asked, as the request carried it:
	// Approver "dashboard" means only the dashboard may decide, so the
	// dashboard says so and why.
	Approver     string `json:"approver,omitempty"`
	PolicyRule   string `json:"policy_rule,omitempty"`
	PolicyReason string `json:"policy_reason,omitempty"`
	// The outcome, from the helper's relay.approval_resolved (or the run's end).
	Decision   string     `json:"decision,omitempty"`
	By         string     `json:"by,omitempty"`
	Reason     string     `json:"reason,omitempty"`
	ResolvedAt *time.Time `json:"resolved_at,omitempty"`
	// Remote is the decision made through the backend, once one was;
	// the helper applies it unless another side answered first.
	Remote *Decision `json:"remote_decision,omitempty"`
}

// Decision is a decision made through the backend's API.
type Decision struct {
	ApprovalID   string          `json:"approval_id"`
	DecisionID   string          `json:"decision_id"` // idempotency: the same ID again is the same decision
	Decision     string          `json:"decision"`
	Reason       string          `json:"reason,omitempty"`
	UpdatedInput json.RawMessage `json:"updated_input,omitempty"`
	Answers      json.RawMessage `json:"answers,omitempty"`
	By           string          `json:"by"` // who decided: the token's name
	DecidedAt    time.Time       `json:"decided_at"`
}

// ApprovalFilter selects approvals, newest request first.
type ApprovalFilter struct {
	State     string // "" any
	SessionID string // "" any
	Limit     int    // 0: 100
}

// ErrDecided is Decide's answer when the approval already has another
// decision or was resolved; the returned Approval says by whom and how.
var ErrDecided = errors.New("already decided")

// Store is what the HTTP API needs. Every method is safe for concurrent use,
// also across processes sharing one database.
type Store interface {
	// Append stores events idempotently on (session_id, event_id): an
	// event_id is unique within its session only (all sessions allowed in
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

	// Usage aggregates counted results by (day, model, project), ordered
	// by day, model, project.
	Usage(ctx context.Context, q UsageQuery) ([]UsageRow, error)

	// Approvals lists approvals whose request was seen; Approval returns
	// one (ErrNotFound), also one known from its resolution alone.
	Approvals(ctx context.Context, f ApprovalFilter) ([]Approval, error)
	Approval(ctx context.Context, id string) (Approval, error)
	// Decide stores d as the approval's remote decision when it is pending
	// and has none. It returns the approval as stored after the call:
	// ErrNotFound for an unknown approval; ErrDecided when it was resolved
	// or has a decision with another DecisionID (a repeat of the stored
	// DecisionID is a success). Appending the request event notifies
	// Subscribe as usual; a decision notifies too (its session, cursor
	// unchanged), so other replicas learn of it.
	Decide(ctx context.Context, d Decision) (Approval, error)
	// Decisions returns the remote decisions of those of ids that have one,
	// for the helper that waits on them.
	Decisions(ctx context.Context, ids []string) ([]Decision, error)
	// ClaimNotify returns true for exactly one caller per approval (across
	// processes sharing the database): the one that sends its push.
	ClaimNotify(ctx context.Context, approvalID string) (bool, error)
	// ClaimNotice returns true for exactly one caller per key, ever
	// (across processes sharing the database): the one that sends the
	// push the key names (a budget's warning per threshold per period).
	ClaimNotice(ctx context.Context, key string) (bool, error)

	Close() error
}
