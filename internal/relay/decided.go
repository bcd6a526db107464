package relay

import (
	"fmt"
	"strings"

	"github.com/claude-relay/claude-relay/internal/wire"
)

// PendingApproval names one approval that waits for a decision.
type PendingApproval struct {
	RunID      string
	ApprovalID string
}

// Decided is how an approval stopped waiting: who decided it, and what.
type Decided struct {
	By       wire.By
	ByDetail string // with wire.ByDashboard: who decided there
	Decision wire.Decision
}

// String says it for the sides that lost: "already decided by dashboard
// (phone): allow".
func (d Decided) String() string {
	switch d.By {
	case wire.ByTimeout:
		return "already timed out: " + string(d.Decision)
	case wire.ByCancelled:
		return "already cancelled: " + string(d.Decision)
	}
	return "already decided by " + d.Who() + ": " + string(d.Decision)
}

// Who is the decider with its detail: "dashboard (phone)".
func (d Decided) Who() string {
	if detail := d.Detail(); detail != "" {
		return string(d.By) + " (" + detail + ")"
	}
	return string(d.By)
}

// Detail is who decided within By, for people: the backend records a
// dashboard login's decision as "dashboard:<token name>" (and one through
// the API as "api:<token name>"), and "dashboard (dashboard:phone)" says
// the same thing twice.
func (d Decided) Detail() string {
	if d.By == wire.ByDashboard {
		return strings.TrimPrefix(d.ByDetail, "dashboard:")
	}
	return d.ByDetail
}

// DecidedError answers a reply to an approval that another side decided
// first (or that timed out or was cancelled): first answer wins, and this
// says which one did. It is an ErrUnknownApproval too: the approval is no
// longer pending.
type DecidedError struct {
	ApprovalID string
	Decided
}

func (e *DecidedError) Error() string { return fmt.Sprintf("approval %q %s", e.ApprovalID, e.Decided) }

// Is makes a DecidedError match ErrUnknownApproval.
func (e *DecidedError) Is(target error) bool { return target == ErrUnknownApproval }

// maxDecided bounds how many outcomes the Core remembers for DecidedError;
// older ones get the plain ErrUnknownApproval.
const maxDecided = 1024

// approvals is the Core's view of every run's approvals: which wait now
// (for Pending) and how recent ones ended (for DecidedError). Its lock is
// taken last, under a Run's.
type approvals struct {
	waiting  map[string]string // approval ID → its run
	changed  chan struct{}     // closed at the next change of waiting
	decided  map[string]Decided
	oldestQ  []string // decided's keys, oldest first
	maxQueue int
}

func newApprovals() approvals {
	return approvals{waiting: map[string]string{}, changed: make(chan struct{}), decided: map[string]Decided{}, maxQueue: maxDecided}
}

// Pending lists the approvals that wait for a decision now, and a channel
// that is closed at the next change of that list: a waiter for decisions
// made elsewhere (internal/remote) asks about exactly these.
func (c *Core) Pending() ([]PendingApproval, <-chan struct{}) {
	c.amu.Lock()
	defer c.amu.Unlock()
	out := make([]PendingApproval, 0, len(c.ap.waiting))
	for id, run := range c.ap.waiting {
		out = append(out, PendingApproval{RunID: run, ApprovalID: id})
	}
	return out, c.ap.changed
}

// approvalAsked records a new pending approval.
func (c *Core) approvalAsked(runID, id string) {
	c.amu.Lock()
	defer c.amu.Unlock()
	c.ap.waiting[id] = runID
	c.ap.changed = notify(c.ap.changed)
}

// approvalSettled records how a pending approval ended, in the same step
// as its run took the outcome, so a later reply always hears who won.
func (c *Core) approvalSettled(id string, d Decided) {
	c.amu.Lock()
	defer c.amu.Unlock()
	delete(c.ap.waiting, id)
	c.ap.changed = notify(c.ap.changed)
	if _, seen := c.ap.decided[id]; !seen {
		c.ap.oldestQ = append(c.ap.oldestQ, id)
	}
	c.ap.decided[id] = d
	if len(c.ap.oldestQ) > c.ap.maxQueue {
		delete(c.ap.decided, c.ap.oldestQ[0])
		c.ap.oldestQ = c.ap.oldestQ[1:]
	}
}

// decidedOf is how a recent approval ended.
func (c *Core) decidedOf(id string) (Decided, bool) {
	c.amu.Lock()
	defer c.amu.Unlock()
	d, ok := c.ap.decided[id]
	return d, ok
}

// notify closes ch for those waiting on it and returns the next one.
func notify(ch chan struct{}) chan struct{} {
	close(ch)
	return make(chan struct{})
}
