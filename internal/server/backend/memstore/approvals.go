package memstore

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

// foldApprovals applies one stored event to the approvals with the store
// package's rules (store.ApprovalFold), as the SQL stores do per Append.
// It returns the approval whose request the event repeated, if any.
func (s *Store) foldApprovals(ss *session, ev store.Event, f store.Facts) (conflict string) {
	events, facts := []store.Event{ev}, []store.Facts{f}
	ids, ended, _ := store.ApprovalRefs(facts)
	if len(ids) == 0 && len(ended) == 0 {
		return ""
	}
	recs := map[string]*store.ApprovalRecord{}
	for _, id := range ids {
		if r := s.approvals[id]; r != nil {
			recs[id] = r // another session's stays untouched: the fold skips it
		}
	}
	for id, r := range s.approvals {
		if r.SessionID == ss.info.ID && slices.Contains(ended, r.RunID) {
			recs[id] = r
		}
	}
	fold := store.ApprovalFold{SessionID: ss.info.ID, Records: recs, Ended: ss.runEnds}
	changed, _ := fold.Apply(events, facts)
	for _, id := range changed {
		s.approvals[id] = recs[id]
	}
	return fold.Conflicts[ev.EventID]
}

// Usage implements store.Store: the SQL stores' aggregation, in Go.
func (s *Store) Usage(ctx context.Context, q store.UsageQuery) ([]store.UsageRow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	type key struct{ day, model, project string }
	rows := map[key]*store.UsageRow{}
	sessions := map[key]map[string]bool{}
	for _, ss := range s.sessions {
		if q.Project != "" && ss.info.Project != q.Project {
			continue
		}
		for _, c := range ss.counted {
			if (!q.From.IsZero() && c.At.Before(q.From)) || (!q.To.IsZero() && !c.At.Before(q.To)) {
				continue
			}
			for _, m := range c.Rows() {
				model := m.Model
				if model == "" {
					model = ss.info.Model
				}
				k := key{store.UsageDay(c.At), model, ss.info.Project}
				r := rows[k]
				if r == nil {
					r = &store.UsageRow{Day: k.day, Model: k.model, Project: k.project}
					rows[k], sessions[k] = r, map[string]bool{}
				}
				r.Usage = r.Usage.Add(m.Usage)
				r.CostUSD += m.CostUSD
				if !c.Result.CostOnly { // a terminal run's cost, not a turn
					r.Results++
				}
				sessions[k][ss.info.ID] = true
			}
		}
	}
	out := make([]store.UsageRow, 0, len(rows))
	for k, r := range rows {
		r.Sessions = int64(len(sessions[k]))
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Day != b.Day {
			return a.Day < b.Day
		}
		if a.Model != b.Model {
			return a.Model < b.Model
		}
		return a.Project < b.Project
	})
	return out, nil
}

// Approvals implements store.Store.
func (s *Store) Approvals(ctx context.Context, f store.ApprovalFilter) ([]store.Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	out := []store.Approval{}
	for _, r := range s.approvals {
		if r.Requested && (f.State == "" || r.State == f.State) && (f.SessionID == "" || r.SessionID == f.SessionID) {
			out = append(out, snapshot(r))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].RequestedAt.Equal(out[j].RequestedAt) {
			return out[i].RequestedAt.After(out[j].RequestedAt)
		}
		return out[i].ApprovalID > out[j].ApprovalID
	})
	return page(out, f.Limit), nil
}

// snapshot copies an approval so that callers do not share its slices.
func snapshot(r *store.ApprovalRecord) store.Approval {
	a := r.Approval
	a.Options = append([]string{}, a.Options...)
	if a.ResolvedAt != nil {
		t := *a.ResolvedAt
		a.ResolvedAt = &t
	}
	if a.Remote != nil {
		d := *a.Remote
		a.Remote = &d
	}
	return a
}

// Approval implements store.Store.
func (s *Store) Approval(ctx context.Context, id string) (store.Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.Approval{}, store.ErrClosed
	}
	r := s.approvals[id]
	if r == nil {
		return store.Approval{}, fmt.Errorf("approval %q: %w", id, store.ErrNotFound)
	}
	return snapshot(r), nil
}

// Decide implements store.Store.
func (s *Store) Decide(ctx context.Context, d store.Decision) (store.Approval, error) {
	d, err := store.PrepareDecision(d)
	if err != nil {
		return store.Approval{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.Approval{}, store.ErrClosed
	}
	r := s.approvals[d.ApprovalID]
	if r == nil || !r.Decidable() {
		return store.DecideRefused(d, r)
	}
	r.Remote = &d
	if !s.QuietDecide {
		// Under s.mu, like Append's notifications; Publish never blocks.
		s.hub.Publish(store.Notification{SessionID: r.SessionID, Cursor: s.sessions[r.SessionID].info.LastCursor})
	}
	return snapshot(r), nil
}

// Decisions implements store.Store.
func (s *Store) Decisions(ctx context.Context, ids []string) ([]store.Decision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	out := []store.Decision{}
	for _, id := range ids {
		if r := s.approvals[id]; r != nil && r.Remote != nil && !slices.Contains(idsOf(out), id) {
			out = append(out, *r.Remote)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ApprovalID < out[j].ApprovalID })
	return out, nil
}

func idsOf(ds []store.Decision) []string {
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.ApprovalID
	}
	return ids
}

// ClaimNotify implements store.Store.
func (s *Store) ClaimNotify(ctx context.Context, approvalID string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, store.ErrClosed
	}
	if s.approvals[approvalID] == nil {
		return false, fmt.Errorf("approval %q: %w", approvalID, store.ErrNotFound)
	}
	if s.notified[approvalID] {
		return false, nil
	}
	s.notified[approvalID] = true
	return true, nil
}

// ClaimNotice implements store.Store. Keys share the approvals' claim map
// under a prefix no approval ID has.
func (s *Store) ClaimNotice(ctx context.Context, key string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, store.ErrClosed
	}
	if s.notified["notice\x00"+key] {
		return false, nil
	}
	s.notified["notice\x00"+key] = true
	return true, nil
}
