package memstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/claude-relay/claude-relay/internal/server/backend/memstore"
	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/server/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The fake passes the suite every real Store passes.
func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s := memstore.New()
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// One Append notifies each changed session once, with its latest cursor, in
// the order the sessions first changed: the SQL stores' order, which the
// shared fan-out keeps.
func TestSubscribeOrder(t *testing.T) {
	s := memstore.New()
	defer s.Close()
	ch, err := s.Subscribe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var evs []store.Event
	var want []store.Notification
	for i := range 20 {
		id := fmt.Sprintf("s%02d", i)
		for j := range 2 {
			evs = append(evs, store.Event{EventID: fmt.Sprintf("%s-%d", id, j), SessionID: id, EventData: json.RawMessage(`{}`)})
		}
		want = append(want, store.Notification{SessionID: id, Cursor: 2})
	}
	if _, err := s.Append(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		select {
		case got := <-ch:
			if got != w {
				t.Fatalf("notification %d = %+v, want %+v", i, got, w)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("notification %d (%+v) never came", i, w)
		}
	}
}

// Close ends every subscription before it returns, and Subscribe after Close
// fails with store.ErrClosed.
func TestCloseEndsSubscriptions(t *testing.T) {
	s := memstore.New()
	ch, err := s.Subscribe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("a notification after Close, want the channel closed")
		}
	default:
		t.Fatal("the subscription is still open after Close returned")
	}
	if _, err := s.Subscribe(context.Background()); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Subscribe after Close: %v, want store.ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
