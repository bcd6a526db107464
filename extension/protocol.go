package extension

import (
	"encoding/json"
	"time"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/internal/content"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// ProtocolVersion is the `protocol` of the ready event: 2 has live runs
// (CONTRACT §7).
const ProtocolVersion = 2

// Actions a command can name.
const (
	ActionPrompt   = "prompt"
	ActionCancel   = "cancel"
	ActionApprove  = "approve"
	ActionStatus   = "status"
	ActionTerminal = "terminal"
	ActionShutdown = "shutdown"
	// Live runs (protocol 2).
	ActionSend      = "send"
	ActionInterrupt = "interrupt"
	ActionSetMode   = "set_mode"
	ActionSetModel  = "set_model"
	ActionEnd       = "end"
)

// Command is one stdin line. Fields an action does not use are ignored, as
// are unknown fields.
type Command struct {
	Action        string        `json:"action"`
	RequestID     string        `json:"request_id,omitempty"`
	RunID         string        `json:"run_id,omitempty"`
	SessionID     string        `json:"session_id,omitempty"`
	InteractionID string        `json:"interaction_id,omitempty"`
	Prompt        *string       `json:"prompt,omitempty"` // a pointer: missing differs from blank
	Options       PromptOptions `json:"options,omitzero"`
	ApprovalID    string        `json:"approval_id,omitempty"`
	// approve: Decision is one of the approval's options; the rest as
	// relay.Reply says.
	Decision     wire.Decision   `json:"decision,omitempty"`
	Reason       string          `json:"reason,omitempty"`
	UpdatedInput json.RawMessage `json:"updated_input,omitempty"`
	Answers      json.RawMessage `json:"answers,omitempty"`
	Interrupt    bool            `json:"interrupt,omitempty"`
	// send: the follow-up's content blocks, beside or instead of prompt.
	Content []content.Block `json:"content,omitempty"`
	// set_mode, set_model
	PermissionMode string  `json:"permission_mode,omitempty"`
	Model          *string `json:"model,omitempty"` // a pointer: "" asks for the default model
}

// PromptOptions are a prompt's (and a terminal's) options.
type PromptOptions struct {
	// The options every front end passes to a run, JSON names included.
	executor.RunOptions
	ResumeLastSession bool            `json:"resume_last_session,omitempty"`
	ExitOnComplete    bool            `json:"exit_on_complete,omitempty"`
	IdleTimeout       string          `json:"idle_timeout,omitempty"` // a duration such as "30m"
	Content           []content.Block `json:"content,omitempty"`
}

// Event names.
const (
	EventReady              = "ready"
	EventRunStarted         = "run_started"
	EventStream             = "stream"
	EventApprovalRequested  = "approval_requested"
	EventApprovalCancelled  = "approval_cancelled"
	EventRunCompleted       = "run_completed"
	EventRunFailed          = "run_failed"
	EventRunCancelled       = "run_cancelled"
	EventLimitNotice        = "limit_notice"
	EventState              = "state"
	EventStatus             = "status"
	EventTerminalCommand    = "terminal_command"
	EventError              = "error"
	EventSignal             = "signal"
	EventAutoShutdown       = "auto_shutdown"
	EventShutdown           = "shutdown"
	EventTurnCompleted      = "turn_completed"
	EventSessionInfo        = "session_info"
	EventModeChanged        = "mode_changed"
	EventPartial            = "partial"
	EventStalled            = "stalled"
	StateIdle, StateRunning = "idle", "executing"
)

// Event is one stdout line. Every event carries Event and Timestamp; the rest
// depends on the event.
type Event struct {
	Event     string    `json:"event"`
	Timestamp time.Time `json:"timestamp"`
	RequestID string    `json:"request_id,omitempty"`
	RunID     string    `json:"run_id,omitempty"`
	SessionID string    `json:"session_id,omitempty"`

	// ready
	Version       string `json:"version,omitempty"`
	Protocol      int    `json:"protocol,omitempty"`
	PID           int    `json:"pid,omitempty"`
	CLIPath       string `json:"cli_path,omitempty"`
	CLIVersion    string `json:"cli_version,omitempty"`
	CLIError      string `json:"cli_error,omitempty"`
	Backend       string `json:"backend,omitempty"`
	Dashboard     string `json:"dashboard,omitempty"`
	InteractionID string `json:"interaction_id,omitempty"`

	// stream
	Payload json.RawMessage `json:"payload,omitempty"`

	// approval_requested / approval_cancelled
	ApprovalID string          `json:"approval_id,omitempty"`
	ToolName   string          `json:"tool_name,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
	ToolUseID  string          `json:"tool_use_id,omitempty"`
	Title      string          `json:"title,omitempty"` // what will run, in full (tooltitle.Full)
	// Kind is tool, plan or question; Options what decision may be;
	// Suggestions the CLI's permission_suggestions; Questions
	// AskUserQuestion's questions.
	Kind        wire.Kind       `json:"kind,omitempty"`
	Options     []wire.Decision `json:"options,omitempty"`
	Suggestions json.RawMessage `json:"suggestions,omitempty"`
	Questions   json.RawMessage `json:"questions,omitempty"`
	// Approver "dashboard" (approval_requested): the central policy lets
	// only the dashboard decide; approve answers policy_denied. PolicyRule
	// and PolicyReason name the rule that asked.
	Approver     string `json:"approver,omitempty"`
	PolicyRule   string `json:"policy_rule,omitempty"`
	PolicyReason string `json:"policy_reason,omitempty"`

	// run_completed / run_failed / run_cancelled
	Result         *Result  `json:"result,omitempty"`
	ConversationID string   `json:"conversation_id,omitempty"`
	Usage          *Usage   `json:"usage,omitempty"`
	TotalCostUSD   *float64 `json:"total_cost_usd,omitempty"`
	Reason         string   `json:"reason,omitempty"`

	// limit_notice
	Message string `json:"message,omitempty"`

	// state
	State string `json:"state,omitempty"`

	// status
	Runs      []RunInfo      `json:"runs,omitempty"`
	Forwarder *ForwarderInfo `json:"forwarder,omitempty"`

	// terminal_command
	Argv []string          `json:"argv,omitempty"`
	Cwd  string            `json:"cwd,omitempty"`
	Env  map[string]string `json:"env,omitempty"`

	// error
	Code string `json:"code,omitempty"`

	// signal
	Signal string `json:"signal,omitempty"`

	// turn_completed (reason is Reason)
	Turn      int         `json:"turn,omitempty"`
	Status    wire.Status `json:"status,omitempty"`
	StoppedBy wire.By     `json:"stopped_by,omitempty"`

	// stalled (reason is Reason)
	Seconds float64 `json:"seconds,omitempty"`

	// session_info (from the CLI's initialize response); mode_changed
	Commands        json.RawMessage             `json:"commands,omitempty"`
	Models          json.RawMessage             `json:"models,omitempty"`
	OutputStyles    json.RawMessage             `json:"output_styles,omitempty"`
	Account         json.RawMessage             `json:"account,omitempty"`
	PermissionMode  string                      `json:"permission_mode,omitempty"`
	PermissionModes []streamjson.PermissionMode `json:"permission_modes,omitempty"` // session_info: the modes the CLI takes
}

// Result is seed 002's command result.
type Result = wire.Result

// Usage is a run's token usage.
type Usage = wire.Usage

// RunInfo describes a live run in a status event.
type RunInfo struct {
	RunID         string    `json:"run_id"`
	SessionID     string    `json:"session_id"`
	InteractionID string    `json:"interaction_id"`
	StartedAt     time.Time `json:"started_at"`
	Approvals     int       `json:"pending_approvals"`
}

// ForwarderInfo is the forwarder's figures in a status event.
type ForwarderInfo struct {
	Pending      int64  `json:"pending"`
	InFlight     int64  `json:"in_flight"`
	Delivered    int64  `json:"delivered"`
	Retried      int64  `json:"retried"`
	DeadLettered int64  `json:"dead_lettered"`
	SpoolBytes   int64  `json:"spool_bytes"`
	LastError    string `json:"last_error,omitempty"`
}

// Error codes of error events.
const (
	CodeBadJSON         = "bad_json"
	CodeUnknownAction   = "unknown_action"
	CodeMissingField    = "missing_field"
	CodeBadValue        = "bad_value"
	CodeLineTooLong     = "line_too_long"
	CodeUnknownRun      = "unknown_run"
	CodeUnknownApprove  = "unknown_approval"
	CodeShuttingDown    = "shutting_down"
	CodeRunConflict     = "run_exists"
	CodeSpool           = "spool"
	CodeAuth            = "backend_auth"
	CodeDeadLetter      = "dead_letter"
	CodeSpoolFull       = "spool_full"
	CodeInternal        = "internal"
	CodeCLINotFound     = "cli_not_found"
	CodeMalformedOutput = "malformed_output"
	CodeNotLive         = "not_live"
	CodeCLIRefused      = "cli_refused"
	// CodeBudgetExhausted refuses a prompt or send: a budget covering the
	// run's project is used up, or cannot be checked under budgets.offline:
	// deny (issue 26).
	CodeBudgetExhausted = "budget_exhausted"
	// CodeNotBackend: backend.url answers, but not as a claude-relay
	// backend (a web server's page, a redirect, a 404): events stay spooled.
	CodeNotBackend = "not_backend"
	// CodeBillingRefused: claude.billing stopped a run before its first API
	// request (issue 26; the run_failed that follows says the same).
	CodeBillingRefused = "billing_refused"
	// CodePolicyDenied: the central policy (serve.policy) forbids what the
	// client tried, such as answering an approval only the dashboard may
	// decide.
	CodePolicyDenied = "policy_denied"
)
