// Package ingest is the one Append algorithm both SQL backends run inside
// their write transaction: duplicate detection on (session_id, event_id), per-session
// cursors, and the incremental update of each session's derived state with
// the pure rules of package store (interactions, usage rows, list fields,
// search text, approvals). A backend supplies the SQL through Tx; keeping
// the algorithm here means SQLite and PostgreSQL cannot drift apart. So do
// the read queries with filters (query.go, one builder over a Dialect) and
// the backfill a migration runs for data stored before its rules
// (backfill.go).
package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

// Tx is a backend's write transaction, as the algorithm needs it.
type Tx interface {
	// KnownEvents returns the cursors of those of keys that are stored.
	KnownEvents(ctx context.Context, keys []EventKey) (map[EventKey]int64, error)
	// LockSessions locks the sessions' rows until the transaction ends,
	// creating missing ones (CreatedAt and UpdatedAt now, status unknown,
	// New set), and returns them. ids are sorted so that concurrent
	// transactions lock in one order and cannot deadlock.
	LockSessions(ctx context.Context, ids []string, now time.Time) (map[string]*State, error)
	// Interactions returns those of a session's interactions that exist.
	Interactions(ctx context.Context, sessionID string, ids []string) (map[string]store.Interaction, error)
	// KnownResults returns which result keys a session has counted.
	KnownResults(ctx context.Context, sessionID string, keys []string) (map[string]bool, error)
	// Search returns a session's search text, "" when it has none.
	Search(ctx context.Context, sessionID string) (string, error)
	// Approvals returns the approvals whose approval_id is in ids (of any
	// session) and the session's approvals of the runs in runIDs.
	Approvals(ctx context.Context, sessionID string, ids, runIDs []string) (map[string]*store.ApprovalRecord, error)
	// RunEnds returns the stored ends of those of a session's runs that ended.
	RunEnds(ctx context.Context, sessionID string, runIDs []string) (map[string]store.RunEndRef, error)
	// Write inserts events and results, upserts interactions, search texts
	// and approvals (their event-made columns), and keeps the earliest end
	// of each run.
	Write(ctx context.Context, w Writes) error
	// Summary returns what the session-level rules pick from the session's
	// stored interactions: ordered as store.MoreRecent orders them.
	Summary(ctx context.Context, sessionID string) (Summary, error)
	// UpdateSession stores a session's derived state.
	UpdateSession(ctx context.Context, s *State) error
}

// EventKey identifies a stored event: an event_id is unique within its
// session only, so that one session cannot make another's event a
// duplicate by reusing its ID.
type EventKey struct {
	SessionID, EventID string
}

// KeyOf is ev's EventKey.
func KeyOf(ev *store.Event) EventKey { return EventKey{SessionID: ev.SessionID, EventID: ev.EventID} }

// State is a session's row as the writer reads and writes it.
type State struct {
	store.Session
	Listing store.Listing // the keys behind Title, Project, Source and Model
	New     bool          // created by this transaction
}

// Writes is the rows one Append adds or changes.
type Writes struct {
	Events       []store.Event // with cursors assigned
	ReceivedAt   time.Time
	Results      []ResultRow
	Interactions []InteractionRow
	Search       []SearchRow
	Approvals    []store.ApprovalRecord
	RunEnds      []RunEndRow
	// Conflicts: by event, the approval an event asked for again (its
	// request ignored); reported in the event's AppendResult, not written.
	Conflicts map[EventKey]string
}

// ResultRow marks a result as counted for its session, with its usage
// rows (store.CountedResult.Rows).
type ResultRow struct {
	SessionID, Key, EventID string
	Day                     string    // store.UsageDay of At
	At                      time.Time // the result's envelope timestamp
	Models                  []store.ModelUsage
}

// InteractionRow is an interaction aggregate to upsert.
type InteractionRow struct {
	SessionID string
	store.Interaction
}

// SearchRow is a session's new search text.
type SearchRow struct {
	SessionID, Text string
}

