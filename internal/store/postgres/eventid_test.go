package postgres_test

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/claude-relay/claude-relay/internal/store/postgres"
	"github.com/claude-relay/claude-relay/internal/store/storetest"
)

// TestEventIDMigration opens a database that a release before migration 3
// (event_id unique across sessions) filled: every event stays, and
// event_id is unique per session from then on.
func TestEventIDMigration(t *testing.T) {
	ctx := context.Background()
	url := pg.Database(t)
	events := storetest.BackfillFixture()
	ph := func(n int) string { return "$" + strconv.Itoa(n) }
	if err := postgres.CreateOld(ctx, url, 2, storetest.V1Inserts(events, ph)); err != nil {
		t.Fatalf("create a v2 database: %v", err)
	}
	s := open(t, url)
	if v, err := s.SchemaVersions(ctx); err != nil || !slices.Equal(v, []int{1, 2, 3, 4, 5}) {
		t.Fatalf("schema_migrations = %v, %v; want [1 2 3 4 5]", v, err)
	}
	storetest.CheckEventIDMigration(t, s, events)
}
