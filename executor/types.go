package executor

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/claude-relay/claude-relay/internal/streamjson"
)

// Errors a run can end with; the Result says more.
var (
	ErrStartupTimeout = errors.New("the Claude CLI produced no output in time")
	ErrNoResult       = errors.New("the Claude CLI exited without a result")
	ErrBadRequest     = errors.New("invalid run request")
)

// Request is one background run.
type Request struct {
	RunID              string
	Prompt             string
	Cwd                string
	Model              string
	PermissionMode     streamjson.PermissionMode // default, acceptEdits, plan or bypassPermissions
	Approvals          bool                      // ask the Approver for every tool but the read-only ones
	Resume             string                    // conversation ID to resume
	Fork               bool                      // with Resume: fork into a new conversation
	Continue           bool                      // continue the most recent conversation in Cwd
	MaxTurns           int
	AppendSystemPrompt string
	Env                map[string]string // highest-precedence environment for this run
	AdditionalArgs     []string
	// StopGitCheck registers a Stop hook that blocks while the git tree has
	// uncommitted changes. Wired by the live-runs work (prompt option stop_git_check).
	StopGitCheck bool
}

// Status is how a run ended.
type Status string

// Run outcomes.
const (
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
)

// CommandResult is seed 002's result shape, as sent to extensions and backends.
type CommandResult struct {
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	ExitCode   int    `json:"exitCode"`
	DurationMS int64  `json:"duration_ms"`
}

// Result is everything known when a run ends.
type Result struct {
	CommandResult
	Status         Status
	Reason         string // why a run failed, for people
	ConversationID string
	Subtype        string // the CLI result's subtype, when there was one
	NumTurns       int
	Usage          streamjson.Usage
	TotalCostUSD   float64
	HasUsage       bool   // a result with usage and cost was seen
	LimitNotice    string // a rate or usage limit was reported
	StderrTail     string // the last stderr the CLI wrote, ANSI stripped
	CLIExitCode    int    // the process status; -1 when killed by a signal
}

// EventKind says what an Event carries.
type EventKind int

// Event kinds.
const (
	EventStarted     EventKind = iota + 1 // the CLI process started: PID and Argv
	EventLine                             // one stdout line, unmodified, with its decoded form
	EventMalformed                        // a stdout line that is not a JSON object: Line and Err
	EventStderr                           // one stderr line, ANSI stripped
	EventLimitNotice                      // a rate or usage limit notice: Text
)

// Event is one thing that happened in a run, reported in order.
type Event struct {
	Kind    EventKind
	RunID   string
	Time    time.Time
	Line    []byte             // EventLine, EventMalformed: the raw line (owned by the receiver)
	Message streamjson.Message // EventLine
	Err     error              // EventMalformed
	Text    string             // EventStderr, EventLimitNotice
	PID     int                // EventStarted
	Argv    []string           // EventStarted
}

// Observer receives a run's events from the run's reader goroutines, one at
// a time and in order. It must return quickly: the CLI waits on our reading.
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
}

// Decision answers an ApprovalRequest.
type Decision struct {
	Allow  bool
	Reason string
}

// Approver decides about tools. ctx ends when approvals.timeout passes or the
// run is interrupted or exits; the Approver then returns ctx.Err() and should
// tell its user the request is gone.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (Decision, error)
}