// RunEndRow is the earliest end of a run seen so far.
type RunEndRow struct {
	SessionID, RunID string
	store.RunEndRef
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
	known, err := tx.KnownEvents(ctx, eventKeys(events))
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
	again, err := tx.KnownEvents(ctx, eventKeys(fresh))
	if err != nil {
		return Outcome{}, err
	}
	for k, c := range again {
		known[k] = c
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
	for i := range out.Results {
		if id, ok := w.Conflicts[KeyOf(&events[i])]; ok && !out.Results[i].Duplicate {
			out.Results[i].ApprovalConflict = id
		}
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
// input order; an event repeated within the batch (same session and
// event_id) is a duplicate of its first occurrence.
func assignCursors(results []store.AppendResult, events []store.Event, known map[EventKey]int64,
	sessions map[string]*State, now time.Time) map[string][]store.Event {
	bySession := map[string][]store.Event{}
	for i, ev := range events {
		if c, ok := known[KeyOf(&ev)]; ok {
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
		known[KeyOf(&ev)] = ev.Cursor
		results[i] = store.AppendResult{EventID: ev.EventID, Cursor: ev.Cursor}
		bySession[ev.SessionID] = append(bySession[ev.SessionID], ev)
	}
	return bySession
}

func fillDuplicates(results []store.AppendResult, events []store.Event, known map[EventKey]int64) {
	for i, ev := range events {
		results[i] = store.AppendResult{EventID: ev.EventID, Cursor: known[KeyOf(&ev)], Duplicate: true}
	}
}

// fold applies one session's new events to its interactions, conversation
// history, usage, list fields, search text and approvals, and queues the
// rows to write.
func fold(ctx context.Context, tx Tx, s *State, events []store.Event, w *Writes) error {
	iids := interactionIDs(events)
	ins, err := tx.Interactions(ctx, s.ID, iids)
	if err != nil {
		return err
	}
	if ins == nil {
		ins = map[string]store.Interaction{}
	}
	s.InteractionCount += int64(len(iids) - len(ins))
	search := newSearchBatch(s)
	var results []ResultRow
	newResults := map[string]*store.Result{}
	facts := make([]store.Facts, len(events))
	for i, ev := range events {
		f := store.FactsOf(ev)
		facts[i] = f
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
			c := store.CountedResult{Key: f.Result.Key, EventID: ev.EventID, At: ev.Timestamp.UTC(), Result: f.Result}
			results = append(results, resultRow(s.ID, c))
		}
		s.Listing.Apply(ev, f)
		search.add(f)
	}
	s.Listing.Fill(&s.Session)
	if err := countResults(ctx, tx, s, results, newResults, w); err != nil {
		return err
	}
	if err := addSearch(ctx, tx, s, search.items, w); err != nil {
		return err
	}
	if err := foldApprovals(ctx, tx, s.ID, events, facts, w); err != nil {
		return err
	}
	w.Events = append(w.Events, events...)
	for _, iid := range iids {
		w.Interactions = append(w.Interactions, InteractionRow{SessionID: s.ID, Interaction: ins[iid]})
	}
	return nil
}

// interactionIDs lists the events' interactions, first seen first.
func interactionIDs(events []store.Event) []string {
	var iids []string
	seen := map[string]bool{}
	for _, ev := range events {
		if !seen[ev.InteractionID] {
			seen[ev.InteractionID] = true
			iids = append(iids, ev.InteractionID)
		}
	}
	return iids
}

// searchBatch collects what a batch adds to its session's search text.
type searchBatch struct {
	known map[string]bool // conversation IDs in the text already
	items []string
}

// newSearchBatch starts a batch: a new session's text starts with its ID.
func newSearchBatch(s *State) *searchBatch {
	b := &searchBatch{known: map[string]bool{}}
	for _, r := range s.ConversationIDs {
		b.known[r.ID] = true
	}
	if s.New {
		b.items = append(b.items, store.SearchNeedle(s.ID))
	}
	return b
}

// add takes an event's items. A conversation ID the session had before is
// in its text already: most CLI events carry one, and reading the text for
// each would be waste.
func (b *searchBatch) add(f store.Facts) {
	if f.Candidate != "" {
		if b.known[f.Candidate] {
			f.Candidate = ""
		} else {
			b.known[f.Candidate] = true
		}
	}
	b.items = append(b.items, store.SearchItems(f)...)
}

func resultRow(sessionID string, c store.CountedResult) ResultRow {
	return ResultRow{SessionID: sessionID, Key: c.Key, EventID: c.EventID, Day: store.UsageDay(c.At), At: c.At, Models: c.Rows()}
}

// countResults adds the results the session has not counted yet.
func countResults(ctx context.Context, tx Tx, s *State, results []ResultRow, byKey map[string]*store.Result, w *Writes) error {
	if len(results) == 0 {
		return nil
	}
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
		res := byKey[r.Key]
		s.Usage = s.Usage.Add(res.Usage)
		s.CostUSD += res.CostUSD
		if !res.CostOnly {
			s.Turns++
		}
		w.Results = append(w.Results, r)
	}
	return nil
}

// addSearch adds items to the session's search text, reading it only when
// there is something to add.
func addSearch(ctx context.Context, tx Tx, s *State, items []string, w *Writes) error {
	if len(items) == 0 {
		return nil
	}
	text := ""
	if !s.New {
		var err error
		if text, err = tx.Search(ctx, s.ID); err != nil {
			return err
		}
	}
	if text, changed := store.AddSearch(text, items...); changed {
		w.Search = append(w.Search, SearchRow{SessionID: s.ID, Text: text})
	}
	return nil
}

// foldApprovals applies the events to the approvals they name and to those
// of the runs they end.
func foldApprovals(ctx context.Context, tx Tx, sessionID string, events []store.Event, facts []store.Facts, w *Writes) error {
	ids, ended, requestRuns := store.ApprovalRefs(facts)
	if len(ids) == 0 && len(ended) == 0 {
		return nil
	}
	recs, err := tx.Approvals(ctx, sessionID, ids, ended)
	if err != nil {
		return err
	}
	if recs == nil {
		recs = map[string]*store.ApprovalRecord{}
	}
	runs := append(append([]string(nil), ended...), requestRuns...)
	ends, err := tx.RunEnds(ctx, sessionID, runs)
	if err != nil {
		return err
	}
	a := store.ApprovalFold{SessionID: sessionID, Records: recs, Ended: ends}
	changed, newEnds := a.Apply(events, facts)
	for ev, id := range a.Conflicts {
		if w.Conflicts == nil {
			w.Conflicts = map[EventKey]string{}
		}
		w.Conflicts[EventKey{SessionID: sessionID, EventID: ev}] = id
	}
	for _, id := range changed {
		w.Approvals = append(w.Approvals, *recs[id])
	}
	for _, run := range sortedKeys(newEnds) {
		w.RunEnds = append(w.RunEnds, RunEndRow{SessionID: sessionID, RunID: run, RunEndRef: newEnds[run]})
	}
	return nil
}

func summarize(ctx context.Context, tx Tx, s *State) error {
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

func eventKeys(events []store.Event) []EventKey {
	keys := make([]EventKey, len(events))
	for i := range events {
		keys[i] = KeyOf(&events[i])
	}
	return keys
}

func unknownEvents(events []store.Event, known map[EventKey]int64) []store.Event {
	var out []store.Event
	for _, ev := range events {
		if _, ok := known[KeyOf(&ev)]; !ok {
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
