package wire

// The relay's vocabularies: each set of words that events, the extension
// protocol and the store share is one named type declared here, so a
// misspelt status or decision is a compile error rather than a session
// listed in a state nobody can filter on.

// Status is how a run or a turn ended, or that it is still running.
type Status string

// Statuses. A run ends completed, failed or cancelled; a turn of a live run
// ends completed, failed or interrupted.
const (
	StatusRunning   Status = "running"
	StatusCompleted Status = "completed" // it ended as asked: the model answered, or the client closed an idle run
	StatusFailed    Status = "failed"    // the CLI or the model reported an error, or the CLI died
	StatusCancelled Status = "cancelled" // stopped before it ended (a cancel, a close during a turn, shutdown)
	// StatusInterrupted is a turn someone stopped (interrupt, ACP
	// session/cancel, Ctrl-C, a denial that stopped the turn); TurnCompleted.By
	// says who. The run goes on.
	StatusInterrupted Status = "interrupted"
)

// By is who decided an approval (ApprovalResolved.By, CONTRACT §10) or
// stopped a turn (TurnCompleted.By).
type By string

// Deciders.
const (
	ByExtension By = "extension" // the editor extension's user
	ByTTY       By = "tty"       // the person at `claude-relay run`'s terminal
	ByACP       By = "acp"       // the ACP client's user
	ByDashboard By = "dashboard" // through the backend's API; DecidedBy says who there
	ByTimeout   By = "timeout"   // nobody answered in time
	ByCancelled By = "cancelled" // the run or its turn ended first
	ByWatchdog  By = "watchdog"  // the helper's stall watchdog
)

// Kind is what an approval asks.
type Kind string

// Approval kinds.
const (
	ApprovalTool     Kind = "tool"     // may this tool call run?
	ApprovalPlan     Kind = "plan"     // ExitPlanMode: is the plan accepted?
	ApprovalQuestion Kind = "question" // AskUserQuestion: what are the answers?
)

// Decision is what an approval's decider chose (CONTRACT §7).
type Decision string

// Decisions an approval may offer in its options.
const (
	DecisionAllow        Decision = "allow"
	DecisionAllowAlways  Decision = "allow_always"
	DecisionDeny         Decision = "deny"
	DecisionAcceptEdits  Decision = "accept_edits"  // a plan: approve, edits run without asking
	DecisionDefault      Decision = "default"       // a plan: approve, each edit asks
	DecisionKeepPlanning Decision = "keep_planning" // a plan: send it back with a reason
)

// Decisions are every decision there is; an approval offers some.
var Decisions = []Decision{DecisionAllow, DecisionAllowAlways, DecisionDeny, DecisionAcceptEdits, DecisionDefault, DecisionKeepPlanning}

// Allows says whether d lets the tool or plan go ahead.
func (d Decision) Allows() bool { return d != DecisionDeny && d != DecisionKeepPlanning }

// AsDecisions types stored option strings (a store keeps what a helper
// sent, checked against nothing).
func AsDecisions(ss []string) []Decision {
	if ss == nil {
		return nil
	}
	out := make([]Decision, len(ss))
	for i, s := range ss {
		out[i] = Decision(s)
	}
	return out
}
