package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/proc"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// DeadRunSpool is the spool EndDeadRuns posts through (forwarder.Forwarder).
type DeadRunSpool interface {
	Spool
	// Numbered reports whether this process holds the spool of sessionID
	// and that spool numbered interactionID's events: only then does an
	// event enqueued now continue the interaction's seq.
	Numbered(sessionID, interactionID string) bool
}

// EndDeadRuns tells the backend about runs whose helper died while they were
// live (SIGKILL, a crash, a power cut), which would otherwise stay "running"
// for ever: for each such run in reg whose events are in a spool this
// process holds, it stops what is left of the run and spools
// relay.run_failed with reason wire.ReasonHelperExited, after the run's
// other events in the same interaction (its seq continues theirs).
//
// Each run is claimed in reg before its event is spooled, and the claim is
// finished right after, so the event is spooled once however many helpers
// start at once. A run whose spool another live process holds is left to
// that process's next start; a process killed between spooling the event
// and finishing the claim (a window of one write) makes the next start post
// it again, which changes nothing the backend derives. gap is the pause
// between the signals that stop a run (executor.Options.SignalGap). It
// returns how many runs it ended.
func EndDeadRuns(ctx context.Context, reg proc.Registry, spool DeadRunSpool, gap time.Duration) (int, error) {
	claims, err := reg.ClaimDead(ctx, gap, func(rec proc.Record) bool {
		return spool.Numbered(rec.Spool.SessionID, rec.Spool.InteractionID)
	})
	errs := []error{err}
	n := 0
	for _, c := range claims {
		if err := postDeadRun(spool, c); err != nil {
			// The claim stays this process's: the next start after it
			// exits takes it over and tries again.
			errs = append(errs, fmt.Errorf("post the end of run %q of a dead helper in session %q: %w", c.RunID, c.Spool.SessionID, err))
			continue
		}
		n++
		if err := c.Done(); err != nil {
			errs = append(errs, err)
		}
	}
	return n, errors.Join(errs...)
}

// postDeadRun spools relay.run_failed for a claimed run.
func postDeadRun(spool Spool, c *proc.Claim) error {
	msg := deadRunMessage(c.Helper.PID, c.StoppedAt)
	var dur int64
	if !c.Started.IsZero() {
		dur = max(c.StoppedAt.Sub(c.Started).Milliseconds(), 0)
	}
	status := wire.StatusFailed
	data, err := json.Marshal(wire.RunEnded{RunID: c.RunID, Status: status, Reason: wire.ReasonHelperExited,
		Result: wire.Result{Stderr: msg, ExitCode: 1, DurationMS: dur}})
	if err != nil {
		return err
	}
	_, err = spool.Enqueue(forwarder.Event{SessionID: c.Spool.SessionID, InteractionID: c.Spool.InteractionID,
		Type: wire.EndType(status), Data: data, Source: wire.SourceRelay})
	return err
}

// deadRunMessage is what a run ended for its dead helper says happened: the
// helper's pid and when its processes were stopped (UTC, to the minute).
func deadRunMessage(helperPID int, stopped time.Time) string {
	return fmt.Sprintf("the helper (pid %d) exited while this run was live; its processes were stopped at %s. "+
		"Resume the conversation to go on.", helperPID, stopped.UTC().Format("15:04 UTC"))
}
