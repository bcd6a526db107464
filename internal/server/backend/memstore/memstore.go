// Package memstore is an in-memory store.Store for the backend's tests,
// benchmarks and browser tests. It keeps the whole Store contract
// (idempotent Append, per-session cursors, coalescing Subscribe, the list
// fields and search, usage rows, approvals and decisions) and folds events
// with the store package's incremental rules, so it passes the shared
// storetest suite; it keeps nothing across restarts. Where the SQL stores
// run a query (a search, Usage's aggregation), it scans every session.
package memstore

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/server/store/fanout"
)

var _ store.Store = (*Store)(nil)

// Store is an in-memory store.Store. The zero value is not usable; call New.
type Store struct {
	mu        sync.Mutex
	byID      map[eventKey]int64 // (session_id, event_id) -> cursor
	sessions  map[string]*session
	approvals map[string]*store.ApprovalRecord // by approval_id, of every session
	notified  map[string]bool                  // approvals ClaimNotify gave out
	hub       *fanout.Hub                      // Subscribe's coalescing fan-out, shared with the SQL stores
	closed    bool
	audit     []auditRef // every stored event in arrival order (audit.go)

	// AppendErr, when set, makes Append fail with it (tests of error paths).
	AppendErr error
	// QuietDecide, when set, makes Decide store a decision without
	// notifying subscribers (a lost notification).
	QuietDecide bool
	// Appends counts Append calls, Stored the events they stored.
	Appends, Stored int
}

// eventKey identifies a stored event: event_id is unique within its
// session only.
type eventKey struct {
	session, eventID string
}

type session struct {
	events       []store.Event
	info         store.Session
	interactions map[string]*store.Interaction
	order        []string        // interaction IDs, first seen first
	results      map[string]bool // result keys counted once
	counted      []store.CountedResult
	listing      store.Listing
	search       string                     // store.AddSearch's text
	runEnds      map[string]store.RunEndRef // the earliest end of each run
}

// New returns an empty Store.
func New() *Store {
	return &Store{
		byID:      make(map[eventKey]int64),
		sessions:  make(map[string]*session),
		approvals: make(map[string]*store.ApprovalRecord),
		notified:  make(map[string]bool),
		hub:       fanout.New(),
	}
}

// Append implements store.Store.
func (s *Store) Append(ctx context.Context, events []store.Event) ([]store.AppendResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	if s.AppendErr != nil {
		return nil, s.AppendErr
	}
	for _, ev := range events {
		switch {
		case ev.EventID == "":
			return nil, fmt.Errorf("%w: empty event_id", store.ErrInvalid)
		case ev.SessionID == "":
			return nil, fmt.Errorf("%w: empty session_id", store.ErrInvalid)
		case !json.Valid(ev.EventData):
			return nil, fmt.Errorf("%w: event_data of %s is not JSON", store.ErrInvalid, ev.EventID)
		}
	}
	s.Appends++
	now := time.Now().UTC()
	out := make([]store.AppendResult, len(events))
	// Latest cursor per changed session, in first-changed order, as the SQL
	// stores notify.
	var changed []store.Notification
	changedAt := make(map[string]int)
	for i, ev := range events {
		key := eventKey{ev.SessionID, ev.EventID}
		if c, ok := s.byID[key]; ok {
			out[i] = store.AppendResult{EventID: ev.EventID, Cursor: c, Duplicate: true}
			continue
		}
		ss := s.sessions[ev.SessionID]
		if ss == nil {
			ss = &session{
				info:         store.Session{ID: ev.SessionID, Status: store.StatusUnknown, CreatedAt: now, ConversationIDs: []store.ConversationRef{}},
				interactions: make(map[string]*store.Interaction),
				results:      make(map[string]bool),
				runEnds:      make(map[string]store.RunEndRef),
			}
			ss.search, _ = store.AddSearch("", store.SearchNeedle(ev.SessionID))
			s.sessions[ev.SessionID] = ss
		}
		ev.EventData = append(json.RawMessage(nil), ev.EventData...)
		ev.Cursor = int64(len(ss.events)) + 1
		ss.events = append(ss.events, ev)
		f := store.FactsOf(ev)
		ss.apply(ev, f, now)
		conflict := s.foldApprovals(ss, ev, f)
		s.byID[key] = ev.Cursor
		s.audit = append(s.audit, auditRef{session: ev.SessionID, cursor: ev.Cursor, at: now})
		if j, ok := changedAt[ev.SessionID]; ok {
			changed[j].Cursor = ev.Cursor
		} else {
			changedAt[ev.SessionID] = len(changed)
			changed = append(changed, store.Notification{SessionID: ev.SessionID, Cursor: ev.Cursor})
		}
		out[i] = store.AppendResult{EventID: ev.EventID, Cursor: ev.Cursor, ApprovalConflict: conflict}
		s.Stored++
	}
	// Under s.mu, so a subscriber never sees cursors out of order across two
	// Appends; Publish never blocks.
	s.hub.Publish(changed...)
	return out, nil
}

