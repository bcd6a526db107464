package ingest

import (
	"encoding/json"
	"fmt"

	"github.com/claude-relay/claude-relay/internal/store"
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
	ended_at, last_cursor`
	EventColumns = `session_id, interaction_id, event_id, seq, event_type, event_data,
	timestamp, source, cursor`
	InteractionColumns = `interaction_id, event_count, first_event_at, conv_id, conv_seq,
	conv_at, lifecycle_seq, status, lifecycle_at, started_seq, started_at`
)

// ScanSession reads SessionColumns.
func ScanSession(row Scanner) (store.Session, error) {
	var (
		s                  store.Session
		convs              []byte
		created, updated   int64
		startedAt, endedAt *int64
	)
	err := row.Scan(&s.ID, &s.ExternalConversationID, &convs, &s.Status, &s.EventCount,
		&s.InteractionCount, &s.Usage.InputTokens, &s.Usage.OutputTokens,
		&s.Usage.CacheReadInputTokens, &s.Usage.CacheCreationInputTokens, &s.CostUSD,
		&created, &updated, &startedAt, &endedAt, &s.LastCursor)
	if err != nil {
		return store.Session{}, err
	}
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
		s.LastCursor}, nil
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
		&convAt, &in.LifecycleSeq, &in.Status, &lifecycleAt, &in.StartedSeq, &started); err != nil {
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
		Nanos(r.LifecycleAt), r.StartedSeq, Nanos(r.StartedAt)}
}
