// Package ingest is the one Append algorithm both SQL backends run inside
// their write transaction: duplicate detection on event_id, per-session
// cursors, and the incremental update of each session's derived state with
// the pure rules of package store. A backend supplies the SQL through Tx;
// keeping the algorithm here means SQLite and PostgreSQL cannot drift apart.
package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/claude-relay/claude-relay/internal/store"
)

// Tx is a backend's write transaction, as the algorithm needs it.
type Tx interface {
	// KnownEvents returns the cursors of those of ids that are stored.
	KnownEvents(ctx context.Context, ids []string) (map[string]int64, error)
	// LockSessions locks the sessions' rows until the transaction ends,
	// creating missing ones (CreatedAt and UpdatedAt now, status unknown),
	// and returns them. ids are sorted so that concurrent transactions lock
	// in one order and cannot deadlock.
	LockSessions(ctx context.Context, ids []string, now time.Time) (map[string]*store.Session, error)
	// Interactions returns those of a session's interactions that exist.
	Interactions(ctx context.Context, sessionID string, ids []string) (map[string]store.Interaction, error)
	// KnownResults returns which result keys a session has counted.
	KnownResults(ctx context.Context, sessionID string, keys []string) (map[string]bool, error)
	// Write inserts events and results and upserts interactions.
	Write(ctx context.Context, w Writes) error
	// Summary returns what the session-level rules pick from the session's
	// stored interactions: ordered as store.MoreRecent orders them.
	Summary(ctx context.Context, sessionID string) (Summary, error)
	// UpdateSession stores a session's derived state.
	UpdateSession(ctx context.Context, s *store.Session) error
}

// Writes is the rows one Append adds or changes.
type Writes struct {
	Events       []store.Event // with cursors assigned
	ReceivedAt   time.Time
	Results      []ResultRow
	Interactions []InteractionRow
}

// ResultRow marks a result as counted for its session.
type ResultRow struct {
	SessionID, Key, EventID string
}

// InteractionRow is an interaction aggregate to upsert.
type InteractionRow struct {
	SessionID string
	store.Interaction
}

// Summary is the top of a session's interactions.
type Summary struct {
	ConversationID string            // of the most recent interaction that has one
	Recent         store.Interaction // the most recent interaction
	HasRecent      bool
}

// Outcome is what an Append did.
type Outcome struct {
	Results       []store.AppendResult // in input order
	Notifications []store.Notification // one per session with new events, sorted by session
}

// Append stores events through tx. The caller commits tx and, once
// committed, publishes the notifications.
func Append(ctx context.Context, tx Tx, events []store.Event, now time.Time) (Outcome, error) {
	out := Outcome{Results: make([]store.AppendResult, len(events))}
	known, err := tx.KnownEvents(ctx, eventIDs(events))
	if err != nil {
		return Outcome{}, err
	}
	fresh := unknownEvents(events, known)
	if len(fresh) == 0 {
		fillDuplicates(out.Results, events, known)
		return out, nil
	}
	sessions, err := tx.LockSessions(ctx, sessionIDs(fresh), now)
	if err != nil {
		return Outcome{}, err
	}
	// Check again under the locks: a concurrent Append of the same session
	// may have stored some of these between the first check and the lock.
	again, err := tx.KnownEvents(ctx, eventIDs(fresh))
	if err != nil {
		return Outcome{}, err
	}
	for id, c := range again {
		known[id] = c
	}
	bySession := assignCursors(out.Results, events, known, sessions, now)
	w := Writes{ReceivedAt: now}
	ids := sortedKeys(bySession)
	for _, sid := range ids {
		if err := fold(ctx, tx, sessions[sid], bySession[sid], &w); err != nil {
			return Outcome{}, err
		}
	}
	if err := tx.Write(ctx, w); err != nil {
		return Outcome{}, err
	}
	for _, sid := range ids {
		s := sessions[sid]
		if err := summarize(ctx, tx, s); err != nil {
			return Outcome{}, err
		}
		if err := tx.UpdateSession(ctx, s); err != nil {
			return Outcome{}, err
		}
		out.Notifications = append(out.Notifications, store.Notification{SessionID: sid, Cursor: s.LastCursor})
	}
	return out, nil
}

// assignCursors fills results and numbers the new events of each session in
// input order; an event_id repeated within the batch is a duplicate of its
// first occurrence.
func assignCursors(results []store.AppendResult, events []store.Event, known map[string]int64,
	sessions map[string]*store.Session, now time.Time) map[string][]store.Event {
	bySession := map[string][]store.Event{}
	for i, ev := range events {
		if c, ok := known[ev.EventID]; ok {
			results[i] = store.AppendResult{EventID: ev.EventID, Cursor: c, Duplicate: true}
			continue
		}
		s := sessions[ev.SessionID]
		s.LastCursor++
		s.EventCount++
		if now.After(s.UpdatedAt) { // never backwards, whoever committed first
			s.UpdatedAt = now
		}
		ev.Cursor = s.LastCursor
		known[ev.EventID] = ev.Cursor
		results[i] = store.AppendResult{EventID: ev.EventID, Cursor: ev.Cursor}
		bySession[ev.SessionID] = append(bySession[ev.SessionID], ev)
	}
	return bySession
}

