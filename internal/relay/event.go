package relay

import (
	"encoding/json"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// Kind is what an Event reports.
type Kind int

// Kinds of events.
const (
	KindStarted           Kind = iota + 1 // the run is live; Cwd is set
	KindStream                            // a CLI line, now safe in the spool: Line, Message
	KindApprovalRequested                 // Approval waits for Core.Answer
	KindApprovalCancelled                 // Approval is gone: Reason says why
	KindLimitNotice                       // Text is the notice
	KindMalformed                         // the CLI wrote a line that is not JSON: Text
	KindSpoolError                        // an event of this run could not be spooled: Err
	KindEnded                             // the run is over: End
	KindTurnCompleted                     // a live run's turn ended: Turn, End (that turn only); the run waits
	KindSessionInfo                       // the CLI's initialize response, once: Info
	KindModeChanged                       // the permission mode changed: Mode
	KindPartial                           // a token delta (partial messages): Line. Live only: never spooled
	KindError                             // a request on a live run failed: RequestID, Err
	KindStalled                           // the CLI went silent mid-turn (watchdog): Text, Seconds; an interrupt follows
	KindPolicyDecision                    // the central policy decided a tool call: Policy
)

// Event is one thing a run did, in the order it happened.
type Event struct {
	Kind          Kind
	RunID         string
	SessionID     string
	InteractionID string
	RequestID     string // the front end's request that started the run (KindStarted)

	Cwd      string                      // KindStarted
	Line     json.RawMessage             // KindStream: the CLI's line, byte for byte
	Message  streamjson.Message          // KindStream: Line decoded
	Approval *Approval                   // KindApprovalRequested, KindApprovalCancelled
	Text     string                      // KindLimitNotice, KindMalformed
	Reason   string                      // KindApprovalCancelled: for people
	Decided  *Decided                    // KindApprovalCancelled: who decided instead, and what
	Err      error                       // KindSpoolError
	End      *End                        // KindEnded, KindTurnCompleted
	Turn     int                         // KindTurnCompleted: 1-based
	Info     json.RawMessage             // KindSessionInfo
	Modes    []streamjson.PermissionMode // KindSessionInfo: the modes the CLI takes; nil when it did not say
	Mode     string                      // KindModeChanged; KindSessionInfo: the mode the run starts in
	Seconds  float64                     // KindStalled: how long the CLI was silent
	Policy   *wire.PolicyDecision        // KindPolicyDecision

	// Live is the number of live runs once this event is delivered, for
	// KindStarted and KindEnded: front ends that show an idle/busy state
	// read it here, in the same order as the events.
	Live int
}

// Approval is a tool call waiting for a decision.
type Approval struct {
	ID          string
	Kind        wire.Kind
	ToolName    string
	Input       json.RawMessage
	ToolUseID   string
	Title       string          // what will run, in full (tooltitle.Full)
	Description string          // the model's own description, when the CLI gave one
	Options     []wire.Decision // what the decision may be
	Suggestions json.RawMessage // the CLI's permission_suggestions
	Questions   json.RawMessage // AskUserQuestion's questions, for a question
	// Policy is the central policy's rule that asked, if any; with
	// approver dashboard only the dashboard may decide (ErrDashboardOnly).
	Policy *executor.PolicyAskInfo
}

// DashboardOnly says whether only a decision made in the dashboard may
// answer the approval (serve.policy's approver: dashboard).
func (a *Approval) DashboardOnly() bool { return a.Policy != nil && a.Policy.Approver == "dashboard" }

// End is how a run ended.
type End struct {
	Status         executor.Status
	Result         wire.Result
	ConversationID string
	Usage          *wire.Usage
	TotalCostUSD   *float64
	Reason         string // why it failed, or how it was stopped
	StoppedBy      wire.By
	Cause          error // why it failed, for code: executor.ErrNotLoggedIn, or nil
}

// Sink receives a run's events, one at a time and in order. KindStarted and
// KindEnded are delivered under the Core's lock (so Live counts stay in order
// across runs): Event must not call back into the Core.
type Sink interface {
	Event(Event)
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(Event)

// Event calls f.
func (f SinkFunc) Event(e Event) { f(e) }

func (a *Approval) approver() string {
	if a.Policy == nil {
		return ""
	}
	return a.Policy.Approver
}

func (a *Approval) policyRule() string {
	if a.Policy == nil {
		return ""
	}
	return a.Policy.Rule
}

func (a *Approval) policyReason() string {
	if a.Policy == nil {
		return ""
	}
	return a.Policy.Reason
}
