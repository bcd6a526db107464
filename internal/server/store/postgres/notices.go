package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

// ClaimNotice implements store.Store: the INSERT that finds the key taken
// inserts nothing, so exactly one caller on any replica wins.
func (s *Store) ClaimNotice(ctx context.Context, key string) (bool, error) {
	if s.closed.Load() {
		return false, store.ErrClosed
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO notices (key, claimed_at) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING`,
		key, time.Now().UnixNano())
	if err != nil {
		return false, fmt.Errorf("postgres: claim notice %q: %w", key, err)
	}
	return tag.RowsAffected() == 1, nil
}
