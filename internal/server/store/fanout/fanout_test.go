package fanout

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func recv(t *testing.T, ch <-chan store.Notification) store.Notification {
	t.Helper()
	select {
	case n, ok := <-ch:
		if !ok {
			t.Fatal("channel closed")
		}
		return n
	case <-time.After(5 * time.Second):
		t.Fatal("no notification")
	}
	return store.Notification{}
}

func TestCoalesces(t *testing.T) {
	h := New()
	defer h.Close()
	ch, err := h.Subscribe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Nothing is read while publishing: the subscriber's goroutine holds at
	// most one snapshot of the pending set in hand, and everything after it
	// coalesces into one notification per session, in first-notified order.
	for i := int64(1); i <= 100; i++ {
		h.Publish(store.Notification{SessionID: "a", Cursor: i}, store.Notification{SessionID: "b", Cursor: i})
	}
	h.Publish(store.Notification{SessionID: "a", Cursor: 50}) // older: ignored
	var got []store.Notification
	for len(got) == 0 || got[len(got)-1] != (store.Notification{SessionID: "b", Cursor: 100}) {
		got = append(got, recv(t, ch))
	}
	if len(got) > 4 {
		t.Errorf("%d notifications for 2 sessions, want at most 4: %v", len(got), got)
	}
	var lastA int64
	for _, n := range got {
		if n.SessionID == "a" {
			lastA = n.Cursor
		}
	}
	if lastA != 100 {
		t.Errorf("latest cursor of a = %d, want 100 (%v)", lastA, got)
	}
}

func TestPublishNeverBlocks(t *testing.T) {
	h := New()
	defer h.Close()
	if _, err := h.Subscribe(context.Background()); err != nil { // never read
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		for i := range int64(10000) {
			h.Publish(store.Notification{SessionID: "s", Cursor: i})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Publish blocked on a subscriber that does not read")
	}
}

func TestEnds(t *testing.T) {
	h := New()
	ctx, cancel := context.WithCancel(context.Background())
	byCtx, err := h.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byClose, err := h.Subscribe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h.Publish(store.Notification{SessionID: "s", Cursor: 1}) // pending, unread
	cancel()
	for range byCtx { // drains, then closed
	}
	h.Close()
	h.Close()
	for range byClose {
	}
	if _, err := h.Subscribe(context.Background()); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Subscribe after Close = %v, want ErrClosed", err)
	}
	h.Publish(store.Notification{SessionID: "s", Cursor: 2}) // no subscribers: fine
}
