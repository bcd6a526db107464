package executor

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/claude-relay/claude-relay/internal/billing"
	"github.com/claude-relay/claude-relay/internal/proc"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// Errors a run can end with; the Result says more.
var (
	ErrStartupTimeout = errors.New("the Claude CLI produced no output in time")
	ErrNoResult       = errors.New("the Claude CLI exited without a result")
	ErrBadRequest     = errors.New("invalid run request")
	// ErrNotLoggedIn is a run or turn that failed because the CLI has no
	// credentials (Result.Cause).
	ErrNotLoggedIn = errors.New("the Claude CLI is not logged in")
	ErrStalled     = errors.New("stalled")
)

// Errors a live run's Input can be answered with (Input.Done).
var (
	ErrNotLive    = errors.New("the run is not keep_alive")
	ErrRunEnding  = errors.New("the run is ending")
	ErrCLIRefused = errors.New("the Claude CLI refused the request")
	ErrNoAnswer   = errors.New("the run ended before the Claude CLI answered")
	ErrBadInput   = errors.New("invalid input for a live run")
)

// Request is one background run: the prompt options (RunOptions) and what
// only the executor's caller knows.
type Request struct {
	RunOptions
	RunID  string
	Prompt string
	// Idle (with KeepAlive and no Prompt) starts the CLI and initializes it
	// without a first turn: the first InputSend is the first turn. An ACP
	// session starts its CLI this way, so its first prompt does not wait
	// for the CLI to start.
	Idle bool
	// SessionID (a UUID) is the conversation ID a new conversation gets
	// (--session-id), so a front end knows it before the CLI says it.
	SessionID string
	// Spool is where the run's events go, kept in the run's registry
	// record so that the next helper start can post the run's end if this
	// helper dies first. A live run's record follows its turns: each
	// InputSend's Interaction from the moment its turn starts. Zero: the
	// record names none, and nothing is posted for the run.
	Spool       proc.SpoolKey
	IdleTimeout time.Duration // keep_alive: end the run after this long with no turn running (0 = 30m)
	// Inputs carries follow-ups and mid-run control for a KeepAlive run
	// (nil: none); a run that is not KeepAlive takes InputInterrupt,
	// InputSetMode and InputSetModel from it too. The executor reads it
	// until the run ends; closing it is taken as InputEnd.
	Inputs <-chan Input
	// Content, when set, is the first user message's content (a JSON array
	// of content blocks, or a JSON string) instead of Prompt's text. Prompt
	// must still be non-blank: a blank one completes at once (seed 002).
	Content json.RawMessage
}

// Status is how a run or a live run's turn ended (wire's vocabulary).
type Status = wire.Status

// Run and turn outcomes.
const (
	StatusCompleted   = wire.StatusCompleted
	StatusFailed      = wire.StatusFailed
	StatusCancelled   = wire.StatusCancelled
	StatusInterrupted = wire.StatusInterrupted // a live run's turn only
)

// CommandResult is seed 002's result shape, as sent to extensions and backends.
type CommandResult = wire.Result

// Result is everything known when a run ends.
type Result struct {
	CommandResult
	Status Status
	Reason string // why a run failed, for people
	// Cause is why it failed, for code: ErrNotLoggedIn, or nil.
	Cause          error
	ConversationID string
	Subtype        string // the CLI result's subtype, when there was one
	NumTurns       int
	Usage          streamjson.Usage
	TotalCostUSD   float64
	HasUsage       bool   // a result with usage and cost was seen
	LimitNotice    string // a rate or usage limit was reported
	StderrTail     string // the last stderr the CLI wrote, ANSI stripped
	CLIExitCode    int    // the process status; -1 when killed by a signal
	// StoppedBy is who stopped an interrupted turn or a cancelled run, when
	// known; Reason says how.
	StoppedBy wire.By
}

// EventKind says what an Event carries.
type EventKind int

