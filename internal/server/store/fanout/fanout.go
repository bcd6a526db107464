// Package fanout delivers store notifications to subscribers without ever
// blocking the publisher: each subscriber has a pending set that keeps only
// the latest cursor per session (coalescing), and a goroutine of its own
// that hands the set to the subscriber's channel at the subscriber's pace.
//
// It implements store.Store's Subscribe for every store: sqlite, postgres and
// the backend's in-memory test store (internal/server/backend/memstore), which is
// why it lives outside internal/server/store/internal.
package fanout

import (
	"context"
	"sync"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

// Hub fans notifications out to subscribers. The zero value is not usable;
// call New. Close stops every subscriber goroutine and waits for them.
type Hub struct {
	mu     sync.Mutex
	subs   map[*subscriber]struct{}
	closed bool
	done   chan struct{} // closed by Close
	wg     sync.WaitGroup
}

// New returns an empty hub.
func New() *Hub {
	return &Hub{subs: map[*subscriber]struct{}{}, done: make(chan struct{})}
}

type subscriber struct {
	mu      sync.Mutex
	pending map[string]int64 // session → latest cursor not yet delivered
	order   []string         // sessions of pending, in first-notified order
	wake    chan struct{}    // capacity 1: "pending is not empty"
	out     chan store.Notification
}

// Subscribe registers a subscriber until ctx ends or the hub closes; the
// returned channel is closed then.
func (h *Hub) Subscribe(ctx context.Context) (<-chan store.Notification, error) {
	s := &subscriber{
		pending: map[string]int64{},
		wake:    make(chan struct{}, 1),
		out:     make(chan store.Notification),
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, store.ErrClosed
	}
	h.subs[s] = struct{}{}
	h.wg.Add(1)
	go h.deliver(ctx, s)
	return s.out, nil
}

// Publish queues n for every subscriber; it never blocks on one.
func (h *Hub) Publish(ns ...store.Notification) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		s.add(ns)
	}
}

// Close closes every subscriber's channel and waits for their goroutines.
// It is idempotent.
func (h *Hub) Close() {
	h.mu.Lock()
	if !h.closed {
		h.closed = true
		close(h.done)
	}
	h.mu.Unlock()
	h.wg.Wait()
}

func (s *subscriber) add(ns []store.Notification) {
	s.mu.Lock()
	for _, n := range ns {
		cur, ok := s.pending[n.SessionID]
		if !ok {
			s.order = append(s.order, n.SessionID)
		}
		if !ok || n.Cursor > cur {
			s.pending[n.SessionID] = n.Cursor
		}
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default: // already signalled
	}
}

// take empties the pending set.
func (s *subscriber) take() []store.Notification {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]store.Notification, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, store.Notification{SessionID: id, Cursor: s.pending[id]})
	}
	clear(s.pending)
	s.order = s.order[:0]
	return out
}

func (h *Hub) deliver(ctx context.Context, s *subscriber) {
	defer h.wg.Done()
	defer func() {
		h.mu.Lock()
		delete(h.subs, s)
		h.mu.Unlock()
		close(s.out)
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.done:
			return
		case <-s.wake:
		}
		for _, n := range s.take() {
			select {
			case s.out <- n:
			case <-ctx.Done():
				return
			case <-h.done:
				return
			}
		}
	}
}
