package sqlite_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/claude-relay/claude-relay/internal/store/sqlite"
	"github.com/claude-relay/claude-relay/internal/store/storetest"
)

// TestTitleBackfill opens a database that a release before migration 4
// filled (titles by the old rule, summaries of prompts with content
// blocks): the migration derives every session's title again.
func TestTitleBackfill(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v3.db")
	events := storetest.TitleFixture()
	ph := func(int) string { return "?" }
	old := append(storetest.V1Inserts(events, ph), storetest.TitleUpdates(events, ph)...)
	if err := sqlite.CreateOld(ctx, path, 3, old); err != nil {
		t.Fatalf("create a v3 database: %v", err)
	}
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open a v3 database: %v", err)
	}
	defer s.Close()
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
	events := storetest.StatusFixture()
	ph := func(int) string { return "?" }
	old := append(storetest.V1Inserts(events, ph), storetest.OldStatusUpdates(events, ph)...)
	path := filepath.Join(t.TempDir(), "v4.db")
	if err := sqlite.CreateOld(ctx, path, 4, old); err != nil {
		t.Fatalf("create a v4 database: %v", err)
	}
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open a v4 database: %v", err)
	}
	defer s.Close()
	if v, err := s.SchemaVersions(ctx); err != nil || !slices.Equal(v, []int{1, 2, 3, 4, 5}) {
		t.Fatalf("schema_migrations = %v, %v; want [1 2 3 4 5]", v, err)
	}
	storetest.CheckStatusBackfill(t, s, events)
}
