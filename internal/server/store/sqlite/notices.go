package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

// ClaimNotice implements store.Store: the INSERT that finds the key taken
// inserts nothing, so exactly one caller in any process wins.
func (s *Store) ClaimNotice(ctx context.Context, key string) (bool, error) {
	if s.closed.Load() {
		return false, store.ErrClosed
	}
	res, err := s.w.ExecContext(ctx, `INSERT INTO notices (key, claimed_at) VALUES (?, ?) ON CONFLICT (key) DO NOTHING`,
		key, time.Now().UnixNano())
	if err != nil {
		return false, fmt.Errorf("sqlite: claim notice %q: %w", key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("sqlite: claim notice %q: %w", key, err)
	}
	return n == 1, nil
}
