package ingest

import (
	"encoding/json"
	"fmt"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

// Scanner is a row of either database/sql or pgx.
type Scanner interface {
	Scan(dest ...any) error
}

// Column lists of the schema both backends share (the tables have the same
// columns; only the SQL types differ). Scan functions read them in this order.
const (
	SessionColumns = `id, external_conversation_id, conversation_ids, status, event_count,
	interaction_count, input_tokens, output_tokens, cache_read_input_tokens,
	cache_creation_input_tokens, total_cost_usd, created_at, updated_at, started_at,
	ended_at, last_cursor, title, project, source, model, turns, billed_to`
	// StateColumns are SessionColumns and what only the writer reads.
	StateColumns = SessionColumns + `, list_keys`
	EventColumns = `session_id, interaction_id, event_id, seq, event_type, event_data,
	timestamp, source, cursor`
	InteractionColumns = `interaction_id, event_count, first_event_at, conv_id, conv_seq,
	conv_at, lifecycle_seq, status, lifecycle_at, started_seq, started_at, turn_done_seq`
)

// ScanSession reads SessionColumns.
func ScanSession(row Scanner) (store.Session, error) {
	var (
		s                  store.Session
		convs              []byte
		created, updated   int64
		startedAt, endedAt *int64
	)
	err := row.Scan(sessionDest(&s, &convs, &created, &updated, &startedAt, &endedAt)...)
	if err != nil {
		return store.Session{}, err
	}
	return finishSession(s, convs, created, updated, startedAt, endedAt)
}

func sessionDest(s *store.Session, convs *[]byte, created, updated *int64, startedAt, endedAt **int64) []any {
	return []any{&s.ID, &s.ExternalConversationID, convs, &s.Status, &s.EventCount,
		&s.InteractionCount, &s.Usage.InputTokens, &s.Usage.OutputTokens,
		&s.Usage.CacheReadInputTokens, &s.Usage.CacheCreationInputTokens, &s.CostUSD,
		created, updated, startedAt, endedAt, &s.LastCursor,
		&s.Title, &s.Project, &s.Source, &s.Model, &s.Turns, &s.BilledTo}
}

// ScanState reads StateColumns.
func ScanState(row Scanner) (*State, error) {
	var (
		s                  store.Session
		convs, keys        []byte
		created, updated   int64
		startedAt, endedAt *int64
	)
	dest := append(sessionDest(&s, &convs, &created, &updated, &startedAt, &endedAt), &keys)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	s, err := finishSession(s, convs, created, updated, startedAt, endedAt)
	if err != nil {
		return nil, err
	}
	st := &State{Session: s}
	if len(keys) > 0 {
		if err := json.Unmarshal(keys, &st.Listing); err != nil {
			return nil, fmt.Errorf("session %q: list_keys: %w", s.ID, err)
		}
	}
	return st, nil
}

func finishSession(s store.Session, convs []byte, created, updated int64, startedAt, endedAt *int64) (store.Session, error) {
	s.ConversationIDs = []store.ConversationRef{}
	if len(convs) > 0 {
		if err := json.Unmarshal(convs, &s.ConversationIDs); err != nil {
			return store.Session{}, fmt.Errorf("session %q: conversation_ids: %w", s.ID, err)
		}
	}
	s.CreatedAt, s.UpdatedAt = Time(created), Time(updated)
	s.StartedAt, s.EndedAt = TimePtr(startedAt), TimePtr(endedAt)
	return s, nil
}

// SessionArgs are the values of SessionColumns for an insert or update.
func SessionArgs(s *store.Session) ([]any, error) {
	refs := s.ConversationIDs
	if refs == nil {
		refs = []store.ConversationRef{}
	}
	convs, err := json.Marshal(refs)
	if err != nil {
		return nil, fmt.Errorf("session %q: conversation_ids: %w", s.ID, err)
	}
	return []any{s.ID, s.ExternalConversationID, string(convs), s.Status, s.EventCount,
		s.InteractionCount, s.Usage.InputTokens, s.Usage.OutputTokens,
		s.Usage.CacheReadInputTokens, s.Usage.CacheCreationInputTokens, s.CostUSD,
		Nanos(s.CreatedAt), Nanos(s.UpdatedAt), NanosPtr(s.StartedAt), NanosPtr(s.EndedAt),
		s.LastCursor, s.Title, s.Project, s.Source, s.Model, s.Turns, s.BilledTo}, nil
}

// StateArgs are the values of StateColumns.
func StateArgs(st *State) ([]any, error) {
	args, err := SessionArgs(&st.Session)
	if err != nil {
		return nil, err
	}
	keys, err := json.Marshal(st.Listing)
	if err != nil {
		return nil, fmt.Errorf("session %q: list_keys: %w", st.ID, err)
	}
	return append(args, string(keys)), nil
}

// ScanEvent reads EventColumns.
func ScanEvent(row Scanner) (store.Event, error) {
	var (
		ev   store.Event
		data []byte
		ts   int64
	)
	if err := row.Scan(&ev.SessionID, &ev.InteractionID, &ev.EventID, &ev.Seq, &ev.EventType,
		&data, &ts, &ev.Source, &ev.Cursor); err != nil {
		return store.Event{}, err
	}
	ev.EventData = json.RawMessage(data)
	ev.Timestamp = Time(ts)
	return ev, nil
}

// EventArgs are the values of EventColumns. event_data goes in as text so
// that it is stored byte for byte as received.
func EventArgs(ev *store.Event) []any {
	return []any{ev.SessionID, ev.InteractionID, ev.EventID, ev.Seq, ev.EventType,
		string(ev.EventData), Nanos(ev.Timestamp), ev.Source, ev.Cursor}
}

// ScanInteraction reads InteractionColumns.
func ScanInteraction(row Scanner) (store.Interaction, error) {
	var (
		in                                  store.Interaction
		first, convAt, lifecycleAt, started int64
	)
	if err := row.Scan(&in.ID, &in.EventCount, &first, &in.ConversationID, &in.ConversationSeq,
		&convAt, &in.LifecycleSeq, &in.Status, &lifecycleAt, &in.StartedSeq, &started, &in.TurnDoneSeq); err != nil {
		return store.Interaction{}, err
	}
	in.FirstEventAt, in.ConversationAt = Time(first), Time(convAt)
	in.LifecycleAt, in.StartedAt = Time(lifecycleAt), Time(started)
	return in, nil
}

// InteractionArgs are the values of "session_id, " + InteractionColumns.
func InteractionArgs(r *InteractionRow) []any {
	return []any{r.SessionID, r.ID, r.EventCount, Nanos(r.FirstEventAt), r.ConversationID,
		r.ConversationSeq, Nanos(r.ConversationAt), r.LifecycleSeq, r.Status,
		Nanos(r.LifecycleAt), r.StartedSeq, Nanos(r.StartedAt), r.TurnDoneSeq}
}

// Approval columns: what events make (ApprovalColumns, written at ingest)
// and the remote decision (RemoteColumns, written by Decide only), so that
// neither writer overwrites the other's.
const (
	ApprovalColumns = `approval_id, session_id, run_id, tool_name, title, input, kind, options,
	requested_at, state, decision, resolved_by, reason, resolved_at, requested, request_event,
	closure, closure_event, approver, policy_rule, policy_reason`
	RemoteColumns = `decision_id, remote_decision, remote_reason, remote_updated_input,
	remote_answers, remote_by, decided_at`
)

// ApprovalArgs are the values of ApprovalColumns. Input is "" when the
// request had none; requested is 0 or 1 (SQLite has no boolean).
func ApprovalArgs(r *store.ApprovalRecord) ([]any, error) {
	opts := r.Options
	if opts == nil {
		opts = []string{}
	}
	options, err := json.Marshal(opts)
	if err != nil {
		return nil, fmt.Errorf("approval %q: options: %w", r.ApprovalID, err)
	}
	requested := 0
	if r.Requested {
		requested = 1
	}
	return []any{r.ApprovalID, r.SessionID, r.RunID, r.ToolName, r.Title, string(r.Input), r.Kind,
		string(options), Nanos(r.RequestedAt), r.State, r.Decision, r.By, r.Reason, NanosPtr(r.ResolvedAt),
		requested, r.RequestEvent, r.Closure, r.ClosureEvent, r.Approver, r.PolicyRule, r.PolicyReason}, nil
}

// ScanApproval reads ApprovalColumns then RemoteColumns.
func ScanApproval(row Scanner) (*store.ApprovalRecord, error) {
	var (
		r                     store.ApprovalRecord
		input, options        string
		requestedAt           int64
		resolvedAt            *int64
		requested             int64
		d                     store.Decision
		updatedInput, answers string
		decidedAt             int64
	)
	err := row.Scan(&r.ApprovalID, &r.SessionID, &r.RunID, &r.ToolName, &r.Title, &input, &r.Kind,
		&options, &requestedAt, &r.State, &r.Decision, &r.By, &r.Reason, &resolvedAt, &requested,
		&r.RequestEvent, &r.Closure, &r.ClosureEvent, &r.Approver, &r.PolicyRule, &r.PolicyReason,
		&d.DecisionID, &d.Decision, &d.Reason, &updatedInput, &answers, &d.By, &decidedAt)
	if err != nil {
		return nil, err
	}
	if input != "" {
		r.Input = json.RawMessage(input)
	}
	r.Options = []string{}
	if err := json.Unmarshal([]byte(options), &r.Options); err != nil {
		return nil, fmt.Errorf("approval %q: options: %w", r.ApprovalID, err)
	}
	r.RequestedAt, r.ResolvedAt, r.Requested = Time(requestedAt), TimePtr(resolvedAt), requested != 0
	if d.DecisionID != "" {
		d.ApprovalID, d.DecidedAt = r.ApprovalID, Time(decidedAt)
		if updatedInput != "" {
			d.UpdatedInput = json.RawMessage(updatedInput)
		}
		if answers != "" {
			d.Answers = json.RawMessage(answers)
		}
		r.Remote = &d
	}
	return &r, nil
}

// ApprovalsOf is what Approvals answers of the records it read.
func ApprovalsOf(recs []*store.ApprovalRecord) []store.Approval {
	out := make([]store.Approval, len(recs))
	for i, r := range recs {
		out[i] = r.Approval
	}
	return out
}

// DecisionsOf is what Decisions answers of the records it read, every one
// with a remote decision (its query keeps only rows with a decision_id).
func DecisionsOf(recs []*store.ApprovalRecord) []store.Decision {
	out := make([]store.Decision, 0, len(recs))
	for _, r := range recs {
		out = append(out, *r.Remote)
	}
	return out
}

// DecisionArgs are the values of RemoteColumns.
func DecisionArgs(d *store.Decision) []any {
	return []any{d.DecisionID, d.Decision, d.Reason, string(d.UpdatedInput), string(d.Answers), d.By, Nanos(d.DecidedAt)}
}

// ScanUsageRow reads a row of UsageQuery.
func ScanUsageRow(row Scanner) (store.UsageRow, error) {
	var u store.UsageRow
	err := row.Scan(&u.Day, &u.Model, &u.Project, &u.Usage.InputTokens, &u.Usage.OutputTokens,
		&u.Usage.CacheReadInputTokens, &u.Usage.CacheCreationInputTokens, &u.CostUSD, &u.Results, &u.Sessions)
	return u, err
}
