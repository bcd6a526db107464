package postgres_test

import (
	"testing"

	"github.com/claude-relay/claude-relay/internal/server/store/storetest"
)

// TestEventIDMigration opens a database that a release before migration 3
// (event_id unique across sessions) filled: every event stays, and
// event_id is unique per session from then on.
func TestEventIDMigration(t *testing.T) {
	events := storetest.BackfillFixture()
	s := openOld(t, 2, storetest.V1Inserts(events, ph))
	storetest.CheckEventIDMigration(t, s, events)
}
