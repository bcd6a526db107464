package sqlite_test

import (
	"testing"

	"github.com/claude-relay/claude-relay/internal/server/store/storetest"
)

// TestTitleBackfill opens a database that a release before migration 4
// filled (titles by the old rule, summaries of prompts with content
// blocks): the migration derives every session's title again.
func TestTitleBackfill(t *testing.T) {
	events := storetest.TitleFixture()
	s := openOld(t, 3, append(storetest.V1Inserts(events, ph), storetest.TitleUpdates(events, ph)...))
	storetest.CheckTitleBackfill(t, s, events)
}

// TestStatusBackfill opens a database that a release before migration 5
// filled (an ACP session closed while idle listed as cancelled): the
// migration derives every session's status again.
func TestStatusBackfill(t *testing.T) {
	events := storetest.StatusFixture()
	s := openOld(t, 4, append(storetest.V1Inserts(events, ph), storetest.OldStatusUpdates(events, ph)...))
	storetest.CheckStatusBackfill(t, s, events)
}

// TestBilledBackfill opens a database that a release before migration 7
// filled: the migration derives where each session is billed from its
// stored events.
func TestBilledBackfill(t *testing.T) {
	events := storetest.BilledFixture()
	s := openOld(t, 6, append(storetest.V1Inserts(events, ph), storetest.ListUpdates(events, ph)...))
	storetest.CheckBilledBackfill(t, s, events)
}
