package host

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/relay"
)

// fwd is a forwarder whose Stop waits until its context ends.
type fwd struct {
	started, stopped atomic.Int32
	onError          func(forwarder.Error)
}

func (f *fwd) Enqueue(forwarder.Event) (forwarder.Accepted, error) { return forwarder.Accepted{}, nil }
func (f *fwd) OnError(h func(forwarder.Error))                     { f.onError = h }
func (f *fwd) Start()                                              { f.started.Add(1) }
func (f *fwd) Stats() forwarder.Stats                              { return forwarder.Stats{Pending: 3} }
func (f *fwd) Stop(ctx context.Context) error {
	f.stopped.Add(1)
	<-ctx.Done()
	return forwarder.ErrUndelivered
}

type closer struct{ closed atomic.Int32 }

func (c *closer) Close() error { c.closed.Add(1); return nil }

// Start starts delivery and the remote waiter once, with the front end's
// error handler; Close stops them once, its drain bounded, and tells every
// caller the same result.
func TestLifecycle(t *testing.T) {
	f := &fwd{}
	remote := &closer{}
	var remotes atomic.Int32
	var h *Host
	h = New(Options{Forwarder: f, DrainTimeout: 50 * time.Millisecond,
		Remote: func(c *relay.Core) io.Closer {
			if c != h.Core() {
				t.Error("the waiter was given another core")
			}
			remotes.Add(1)
			return remote
		}})
	var got forwarder.Error
	h.Start(func(e forwarder.Error) { got = e })
	h.Start(nil)
	if f.started.Load() != 1 || remotes.Load() != 1 || f.onError == nil {
		t.Fatalf("started %d, remotes %d, handler set %v; want once each", f.started.Load(), remotes.Load(), f.onError != nil)
	}
	f.onError(forwarder.Error{Code: forwarder.CodeAuth})
	if got.Code != forwarder.CodeAuth {
		t.Errorf("the front end's handler got %+v", got)
	}
	first := h.Close(relay.StopClosed)
	second := h.Close(relay.StopClosed)
	if !errors.Is(first.Err, forwarder.ErrUndelivered) || first.Stats.Pending != 3 || second != first {
		t.Errorf("Close = %+v then %+v; want the drain's undelivered error and figures, twice", first, second)
	}
	if f.stopped.Load() != 1 || remote.closed.Load() != 1 {
		t.Errorf("forwarder stopped %d times, waiter closed %d; want once each", f.stopped.Load(), remote.closed.Load())
	}
}

// A host never started still closes: its core's runs end and the
// forwarder is stopped.
func TestCloseUnstarted(t *testing.T) {
	f := &fwd{}
	h := New(Options{Forwarder: f, DrainTimeout: time.Millisecond})
	if c := h.Close(relay.StopClosed); f.stopped.Load() != 1 || c.Err == nil {
		t.Errorf("Close = %+v, stopped %d", c, f.stopped.Load())
	}
}

// Start runs the prefetch once without waiting for it; Close cancels it and
// returns only once it has returned, so nothing of the host outlives it.
func TestPrefetchStoppedAtClose(t *testing.T) {
	started, returned := make(chan struct{}), make(chan struct{})
	var runs atomic.Int32
	h := New(Options{Forwarder: &fwd{}, DrainTimeout: time.Millisecond,
		Prefetch: func(ctx context.Context) {
			runs.Add(1)
			close(started)
			<-ctx.Done() // a backend that never answers
			close(returned)
		}})
	h.Start(nil) // returns with the prefetch still waiting
	h.Start(nil)
	<-started
	h.Close(relay.StopClosed)
	select {
	case <-returned:
	default:
		t.Fatal("Close returned before the prefetch did")
	}
	h.StopPrefetch() // idempotent
	if runs.Load() != 1 {
		t.Errorf("prefetch ran %d times; want once", runs.Load())
	}
}

// A prefetch stopped before Start (a front end giving up early) never runs.
func TestPrefetchStoppedBeforeStart(t *testing.T) {
	var runs atomic.Int32
	h := New(Options{Forwarder: &fwd{}, DrainTimeout: time.Millisecond,
		Prefetch: func(context.Context) { runs.Add(1) }})
	h.StopPrefetch()
	h.Start(nil)
	h.Close(relay.StopClosed)
	if runs.Load() != 0 {
		t.Errorf("prefetch ran %d times after StopPrefetch; want never", runs.Load())
	}
}
