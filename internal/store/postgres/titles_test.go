package postgres_test

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/claude-relay/claude-relay/internal/store/postgres"
	"github.com/claude-relay/claude-relay/internal/store/storetest"
)

// TestTitleBackfill opens a database that a release before migration 4
// filled (titles by the old rule, summaries of prompts with content
// blocks): the migration derives every session's title again.
func TestTitleBackfill(t *testing.T) {
	ctx := context.Background()
	url := pg.Database(t)
	events := storetest.TitleFixture()
	ph := func(n int) string { return "$" + strconv.Itoa(n) }
	old := append(storetest.V1Inserts(events, ph), storetest.TitleUpdates(events, ph)...)
	if err := postgres.CreateOld(ctx, url, 3, old); err != nil {
		t.Fatalf("create a v3 database: %v", err)
	}
	s := open(t, url)
	if v, err := s.SchemaVersions(ctx); err != nil || !slices.Equal(v, []int{1, 2, 3, 4, 5}) {
		t.Fatalf("schema_migrations = %v, %v; want [1 2 3 4 5]", v, err)
	}
	storetest.CheckTitleBackfill(t, s, events)
}

// TestStatusBackfill opens a database that a release before migration 5
// filled (an ACP session closed while idle listed as cancelled): the
// migration derives every session's status again.
func TestStatusBackfill(t *testing.T) {
	ctx := context.Background()
	url := pg.Database(t)
	events := storetest.StatusFixture()
	ph := func(n int) string { return "$" + strconv.Itoa(n) }
	old := append(storetest.V1Inserts(events, ph), storetest.OldStatusUpdates(events, ph)...)
	if err := postgres.CreateOld(ctx, url, 4, old); err != nil {
		t.Fatalf("create a v4 database: %v", err)
	}
	s := open(t, url)
	if v, err := s.SchemaVersions(ctx); err != nil || !slices.Equal(v, []int{1, 2, 3, 4, 5}) {
		t.Fatalf("schema_migrations = %v, %v; want [1 2 3 4 5]", v, err)
	}
	storetest.CheckStatusBackfill(t, s, events)
}