func fillDuplicates(results []store.AppendResult, events []store.Event, known map[string]int64) {
	for i, ev := range events {
		results[i] = store.AppendResult{EventID: ev.EventID, Cursor: known[ev.EventID], Duplicate: true}
	}
}

// fold applies one session's new events to its interactions, conversation
// history and usage, and queues the rows to write.
func fold(ctx context.Context, tx Tx, s *store.Session, events []store.Event, w *Writes) error {
	var iids []string
	seen := map[string]bool{}
	for _, ev := range events {
		if !seen[ev.InteractionID] {
			seen[ev.InteractionID] = true
			iids = append(iids, ev.InteractionID)
		}
	}
	ins, err := tx.Interactions(ctx, s.ID, iids)
	if err != nil {
		return err
	}
	if ins == nil {
		ins = map[string]store.Interaction{}
	}
	s.InteractionCount += int64(len(iids) - len(ins))
	var results []ResultRow
	newResults := map[string]*store.Result{}
	for _, ev := range events {
		f := store.FactsOf(ev)
		in := ins[ev.InteractionID]
		in.ID = ev.InteractionID
		in.Apply(ev, f)
		ins[ev.InteractionID] = in
		if f.Candidate != "" {
			s.ConversationIDs, _ = store.AddConversationRef(s.ConversationIDs, store.ConversationRef{
				ID: f.Candidate, InteractionID: ev.InteractionID, FirstSeen: ev.Timestamp,
			})
		}
		if f.Result != nil && newResults[f.Result.Key] == nil {
			newResults[f.Result.Key] = f.Result
			results = append(results, ResultRow{SessionID: s.ID, Key: f.Result.Key, EventID: ev.EventID})
		}
	}
	if len(results) > 0 {
		keys := make([]string, len(results))
		for i, r := range results {
			keys[i] = r.Key
		}
		counted, err := tx.KnownResults(ctx, s.ID, keys)
		if err != nil {
			return err
		}
		for _, r := range results {
			if counted[r.Key] {
				continue
			}
			res := newResults[r.Key]
			s.Usage = s.Usage.Add(res.Usage)
			s.CostUSD += res.CostUSD
			w.Results = append(w.Results, r)
		}
	}
	w.Events = append(w.Events, events...)
	for _, iid := range iids {
		w.Interactions = append(w.Interactions, InteractionRow{SessionID: s.ID, Interaction: ins[iid]})
	}
	return nil
}

func summarize(ctx context.Context, tx Tx, s *store.Session) error {
	sum, err := tx.Summary(ctx, s.ID)
	if err != nil {
		return err
	}
	s.ExternalConversationID = sum.ConversationID
	s.Status, s.StartedAt, s.EndedAt = store.StatusUnknown, nil, nil
	if sum.HasRecent {
		s.Status, s.StartedAt, s.EndedAt = sum.Recent.Outcome()
	}
	return nil
}

func eventIDs(events []store.Event) []string {
	ids := make([]string, len(events))
	for i, ev := range events {
		ids[i] = ev.EventID
	}
	return ids
}

func unknownEvents(events []store.Event, known map[string]int64) []store.Event {
	var out []store.Event
	for _, ev := range events {
		if _, ok := known[ev.EventID]; !ok {
			out = append(out, ev)
		}
	}
	return out
}

func sessionIDs(events []store.Event) []string {
	set := map[string][]store.Event{}
	for _, ev := range events {
		set[ev.SessionID] = nil
	}
	return sortedKeys(set)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Validate rejects what no backend can store: text must be UTF-8 without
// NUL (PostgreSQL's text refuses both) and event_data valid JSON. The HTTP
// API validates envelopes for users; this guards the invariants the schema
// relies on, with the same answer from both backends.
func Validate(events []store.Event) error {
	for i, ev := range events {
		var reason string
		switch {
		case ev.EventID == "":
			reason = "empty event_id"
		case ev.SessionID == "":
			reason = "empty session_id"
		case !json.Valid(ev.EventData) || !utf8.Valid(ev.EventData):
			reason = "event_data is not valid UTF-8 JSON"
		default:
			for _, f := range []string{ev.SessionID, ev.InteractionID, ev.EventID, ev.EventType, ev.Source} {
				if !utf8.ValidString(f) || strings.ContainsRune(f, 0) {
					reason = fmt.Sprintf("field %q is not UTF-8 text without NUL", f)
				}
			}
		}
		if reason != "" {
			return fmt.Errorf("%w: event %d (event_id %q): %s", store.ErrInvalid, i, ev.EventID, reason)
		}
	}
	return nil
}
