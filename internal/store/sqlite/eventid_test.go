package sqlite_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/claude-relay/claude-relay/internal/store/sqlite"
	"github.com/claude-relay/claude-relay/internal/store/storetest"
)

// TestEventIDMigration opens a database that a release before migration 3
// (event_id unique across sessions) filled: the rebuilt events table keeps
// every event, and event_id is unique per session from then on.
func TestEventIDMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v2.db")
	events := storetest.BackfillFixture()
	if err := sqlite.CreateOld(ctx, path, 2, storetest.V1Inserts(events, func(int) string { return "?" })); err != nil {
		t.Fatalf("create a v2 database: %v", err)
	}
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open a v2 database: %v", err)
	}
	defer s.Close()
	if v, err := s.SchemaVersions(ctx); err != nil || !slices.Equal(v, []int{1, 2, 3, 4, 5}) {
		t.Fatalf("schema_migrations = %v, %v; want [1 2 3 4 5]", v, err)
	}
	storetest.CheckEventIDMigration(t, s, events)
}
