package proc

import (
	"context"
	"errors"
	"slices"
	"syscall"
	"time"
)

var errNotSignallable = errors.New("proc: refusing to signal our own process or group")

// Tree describes everything one run started. Zero fields are left out: a zero
// Root, PGID 0 or an empty RunID.
type Tree struct {
	// Root is the CLI process.
	Root Proc
	// PGID is the CLI's process group. It must be a group the caller owns,
	// typically the pid of an unreaped child started with SysProcAttr: every
	// process in it is treated as part of the run.
	PGID int
	// RunID selects the processes carrying MarkerEnvEntry(RunID).
	RunID string
	// Token, if set, narrows RunID to the processes that also carry
	// TokenEnvEntry(Token): this start of the run, not another helper's run
	// under the same ID.
	Token string
}

// Members returns the live processes of the tree, sorted by pid: the root,
// every process in the group, the root's descendants and every marked
// process. The calling process is never a member.
func (t Tree) Members() []Proc { return members(t) }

// Signal sends sig to every member whose start time still matches, and to
// the process group. It returns how many members were signalled.
func (t Tree) Signal(sig syscall.Signal) int {
	return len(t.signal(t.Members(), sig))
}

func (t Tree) signal(ms []Proc, sig syscall.Signal) []Proc {
	var done []Proc
	for _, p := range ms {
		if signalProc(p, sig) == nil {
			done = append(done, p)
		}
	}
	// The group also reaches a member that appeared after the snapshot.
	_ = signalGroup(t.PGID, sig)
	return done
}

// KillNow sends SIGKILL once to everything in the tree, for cleanup paths
// that cannot wait.
func KillNow(t Tree) { t.Signal(syscall.SIGKILL) }

// KillAll stops the tree: SIGINT, then SIGTERM, then SIGKILL, gap apart
// (production uses 2s), re-reading the members before every signal because a
// tool may start new processes meanwhile. It returns as soon as no member is
// alive. After SIGKILL it keeps looking for members and killing them until
// ctx ends, then returns a *SurvivorsError. If ctx ends during the graceful
// steps it goes straight to one SIGKILL round, so a cancelled context still
// kills. Give ctx a deadline: an unkillable process would otherwise keep it
// looping.
func KillAll(ctx context.Context, t Tree, gap time.Duration) error {
	_, err := killAll(ctx, t, gap)
	return err
}

// killAll is KillAll that also returns every process it signalled.
func killAll(ctx context.Context, t Tree, gap time.Duration) ([]Proc, error) {
	var signalled []Proc
	record := func(ps []Proc) {
		for _, p := range ps {
			if !slices.Contains(signalled, p) {
				signalled = append(signalled, p)
			}
		}
	}
	poll := pollInterval(gap)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		if ctx.Err() != nil {
			break
		}
		ms := t.Members()
		if len(ms) == 0 {
			return signalled, nil
		}
		record(t.signal(ms, sig))
		if waitGone(ctx, t, gap, poll) {
			return signalled, nil
		}
	}
	for {
		ms := t.Members()
		if len(ms) == 0 {
			return signalled, nil
		}
		record(t.signal(ms, syscall.SIGKILL))
		if waitGone(ctx, t, poll, poll) {
			return signalled, nil
		}
		if ctx.Err() != nil {
			// SIGKILL is delivered at once but the exit takes a moment: one
			// short pause keeps a done ctx from reporting the just-killed.
			time.Sleep(poll)
			if ms := t.Members(); len(ms) > 0 {
				return signalled, &SurvivorsError{Survivors: ms, Err: ctx.Err()}
			}
			return signalled, nil
		}
	}
}

// waitGone waits up to d for the tree to have no live member, checking every
// poll. It reports whether the tree is empty.
func waitGone(ctx context.Context, t Tree, d, poll time.Duration) bool {
	deadline := time.Now().Add(d)
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
		if len(t.Members()) == 0 {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
	}
}

// pollInterval is how often to look for survivors: often enough to finish
// soon after the last process exits, rarely enough that rescanning /proc
// stays cheap.
func pollInterval(gap time.Duration) time.Duration {
	return min(max(gap/10, 5*time.Millisecond), 50*time.Millisecond)
}
