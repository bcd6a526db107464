package storetest

import (
	"testing"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

// Shared is how RunShared opens two Stores on one database, as two
// processes would.
type Shared struct {
	// Open returns two new Stores on one new, empty database.
	Open func(t *testing.T) (a, b store.Store)
	// Notifies: a Subscribe on one Store sees the other's Appends and
	// Decides (PostgreSQL's NOTIFY; SQLite's Subscribe is in-process).
	Notifies bool
}

// RunShared runs the tests that need two Stores on one database: Decide
// and ClaimNotify racing across them (one winner), and, when they share
// notifications, a decision through one waking the other's subscribers.
func RunShared(t *testing.T, sh Shared) {
	t.Run("DecideRace", func(t *testing.T) {
		a, b := sh.Open(t)
		mustAppend(t, a, approvalScript("xrace")...)
		DecideRace(t, []store.Store{a, b}, "xrace-d", 8)
	})
	t.Run("ClaimNotifyRace", func(t *testing.T) {
		a, b := sh.Open(t)
		mustAppend(t, b, approvalScript("xclaim")...)
		ClaimRace(t, []store.Store{a, b}, "xclaim-d", 8)
	})
	t.Run("DecideWakesOtherStore", func(t *testing.T) {
		if !sh.Notifies {
			t.Skip("this store's Subscribe sees its own process only")
		}
		a, b := sh.Open(t)
		mustAppend(t, a, approvalScript("xwake")...)
		DecideWakes(t, a, b, "xwake", "xwake-d")
	})
	t.Run("AppendAfterDecide", func(t *testing.T) {
		// The helper's answer, through the other Store, keeps the decision.
		a, b := sh.Open(t)
		mustAppend(t, a, approvalScript("xafter")...)
		DecideRace(t, []store.Store{a}, "xafter-d", 1)
		mustAppend(t, b, approvalResolved("xafter", "i2", 9, 0, "r2", "xafter-d", "allow", "dashboard"))
		if got := mustApproval(t, a, "xafter-d"); got.State != store.ApprovalResolved || got.Remote == nil {
			t.Errorf("after the helper's answer: %+v; want resolved with the remote decision", got)
		}
	})
}