// apply folds one new event into the summary with the store package's
// incremental rules (the same the SQL stores use).
func (ss *session) apply(ev store.Event, f store.Facts, now time.Time) {
	in := &ss.info
	in.EventCount++
	in.UpdatedAt = now
	in.LastCursor = ev.Cursor
	it := ss.interactions[ev.InteractionID]
	if it == nil {
		it = &store.Interaction{ID: ev.InteractionID}
		ss.interactions[ev.InteractionID] = it
		ss.order = append(ss.order, ev.InteractionID)
		in.InteractionCount = int64(len(ss.order))
	}
	it.Apply(ev, f)
	if f.Candidate != "" {
		in.ConversationIDs, _ = store.AddConversationRef(in.ConversationIDs, store.ConversationRef{
			ID: f.Candidate, InteractionID: ev.InteractionID, FirstSeen: ev.Timestamp,
		})
	}
	if f.Result != nil && !ss.results[f.Result.Key] {
		ss.results[f.Result.Key] = true
		in.Usage = in.Usage.Add(f.Result.Usage)
		in.CostUSD += f.Result.CostUSD
		if !f.Result.CostOnly {
			in.Turns++
		}
		ss.counted = append(ss.counted, store.CountedResult{Key: f.Result.Key, EventID: ev.EventID, At: ev.Timestamp.UTC(), Result: f.Result})
	}
	ss.listing.Apply(ev, f)
	ss.listing.Fill(in)
	ss.search, _ = store.AddSearch(ss.search, store.SearchItems(f)...)
	ins := make([]store.Interaction, 0, len(ss.order))
	for _, id := range ss.order {
		ins = append(ins, *ss.interactions[id])
	}
	in.ExternalConversationID = store.PickConversation(ins)
	in.Status, in.StartedAt, in.EndedAt = store.StatusUnknown, nil, nil
	if last, ok := store.MostRecent(ins); ok {
		in.Status, in.StartedAt, in.EndedAt = last.Outcome()
	}
}

// Session implements store.Store.
func (s *Store) Session(ctx context.Context, id string) (store.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.Session{}, store.ErrClosed
	}
	ss := s.sessions[id]
	if ss == nil {
		return store.Session{}, store.ErrNotFound
	}
	return ss.snapshot(), nil
}

func (ss *session) snapshot() store.Session {
	out := ss.info
	out.ConversationIDs = append([]store.ConversationRef{}, ss.info.ConversationIDs...)
	return out
}

// Sessions implements store.Store: the SQL stores' filters and order (newest
// UpdatedAt first, then greatest ID), over every session.
func (s *Store) Sessions(ctx context.Context, opts store.ListOptions) ([]store.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	needle := store.SearchNeedle(opts.Query)
	if opts.Now.IsZero() {
		opts.Now = time.Now() // one instant for every session's staleness
	}
	out := make([]store.Session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		if listed(ss, opts, needle) {
			out = append(out, ss.snapshot())
		}
	}
	sort.Slice(out, func(i, j int) bool { return newer(out[i].UpdatedAt, out[i].ID, out[j].UpdatedAt, out[j].ID) })
	return page(out, opts.Limit), nil
}

// page is the first limit of list, with the SQL stores' paging rule: a
// limit of 0 (or less) means 100, and no page is longer than 1000.
func page[T any](list []T, limit int) []T {
	switch {
	case limit <= 0:
		limit = 100
	case limit > 1000:
		limit = 1000
	}
	if len(list) > limit {
		list = list[:limit]
	}
	return list
}

// newer orders the session list.
func newer(at time.Time, id string, bt time.Time, bid string) bool {
	if !at.Equal(bt) {
		return at.After(bt)
	}
	return id > bid
}

func listed(ss *session, opts store.ListOptions, needle string) bool {
	in := &ss.info
	switch {
	case opts.Status != "" && store.ListStatus(*in, opts.Now) != opts.Status,
		opts.Project != "" && in.Project != opts.Project,
		!opts.From.IsZero() && in.CreatedAt.Before(opts.From),
		!opts.To.IsZero() && !in.CreatedAt.Before(opts.To),
		opts.After != nil && !newer(opts.After.UpdatedAt, opts.After.ID, in.UpdatedAt, in.ID):
		return false
	}
	return store.SearchMatches(ss.search, needle)
}

// Events implements store.Store.
func (s *Store) Events(ctx context.Context, sessionID string, after int64, limit int) ([]store.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	ss := s.sessions[sessionID]
	if ss == nil || after >= int64(len(ss.events)) {
		return nil, nil
	}
	if after < 0 {
		after = 0
	}
	return append([]store.Event(nil), page(ss.events[after:], limit)...), nil
}

// Subscribe implements store.Store: notifications coalesce per session while
// the receiver is slow.
func (s *Store) Subscribe(ctx context.Context) (<-chan store.Notification, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, store.ErrClosed
	}
	// A Close racing this call is fine: the hub refuses or ends the
	// subscription itself.
	return s.hub.Subscribe(ctx)
}

// Close implements store.Store; it ends every subscription and waits for
// their goroutines. It is idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.hub.Close()
	return nil
}
