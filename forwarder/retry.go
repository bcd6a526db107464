package forwarder

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/claude-relay/claude-relay/internal/backoff"
)

// isolateAfter is how many 5xx in a row (503 aside) a batch gets before its
// events go alone, where one that the backend cannot store is found.
const isolateAfter = 3

// checkRetry retries transport errors, 408, 425, 429 and 5xx; never after
// the context ends.
func checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if err != nil {
		return true, nil
	}
	return retryable(resp.StatusCode), nil
}

// A poison event, one the backend refuses with a 5xx however often it is
// sent while it stores other events, would hold its session's later events
// back for ever. It is dead-lettered (reported, kept whole in dead/, sent
// again by `spool flush --dead-letters`) when both of these hold:
//
//   - it was refused with a 5xx other than 503 Options.PoisonAfter times
//     in a row (20 by default: several minutes at the capped backoff); an
//     attempt that fails otherwise (a transport error, 408, 429, 503)
//     starts the count again;
//   - between its previous failed attempt and the last one, the backend
//     stored another event: a request of another session of this process
//     was answered "stored" in that window. The backend stored something,
//     and then refused this event again. (The session's own next event is
//     never posted as a check: the backend could store it before the one
//     refused, and a session's events are stored in order or not at all.)
//
// A backend that is down for everyone (connection refused, 503, a proxy's
// 502, 500 for every event while its database is away) stores nothing, so
// the second condition never holds: every event stays queued and is
// retried for ever, and an outage dead-letters nothing. A poison event
// while no other session of this process delivers waits, retried, until
// one does.

// try is one request's delivery state across its attempts, carried in its
// context, so that CheckRetry can count refusals.
type try struct {
	spool *sessionSpool
	batch bool // a batch: its events go alone after isolateAfter refusals

	refused  int           // refusals in a row: 5xx other than 503
	last     time.Duration // when the latest failed attempt failed (since the epoch)
	evidence bool          // the backend stored something between the previous failure and the latest
	poison   bool          // CheckRetry gave the event up as poison
}

type tryKey struct{}

// since is the time since the forwarder's epoch, on the monotonic clock.
func (f *Forwarder) since() time.Duration { return time.Since(f.epoch) }

// noteStored records that the backend just answered "stored": evidence,
// for events it refuses afterwards, that it stores events.
func (f *Forwarder) noteStored() {
	now := int64(f.since())
	for {
		cur := f.storedAt.Load()
		if now <= cur || f.storedAt.CompareAndSwap(cur, now) {
			return
		}
	}
}

// giveUp counts a retryable failure of t's request and says whether to
// stop retrying it: a batch refused isolateAfter times in a row, or an
// event found to be poison.
func (f *Forwarder) giveUp(t *try, resp *http.Response) bool {
	now := f.since()
	defer func() { t.last = now }()
	if resp == nil || resp.StatusCode < 500 || resp.StatusCode == http.StatusServiceUnavailable {
		t.refused = 0 // not a refusal of this request's content
		return false
	}
	t.refused++
	// Did the backend store anything since this request last failed
	// (while this attempt was in flight too)? Then this refusal is about
	// this request.
	t.evidence = f.storedAt.Load() > int64(t.last)
	if t.batch {
		return t.refused >= isolateAfter
	}
	if f.opts.PoisonAfter < 0 || t.refused < f.opts.PoisonAfter {
		return false
	}
	if t.evidence {
		t.poison = true
		return true
	}
	return false
}

// noteTransient keeps a retried failure as the last error (for `spool
// status` and `status`), writing the session's file only when it changes.
func (f *Forwarder) noteTransient(t *try, resp *http.Response, err error) {
	msg := "backend unreachable"
	switch {
	case err != nil:
		msg += ": " + transportErrorText(err)
	case resp != nil:
		msg = fmt.Sprintf("backend answered HTTP %d; retrying", resp.StatusCode)
	}
	f.setLastError(msg)
	if t == nil || t.spool == nil {
		return
	}
	s := t.spool
	if prev := s.lastNote.Swap(&msg); prev == nil || *prev != msg {
		noteError(s.dir, "delivery: "+msg)
		s.lastErrorWritten.Store(true)
	}
}

// jitterBackoff is full jitter over a capped exponential, unless the server
// said Retry-After, which is honoured up to max.
func jitterBackoff(lo, hi time.Duration, attempt int, resp *http.Response) time.Duration {
	return backoff.Delay(lo, hi, hi, attempt, resp, time.Now())
}
