// Package wire holds the types that cross package and process boundaries
// more than once: the seed-002 command result, token usage, and the relay's
// own lifecycle events that the helper posts and the backend derives status
// from. One declaration each, so the helper, the terminal runner, the
// extension protocol and the store cannot drift apart.
package wire

import (
	"encoding/json"
	"time"
)

// Event types of the relay's own events: CONTRACT §6 names the first six;
// docs/events.md describes every one, its fields and its schema version.
const (
	TypeRunStarted    = "relay.run_started"
	TypeRunCompleted  = "relay.run_completed"
	TypeRunFailed     = "relay.run_failed"
	TypeRunCancelled  = "relay.run_cancelled"
	TypeStderr        = "relay.stderr"
	TypeLimitNotice   = "relay.limit_notice"
	TypeMalformedLine = "relay.malformed_line"
	TypeTurnCompleted = "relay.turn_completed"
	TypeModeChanged   = "relay.mode_changed"
	TypeMessageSent   = "relay.message_sent"
	// Approvals (CONTRACT §10): what was asked, and who decided what.
	TypeApprovalRequested = "relay.approval_requested"
	TypeApprovalResolved  = "relay.approval_resolved"
)

// Schema versions of the relay events' data, written as its "v" by each
// type's MarshalJSON (docs/events.md). Data without "v" is version 1 as it
// was before versions were written: for run_started and message_sent, a
// prompt given with content blocks was then a one-line summary
// ("[text, 30 B]") and message_sent's "blocks" a count.
const (
	VRunStarted        = 2 // 2: the prompt in full (bounded, marked when cut), blocks described, idle
	VMessageSent       = 2 // 2: as run_started; "blocks" is a list (it was a count)
	VRunEnded          = 1
	VTurnCompleted     = 2 // 2: status interrupted with by and reason; mode and model_usage for a terminal run
	VModeChanged       = 1
	VStderr            = 1
	VLimitNotice       = 1
	VMalformedLine     = 1
	VApprovalRequested = 1
	VApprovalResolved  = 1
)

// Run modes, in RunStarted.Mode and RunEnded.Mode: how the run was started.
// A background run of the extension or `claude-relay run` has none.
const (
	ModeTerminal = "terminal" // a visible-terminal run
	ModeACP      = "acp"      // a run an ACP client (Zed, …) started through `claude-relay acp`
)

// Question is one of AskUserQuestion's questions, which an approval of
// kind question asks.
type Question struct {
	Question    string           `json:"question"`
	Header      string           `json:"header,omitempty"`
	MultiSelect bool             `json:"multiSelect,omitempty"`
	Options     []QuestionOption `json:"options"`
}

// QuestionOption is one answer a Question offers.
type QuestionOption struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// Questions decodes an approval's questions; nil when they do not decode.
func Questions(raw json.RawMessage) []Question {
	var qs []Question
	if json.Unmarshal(raw, &qs) != nil {
		return nil
	}
	return qs
}

// ApprovalRequested is relay.approval_requested's data.
type ApprovalRequested struct {
	V           int             `json:"v"` // VApprovalRequested, set when written
	RunID       string          `json:"run_id"`
	ApprovalID  string          `json:"approval_id"`
	Kind        Kind            `json:"kind"`
	ToolName    string          `json:"tool_name"`
	Title       string          `json:"title"`
	Input       json.RawMessage `json:"input,omitempty"`
	ToolUseID   string          `json:"tool_use_id,omitempty"`
	Options     []Decision      `json:"options"`
	Suggestions json.RawMessage `json:"suggestions,omitempty"`
	// The central policy's rule that asked (policy.go): approver
	// "dashboard" means only the dashboard may decide.
	Approver     string `json:"approver,omitempty"`
	PolicyRule   string `json:"policy_rule,omitempty"`
	PolicyReason string `json:"policy_reason,omitempty"`
}

// ApprovalResolved is relay.approval_resolved's data: the decision and who
// made it (one of the By constants).
type ApprovalResolved struct {
	V          int      `json:"v"` // VApprovalResolved, set when written
	RunID      string   `json:"run_id"`
	ApprovalID string   `json:"approval_id"`
	Decision   Decision `json:"decision"` // one of the request's options
	By         By       `json:"by"`
	// With By dashboard: who decided there (the decision's `by`, the name
	// of the backend token it came with) and the decision's ID, which
	// names the remote decision that won.
	DecidedBy    string          `json:"decided_by,omitempty"`
	DecisionID   string          `json:"decision_id,omitempty"`
	Reason       string          `json:"reason,omitempty"`
	UpdatedInput json.RawMessage `json:"updated_input,omitempty"` // the input the user edited
	Answers      json.RawMessage `json:"answers,omitempty"`       // a question's answers
	Interrupt    bool            `json:"interrupt,omitempty"`     // the turn was stopped too
}