// Event kinds.
const (
	EventStarted       EventKind = iota + 1 // the CLI process started: PID and Argv
	EventLine                               // one stdout line, unmodified, with its decoded form
	EventMalformed                          // a stdout line that is not a JSON object: Line and Err
	EventStderr                             // one stderr line, ANSI stripped
	EventLimitNotice                        // a rate or usage limit notice: Text
	EventTurnCompleted                      // a keep_alive run's turn ended: Turn (1-based), TurnResult
	EventSessionInfo                        // the CLI's initialize control_response payload (raw JSON object), once per run: SessionInfo
	EventModeChanged                        // the permission mode changed (a confirmed set_mode, or the CLI reported a new one): Mode
	EventStalled                            // the watchdog found a turn silent for StallTimeout and interrupts it: Text (the reason), Seconds
	// EventTurnStarted: a keep_alive run wrote an InputSend's message, so
	// its turn runs from now on: Interaction. A send queued behind a turn
	// starts when that turn ends; the run's first prompt reports none.
	EventTurnStarted
	// EventTurnDropped: a queued send was dropped before it ran (an
	// InputInterrupt with DropQueued): Interaction.
	EventTurnDropped
	// EventBilling: the CLI's answer to initialize said where its
	// credentials come from: Billing, and BillingErr (a
	// *billing.RefusedError) when claude.billing refuses it. Once per run.
	EventBilling
	// EventPolicyDecision: the central policy decided a tool call (allow,
	// deny), or an ask it raised was answered: Policy.
	EventPolicyDecision
)

// Event is one thing that happened in a run, reported in order.
type Event struct {
	Kind    EventKind
	RunID   string
	Time    time.Time
	Line    []byte             // EventLine, EventMalformed: the raw line (owned by the receiver)
	Message streamjson.Message // EventLine
	Err     error              // EventMalformed
	Text    string             // EventStderr, EventLimitNotice, EventStalled (the reason: "no output for 5m0s")
	Seconds float64            // EventStalled: how long the CLI was silent (the stall timeout)
	PID     int                // EventStarted
	Argv    []string           // EventStarted
	Turn    int                // EventTurnCompleted: 1-based
	// TurnResult is that turn only (EventTurnCompleted): Status, Stdout
	// (the turn's assistant text), Stderr and ExitCode per seed 002 for an
	// error result, Usage, TotalCostUSD, HasUsage, ConversationID, Subtype,
	// NumTurns, DurationMS (the CLI's), LimitNotice.
	TurnResult  *Result
	SessionInfo json.RawMessage // EventSessionInfo (owned by the receiver)
	// Modes (EventSessionInfo) are the permission modes the CLI says it
	// takes; nil when it did not say.
	Modes         []streamjson.PermissionMode
	Mode          streamjson.PermissionMode // EventModeChanged; EventSessionInfo: the mode the run starts in
	Interaction   string                    // EventTurnStarted, EventTurnDropped: the InputSend's Interaction
	Billing       billing.Source            // EventBilling
	BillingErr    error                     // EventBilling: the guard's refusal, or nil
	BillingPolicy billing.Policy            // EventBilling: claude.billing
	Policy        *wire.PolicyDecision      // EventPolicyDecision
}

// Observer receives a run's events from the run's reader goroutines (stdout
// lines in order, stderr lines in order, the two concurrently) and
// EventStalled from its loop. It must return quickly: the CLI waits on our
// reading.
type Observer interface {
	Event(Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

// Event implements Observer.
func (f ObserverFunc) Event(e Event) { f(e) }

// ApprovalRequest asks whether a tool may run.
type ApprovalRequest struct {
	RunID       string
	ApprovalID  string
	ToolName    string
	DisplayName string
	Input       json.RawMessage
	ToolUseID   string
	Description string
	Suggestions json.RawMessage // the CLI's permission_suggestions, as it sent them
	// Policy, when the central policy asked for this approval: its rule,
	// reason and approver. With approver dashboard, only a decision made
	// in the dashboard may answer it (relay refuses the others).
	Policy *PolicyAskInfo
}

// PolicyAskInfo is the central policy's rule behind an approval.
type PolicyAskInfo struct {
	Rule     string
	Reason   string
	Approver string // "" anyone the run asks; "dashboard" only the dashboard
}

// Decision answers an ApprovalRequest.
type Decision struct {
	Allow bool
	// Always (with Allow) grants the request's Suggestions for the rest of
	// the run, so the same call is not asked again.
	Always bool
	// Mode (with Allow, for a plan) is the mode the session leaves plan mode
	// into; acceptEdits when empty.
	Mode streamjson.PermissionMode
	// UpdatedInput (with Allow) replaces the tool's input: an edited command.
	UpdatedInput json.RawMessage
	// Answers (with Allow, for AskUserQuestion): question text → answer.
	Answers map[string]string
	// Interrupt (with a deny) stops the turn too.
	Interrupt bool
	// Reason (with a deny) is told to the model.
	Reason string
	// By is who decided: the turn a denial stopped says so.
	By wire.By
}

// Approver decides about tools. ctx ends when approvals.timeout passes or the
// run is interrupted or exits; the Approver then returns ctx.Err() and should
// tell its user the request is gone.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (Decision, error)
}
