package backend

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

// hub fans the store's notifications out to SSE streams. It holds one
// store subscription, started with the first stream and stopped by the
// server's Shutdown, and never blocks on a slow stream: a stream only gets a
// coalesced wake-up and reads the events itself.
type hub struct {
	ctx   context.Context // the server's: ends the subscription
	store store.Store
	log   *slog.Logger

	mu        sync.Mutex
	bySession map[string]map[*subscriber]struct{}
	all       map[*subscriber]struct{} // session-list streams
	started   bool
	stopped   bool
	wg        sync.WaitGroup // the run goroutine and every open subscriber
}

// subscriber is one stream's mailbox.
type subscriber struct {
	session string        // "" for the session-list stream
	wake    chan struct{} // capacity 1: wake-ups coalesce

	mu     sync.Mutex
	dirty  map[string]struct{} // session-list streams: sessions changed since take
	resync bool                // notifications may have been lost: resend everything
}

func newHub(ctx context.Context, st store.Store, log *slog.Logger) *hub {
	return &hub{
		ctx: ctx, store: st, log: log,
		bySession: make(map[string]map[*subscriber]struct{}),
		all:       make(map[*subscriber]struct{}),
	}
}

// subscribe registers a stream for one session, or for every session when
// session is "". It returns nil once the hub is stopping. The caller must
// unsubscribe.
func (h *hub) subscribe(session string) *subscriber {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped || h.ctx.Err() != nil {
		return nil
	}
	sub := &subscriber{session: session, wake: make(chan struct{}, 1)}
	if session == "" {
		sub.dirty = make(map[string]struct{})
		h.all[sub] = struct{}{}
	} else {
		m := h.bySession[session]
		if m == nil {
			m = make(map[*subscriber]struct{})
			h.bySession[session] = m
		}
		m[sub] = struct{}{}
	}
	h.wg.Add(1)
	if !h.started {
		h.started = true
		h.wg.Add(1)
		go h.run()
	}
	return sub
}

func (h *hub) unsubscribe(sub *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if sub.session == "" {
		delete(h.all, sub)
	} else if m := h.bySession[sub.session]; m != nil {
		delete(m, sub)
		if len(m) == 0 {
			delete(h.bySession, sub.session)
		}
	}
	h.wg.Done()
}

// wait blocks until the subscription goroutine and every stream have
// finished; the server's context must be cancelled first.
func (h *hub) wait() {
	h.mu.Lock()
	h.stopped = true
	h.mu.Unlock()
	h.wg.Wait()
}

// run keeps one store subscription open until the server stops,
// resubscribing with backoff when it fails or ends.
func (h *hub) run() {
	defer h.wg.Done()
	const minBackoff, maxBackoff = 100 * time.Millisecond, 10 * time.Second
	backoff := minBackoff
	for {
		ch, err := h.store.Subscribe(h.ctx)
		if err == nil {
			// Whatever happened before this subscription was not
			// notified: let every stream re-read.
			h.wakeAll()
			for n := range ch {
				backoff = minBackoff
				h.dispatch(n)
			}
		}
		if h.ctx.Err() != nil {
			return
		}
		h.log.Warn("backend: store subscription lost; live views poll until it is back", "err", err, "retry_in", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-h.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

func (h *hub) dispatch(n store.Notification) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for sub := range h.bySession[n.SessionID] {
		sub.signal()
	}
	for sub := range h.all {
		sub.mu.Lock()
		sub.dirty[n.SessionID] = struct{}{}
		sub.mu.Unlock()
		sub.signal()
	}
}

func (h *hub) wakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.bySession {
		for sub := range m {
			sub.signal()
		}
	}
	for sub := range h.all {
		sub.mu.Lock()
		sub.resync = true
		sub.mu.Unlock()
		sub.signal()
	}
}

func (sub *subscriber) signal() {
	select {
	case sub.wake <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// take returns the sessions changed since the last take, or resync when
// the stream should resend everything.
func (sub *subscriber) take() (ids []string, resync bool) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	resync, sub.resync = sub.resync, false
	for id := range sub.dirty {
		ids = append(ids, id)
	}
	clear(sub.dirty)
	return ids, resync
}