// RemoteDecision is a decision made through the backend's API, as the
// helper's long-poll (GET /api/approvals/decisions) gets it: the helper
// answers the CLI with it unless another side answered first.
type RemoteDecision struct {
	ApprovalID   string          `json:"approval_id"`
	DecisionID   string          `json:"decision_id"`
	Decision     Decision        `json:"decision"`
	Reason       string          `json:"reason,omitempty"`
	UpdatedInput json.RawMessage `json:"updated_input,omitempty"`
	Answers      json.RawMessage `json:"answers,omitempty"`
	By           string          `json:"by"` // who decided: "dashboard:<token name>" or "api:<token name>"
	DecidedAt    time.Time       `json:"decided_at"`
	RunID        string          `json:"run_id,omitempty"`
	SessionID    string          `json:"session_id,omitempty"`
	// InputSHA256 is InputDigest of the input the backend showed the
	// approver; the helper refuses the decision unless it is the digest of
	// the input it asked about.
	InputSHA256 string `json:"input_sha256"`
}

// RemoteDecisions answers GET /api/approvals/decisions.
type RemoteDecisions struct {
	Decisions []RemoteDecision `json:"decisions"`
}

// Source of an event envelope.
const (
	SourceAgent    = "agent"
	SourceTerminal = "terminal"
	SourceRelay    = "relay"
)

// Envelope is an event as the helper posts it and the backend stores it
// (CONTRACT §6).
type Envelope struct {
	SessionID     string          `json:"session_id"`
	InteractionID string          `json:"interaction_id"`
	EventID       string          `json:"event_id"`
	Seq           int64           `json:"seq"`
	EventType     string          `json:"event_type"`
	EventData     json.RawMessage `json:"event_data"`
	Timestamp     string          `json:"timestamp"`
	Source        string          `json:"source"`
}

// BatchResponse answers POST /api/sessions/{id}/events/batch: one result
// per posted event, in order.
type BatchResponse struct {
	Results []BatchResult `json:"results"`
}

