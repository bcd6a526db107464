package memstore_test

import (
	"testing"

	"github.com/claude-relay/claude-relay/internal/backend/memstore"
	"github.com/claude-relay/claude-relay/internal/store"
	"github.com/claude-relay/claude-relay/internal/store/storetest"
)

// The fake passes the suite every real Store passes.
func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s := memstore.New()
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
