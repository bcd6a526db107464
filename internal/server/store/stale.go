package store

import "time"

// StaleAfter is how long a running session may go without an event before
// it is listed as stale, "no news since" its last event. Nothing of a live
// run is silent that long: a live run waiting for its next message ends
// after its idle_timeout (30 minutes by default), the watchdog stops a turn
// whose CLI is silent for claude.stall_timeout (5 minutes), an approval is
// denied after approvals.timeout (10 minutes), and the CLI gives a Bash
// command 10 minutes at most. So a session silent for longer lost its
// helper without a word: killed, crashed, or its machine went down. The
// next helper start on that data dir ends such a run as failed
// (helper_exited); until then, stale says what is known. A run given a
// longer idle_timeout is listed stale while it waits, which is also true.
const StaleAfter = 35 * time.Minute

// StatusStale is the list filter for running sessions with no event for
// StaleAfter (ListOptions.Status). It is never a session's Status: the
// session stays running, and Session.Stale marks it.
const StatusStale = "stale"

// StaleBefore is the list's cutoff: a running session last updated before
// it is stale. Now defaults to the time of the call.
func (o ListOptions) StaleBefore() time.Time {
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	return now.Add(-StaleAfter)
}

// ListStatus is the status a session is listed and filtered under at now:
// StatusStale for a running session without an event for StaleAfter, else
// its Status.
func ListStatus(s Session, now time.Time) string {
	if s.Status == StatusRunning && s.UpdatedAt.Before(now.Add(-StaleAfter)) {
		return StatusStale
	}
	return s.Status
}

// MarkStale sets Stale on the sessions that are stale at now.
func MarkStale(now time.Time, sessions ...*Session) {
	for _, s := range sessions {
		s.Stale = ListStatus(*s, now) == StatusStale
	}
}