// BatchResult is one event's outcome in a batch.
type BatchResult struct {
	EventID   string `json:"event_id"`
	Status    int    `json:"status"` // 201 stored, 200 duplicate, 400 refused
	Duplicate bool   `json:"duplicate"`
	Cursor    int64  `json:"cursor,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Result is seed 002's command result.
type Result struct {
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	ExitCode   int    `json:"exitCode"`
	DurationMS int64  `json:"duration_ms"`
}

// Usage is a run's token usage.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

// Add returns u plus v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:              u.InputTokens + v.InputTokens,
		OutputTokens:             u.OutputTokens + v.OutputTokens,
		CacheReadInputTokens:     u.CacheReadInputTokens + v.CacheReadInputTokens,
		CacheCreationInputTokens: u.CacheCreationInputTokens + v.CacheCreationInputTokens,
	}
}

// RunStarted is relay.run_started's data.
type RunStarted struct {
	V     int    `json:"v"` // VRunStarted, set when written
	RunID string `json:"run_id"`
	Mode  string `json:"mode,omitempty"` // ModeTerminal or ModeACP; none for a background run
	// PromptRecord is the run's first prompt (prompt, prompt_bytes,
	// prompt_truncated, blocks, …); none for an idle start.
	PromptRecord
	// Idle: the run started with no prompt (an ACP session at session/new):
	// its first prompt is a relay.message_sent, in the interaction it starts.
	Idle           bool   `json:"idle,omitempty"`
	Cwd            string `json:"cwd"`
	Model          string `json:"model,omitempty"`
	PermissionMode string `json:"permission_mode,omitempty"`
	Resume         string `json:"resume,omitempty"`
	Fork           bool   `json:"fork,omitempty"`
	Continue       bool   `json:"continue,omitempty"`
	Approvals      bool   `json:"approvals,omitempty"`
	// Host is the helper's machine (its host name): what the audit trail
	// names a run's machine by (docs/audit.md).
	Host string `json:"host,omitempty"`
}

// RunEnded is the data of relay.run_completed, run_failed and run_cancelled.
type RunEnded struct {
	V              int      `json:"v"` // VRunEnded, set when written
	RunID          string   `json:"run_id"`
	Mode           string   `json:"mode,omitempty"`
	Status         Status   `json:"status"` // completed, failed or cancelled
	Result         Result   `json:"result"`
	ConversationID string   `json:"conversation_id"`
	Usage          *Usage   `json:"usage,omitempty"`
	TotalCostUSD   *float64 `json:"total_cost_usd,omitempty"`
	Reason         string   `json:"reason,omitempty"`
	ExitCode       *int     `json:"exit_code,omitempty"` // the CLI's own exit status, where it is known apart from Result
	// Models splits the cost by model where the run read it from the
	// CLI's own records (a terminal run).
	Models map[string]ModelUsage `json:"model_usage,omitempty"`
}

// Reasons in RunEnded.Reason that programs may match on; any other reason
// is text for people.
const (
	// ReasonHelperExited: the helper that ran the run died while it was
	// live (SIGKILL, a crash, a power cut). The next helper start on the
	// same data dir stopped what was left of it and posted this end in its
	// stead; Result.Stderr says which helper and when.
	ReasonHelperExited = "helper_exited"
)

// EndType is the event type of a run that ended with status.
func EndType(status Status) string {
	switch status {
	case StatusCompleted:
		return TypeRunCompleted
	case StatusCancelled:
		return TypeRunCancelled
	}
	return TypeRunFailed
}

// TurnCompleted is relay.turn_completed's data: one turn of a live run
// ended, and the run waits for the next message.
type TurnCompleted struct {
	V      int    `json:"v"` // VTurnCompleted, set when written
	RunID  string `json:"run_id"`
	Turn   int    `json:"turn"`
	Mode   string `json:"mode,omitempty"` // ModeTerminal: read from a terminal run's transcript
	Status Status `json:"status"`         // completed, failed or interrupted
	// By and Reason say who stopped an interrupted turn and how, in words
	// for people; Result.Stderr keeps what the CLI said.
	By             By       `json:"by,omitempty"`
	Reason         string   `json:"reason,omitempty"`
	Result         Result   `json:"result"`
	ConversationID string   `json:"conversation_id,omitempty"`
	Usage          *Usage   `json:"usage,omitempty"`
	TotalCostUSD   *float64 `json:"total_cost_usd,omitempty"`
	// Models splits Usage (and the cost, where known) by model; a terminal
	// run's turns carry it, since no CLI result line does.
	Models map[string]ModelUsage `json:"model_usage,omitempty"`
}

// ModelUsage is one model's share of a turn's or a run's usage.
type ModelUsage struct {
	Usage
	CostUSD *float64 `json:"cost_usd,omitempty"`
}

// MessageSent is relay.message_sent's data: a message written to a live
// run (a follow-up, or an ACP session's every prompt), posted in the
// interaction it starts (the CLI does not echo it), so the backend can
// show and search what was asked.
type MessageSent struct {
	V     int    `json:"v"` // VMessageSent, set when written
	RunID string `json:"run_id"`
	PromptRecord
}

// ModeChanged is relay.mode_changed's data.
type ModeChanged struct {
	V              int    `json:"v"` // VModeChanged, set when written
	RunID          string `json:"run_id"`
	PermissionMode string `json:"permission_mode"`
}

// Stderr is relay.stderr's data: one line the CLI wrote to stderr.
type Stderr struct {
	V     int    `json:"v"` // VStderr, set when written
	RunID string `json:"run_id"`
	Line  string `json:"line"`
}

// LimitNotice is relay.limit_notice's data.
type LimitNotice struct {
	V       int    `json:"v"` // VLimitNotice, set when written
	RunID   string `json:"run_id"`
	Message string `json:"message"`
}

// MalformedLine is relay.malformed_line's data: output that was not JSON.
type MalformedLine struct {
	V      int    `json:"v"` // VMalformedLine, set when written
	RunID  string `json:"run_id"`
	Source string `json:"source,omitempty"` // "transcript" for a terminal run's transcript
	Raw    string `json:"raw"`
	Error  string `json:"error,omitempty"`
	Bytes  int    `json:"bytes,omitempty"`
}

// MarshalJSON writes the data with "v" = VRunStarted.
func (e RunStarted) MarshalJSON() ([]byte, error) {
	type data RunStarted
	e.V = VRunStarted
	return json.Marshal(data(e))
}

// MarshalJSON writes the data with "v" = VRunEnded.
func (e RunEnded) MarshalJSON() ([]byte, error) {
	type data RunEnded
	e.V = VRunEnded
	return json.Marshal(data(e))
}

// MarshalJSON writes the data with "v" = VTurnCompleted.
func (e TurnCompleted) MarshalJSON() ([]byte, error) {
	type data TurnCompleted
	e.V = VTurnCompleted
	return json.Marshal(data(e))
}

// MarshalJSON writes the data with "v" = VMessageSent.
func (e MessageSent) MarshalJSON() ([]byte, error) {
	type data MessageSent
	e.V = VMessageSent
	return json.Marshal(data(e))
}

// MarshalJSON writes the data with "v" = VModeChanged.
func (e ModeChanged) MarshalJSON() ([]byte, error) {
	type data ModeChanged
	e.V = VModeChanged
	return json.Marshal(data(e))
}

// MarshalJSON writes the data with "v" = VStderr.
func (e Stderr) MarshalJSON() ([]byte, error) {
	type data Stderr
	e.V = VStderr
	return json.Marshal(data(e))
}

// MarshalJSON writes the data with "v" = VLimitNotice.
func (e LimitNotice) MarshalJSON() ([]byte, error) {
	type data LimitNotice
	e.V = VLimitNotice
	return json.Marshal(data(e))
}

// MarshalJSON writes the data with "v" = VMalformedLine.
func (e MalformedLine) MarshalJSON() ([]byte, error) {
	type data MalformedLine
	e.V = VMalformedLine
	return json.Marshal(data(e))
}

// MarshalJSON writes the data with "v" = VApprovalRequested.
func (e ApprovalRequested) MarshalJSON() ([]byte, error) {
	type data ApprovalRequested
	e.V = VApprovalRequested
	return json.Marshal(data(e))
}

// MarshalJSON writes the data with "v" = VApprovalResolved.
func (e ApprovalResolved) MarshalJSON() ([]byte, error) {
	type data ApprovalResolved
	e.V = VApprovalResolved
	return json.Marshal(data(e))
}
