package backend

import (
	"context"
	"sync"

	"github.com/claude-relay/claude-relay/internal/server/backend/memstore"
	"github.com/claude-relay/claude-relay/internal/server/store"
)

// fakeStore is memstore (which folds approvals with the store package's
// rules, as the SQL stores do) that also counts ClaimNotify calls per
// approval, for the tests of who pushes.
type fakeStore struct {
	*memstore.Store

	mu     sync.Mutex
	claims map[string]int // ClaimNotify calls per approval
}

var _ store.Store = (*fakeStore)(nil)

func newFakeStore() *fakeStore {
	return &fakeStore{Store: memstore.New(), claims: map[string]int{}}
}

func (f *fakeStore) ClaimNotify(ctx context.Context, id string) (bool, error) {
	f.mu.Lock()
	f.claims[id]++
	f.mu.Unlock()
	return f.Store.ClaimNotify(ctx, id)
}
