package backend

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/claude-relay/claude-relay/internal/backend/memstore"
	"github.com/claude-relay/claude-relay/internal/store"
	"github.com/claude-relay/claude-relay/internal/store/fanout"
	relaywire "github.com/claude-relay/claude-relay/internal/wire"
)

// fakeStore is memstore plus the approvals part of store.Store, folded by
// the plain rules of CONTRACT §10 (first request gives the fields, first
// resolution or run end closes it), so the API can be tested before and
// apart from the real stores. It notifies like a store: every Append with
// new events, and every Decide (cursor unchanged).
type fakeStore struct {
	*memstore.Store
	hub *fanout.Hub

	mu        sync.Mutex
	approvals map[string]*store.Approval
	claims    map[string]int // ClaimNotify calls per approval
	// quietDecide: Decide does not notify (a lost notification).
	quietDecide bool
}

var _ store.Store = (*fakeStore)(nil)

func newFakeStore() *fakeStore {
	return &fakeStore{Store: memstore.New(), hub: fanout.New(), approvals: map[string]*store.Approval{}, claims: map[string]int{}}
}

func (f *fakeStore) Append(ctx context.Context, evs []store.Event) ([]store.AppendResult, error) {
	res, err := f.Store.Append(ctx, evs)
	if err != nil {
		return nil, err
	}
	var notes []store.Notification
	f.mu.Lock()
	for i, ev := range evs {
		if res[i].Duplicate {
			continue
		}
		f.fold(ev)
		notes = append(notes, store.Notification{SessionID: ev.SessionID, Cursor: res[i].Cursor})
	}
	f.mu.Unlock()
	f.hub.Publish(notes...)
	return res, nil
}

func (f *fakeStore) fold(ev store.Event) {
	switch ev.EventType {
	case relaywire.TypeApprovalRequested:
		var req relaywire.ApprovalRequested
		if json.Unmarshal(ev.EventData, &req) != nil || req.ApprovalID == "" || f.approvals[req.ApprovalID] != nil {
			return
		}
		f.approvals[req.ApprovalID] = &store.Approval{ApprovalID: req.ApprovalID, SessionID: ev.SessionID, RunID: req.RunID,
			ToolName: req.ToolName, Title: req.Title, Input: req.Input, Kind: req.Kind, Options: req.Options,
			RequestedAt: ev.Timestamp, State: store.ApprovalPending}
	case relaywire.TypeApprovalResolved:
		var res relaywire.ApprovalResolved
		if json.Unmarshal(ev.EventData, &res) != nil {
			return
		}
		if a := f.approvals[res.ApprovalID]; a != nil && a.State == store.ApprovalPending {
			t := ev.Timestamp
			a.State, a.Decision, a.By, a.Reason, a.ResolvedAt = store.ApprovalResolved, res.Decision, res.By, res.Reason, &t
		}
	case relaywire.TypeRunCompleted, relaywire.TypeRunFailed, relaywire.TypeRunCancelled:
		var run struct {
			RunID string `json:"run_id"`
		}
		if json.Unmarshal(ev.EventData, &run) != nil {
			return
		}
		for _, a := range f.approvals {
			if a.RunID == run.RunID && a.State == store.ApprovalPending {
				t := ev.Timestamp
				a.State, a.By, a.Reason, a.ResolvedAt = store.ApprovalResolved, "cancelled", "the run ended", &t
			}
		}
	}
}

func (f *fakeStore) Subscribe(ctx context.Context) (<-chan store.Notification, error) {
	return f.hub.Subscribe(ctx)
}

func (f *fakeStore) Close() error {
	f.hub.Close()
	return f.Store.Close()
}

func (f *fakeStore) Approvals(_ context.Context, flt store.ApprovalFilter) ([]store.Approval, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []store.Approval
	for _, a := range f.approvals {
		if (flt.State == "" || a.State == flt.State) && (flt.SessionID == "" || a.SessionID == flt.SessionID) {
			out = append(out, copyApproval(a))
		}
	}
	slices.SortFunc(out, func(a, b store.Approval) int { return b.RequestedAt.Compare(a.RequestedAt) })
	limit := flt.Limit
	if limit <= 0 {
		limit = 100
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func copyApproval(a *store.Approval) store.Approval {
	c := *a
	if a.Remote != nil {
		d := *a.Remote
		c.Remote = &d
	}
	return c
}

func (f *fakeStore) Approval(_ context.Context, id string) (store.Approval, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := f.approvals[id]
	if a == nil {
		return store.Approval{}, store.ErrNotFound
	}
	return copyApproval(a), nil
}

func (f *fakeStore) Decide(ctx context.Context, d store.Decision) (store.Approval, error) {
	f.mu.Lock()
	a := f.approvals[d.ApprovalID]
	switch {
	case a == nil:
		f.mu.Unlock()
		return store.Approval{}, store.ErrNotFound
	case a.Remote != nil && a.Remote.DecisionID == d.DecisionID:
		defer f.mu.Unlock()
		return copyApproval(a), nil
	case a.State != store.ApprovalPending || a.Remote != nil:
		defer f.mu.Unlock()
		return copyApproval(a), store.ErrDecided
	}
	d.DecidedAt = time.Now().UTC()
	a.Remote = &d
	out := copyApproval(a)
	quiet := f.quietDecide
	f.mu.Unlock()
	if !quiet {
		sess, _ := f.Store.Session(ctx, out.SessionID)
		f.hub.Publish(store.Notification{SessionID: out.SessionID, Cursor: sess.LastCursor})
	}
	return out, nil
}

func (f *fakeStore) Decisions(_ context.Context, ids []string) ([]store.Decision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []store.Decision
	for _, id := range ids {
		if a := f.approvals[id]; a != nil && a.Remote != nil {
			out = append(out, *a.Remote)
		}
	}
	return out, nil
}

func (f *fakeStore) ClaimNotify(_ context.Context, id string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.claims[id]++
	return f.claims[id] == 1, nil
}
