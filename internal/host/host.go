// Package host owns a helper's run lifecycle, the same for every front end
// (the extension protocol, `run`, `acp`, `terminal`): the run core over the
// executor and the forwarder, the waiter that brings decisions made in the
// dashboard, a prefetch done in the background (the central policy's
// first fetch), and the end, where runs are stopped and the forwarder drains
// within a bound. A front end opens one (internal/cli builds it from the
// configuration), starts it with the handler that shows delivery errors to
// its user, and closes it once.
package host

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/relay"
)

// Forwarder is the event pipe to the backend (forwarder.Forwarder).
type Forwarder interface {
	relay.Spool
	OnError(func(forwarder.Error))
	Start()
	Stats() forwarder.Stats
	Stop(ctx context.Context) error
}

// Options configure a Host.
type Options struct {
	Forwarder Forwarder // opened, not started
	// Core configures the run core; its Spool is Forwarder.
	Core relay.Options
	// Remote, when set, starts what answers the core's approvals from
	// elsewhere (internal/remote's waiter for dashboard decisions); Start
	// starts it and Close closes it.
	Remote func(*relay.Core) io.Closer
	// Prefetch, when set, is work Start runs once in its own goroutine so
	// that the front end's start does not wait for it (the central
	// policy's first fetch). Its context ends at Close, which waits for it.
	Prefetch     func(context.Context)
	DrainTimeout time.Duration // the forwarder's drain at Close (10s)
}

// Host is one helper's runs and their events, from Start to Close.
type Host struct {
	opts Options
	core *relay.Core

	startOnce sync.Once
	remote    io.Closer

	// The prefetch's owner: cancel ends it, done closes when it returns.
	prefetchMu     sync.Mutex
	cancelPrefetch context.CancelFunc
	prefetchDone   chan struct{}

	closeOnce sync.Once
	closed    Closed
}

// Closed is how Close left the events: Err is the drain's (nil when every
// event reached the backend; it wraps forwarder.ErrUndelivered when some
// wait in the spool for the next start).
type Closed struct {
	Err   error
	Stats forwarder.Stats
}

// New returns a Host; nothing runs until Start.
func New(opts Options) *Host {
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 10 * time.Second
	}
	if opts.Core.Logger == nil {
		opts.Core.Logger = slog.New(slog.DiscardHandler)
	}
	opts.Core.Spool = opts.Forwarder
	return &Host{opts: opts, core: relay.New(opts.Core)}
}

// Core is the run core every run of this host goes through.
func (h *Host) Core() *relay.Core { return h.core }

// Events is where events go to the backend, for a front end that writes
// them itself (the terminal runner).
func (h *Host) Events() relay.Spool { return h.opts.Forwarder }

// Stats are the forwarder's figures now.
func (h *Host) Stats() forwarder.Stats { return h.opts.Forwarder.Stats() }

// Start starts delivery, with onError told of every delivery problem
// (what the spool held at start among them), and the remote waiter. Only
// the first call counts.
func (h *Host) Start(onError func(forwarder.Error)) {
	h.startOnce.Do(func() {
		if onError != nil {
			h.opts.Forwarder.OnError(onError)
		}
		h.opts.Forwarder.Start()
		if h.opts.Remote != nil {
			h.remote = h.opts.Remote(h.core)
		}
		h.startPrefetch()
	})
}

func (h *Host) startPrefetch() {
	if h.opts.Prefetch == nil {
		return
	}
	h.prefetchMu.Lock()
	defer h.prefetchMu.Unlock()
	if h.prefetchDone != nil {
		return // stopped before it started: never start it
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	h.cancelPrefetch, h.prefetchDone = cancel, done
	go func() {
		defer close(done)
		h.opts.Prefetch(ctx)
	}()
}

// StopPrefetch cancels the prefetch and waits for it to return; Close
// calls it first, and a front end that gives up without closing (a second
// signal) calls it so that nothing of the host outlives it. Idempotent.
func (h *Host) StopPrefetch() {
	h.prefetchMu.Lock()
	if h.prefetchDone == nil {
		// Never started: mark it stopped so that a late Start does not start it.
		h.prefetchDone = make(chan struct{})
		close(h.prefetchDone)
	}
	cancel, done := h.cancelPrefetch, h.prefetchDone
	h.prefetchMu.Unlock()
	if cancel != nil {
		cancel()
	}
	<-done
}

// Close stops the prefetch, stops every run with stop (each posts its
// ending), closes the remote waiter and drains the forwarder for up to DrainTimeout. Later
// calls return the first one's result.
func (h *Host) Close(stop relay.Stop) Closed {
	h.closeOnce.Do(func() {
		// First, so that a backend that does not answer delays no one.
		h.StopPrefetch()
		h.core.CloseFor(stop)
		if h.remote != nil {
			h.remote.Close() //nolint:errcheck // nothing pending is left to answer
		}
		ctx, cancel := context.WithTimeout(context.Background(), h.opts.DrainTimeout)
		defer cancel()
		err := h.opts.Forwarder.Stop(ctx)
		h.closed = Closed{Err: err, Stats: h.opts.Forwarder.Stats()}
	})
	return h.closed
}
