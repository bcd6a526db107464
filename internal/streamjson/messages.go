package streamjson

import "encoding/json"

// System subtypes seen from the CLI.
const (
	SystemInit            = "init"
	SystemStatus          = "status"
	SystemCompactBoundary = "compact_boundary"
	SystemHookStarted     = "hook_started"
	SystemHookResponse    = "hook_response"
)

// Result subtypes. Every subtype but ResultSuccess comes with IsError set.
const (
	ResultSuccess              = "success"
	ResultErrorMaxTurns        = "error_max_turns"
	ResultErrorDuringExecution = "error_during_execution"
	ResultErrorMaxBudgetUSD    = "error_max_budget_usd"
)

// System is a "system" line: session initialisation ("init"), status
// changes, compaction boundaries and hook progress. Fields that do not apply
// to the subtype are zero.
type System struct {
	Subtype   string
	SessionID string
	UUID      string

	// init
	CWD               string
	Model             string
	Tools             []string
	MCPServers        json.RawMessage // [{"name":...,"status":...}]
	PermissionMode    PermissionMode
	ClaudeCodeVersion string
	APIKeySource      string
	SlashCommands     []string
	OutputStyle       string

	// status
	Status string

	// hook_started, hook_response
	HookID    string
	HookName  string
	HookEvent string
	ExitCode  *int // nil when absent, so that 0 means a real exit status
	Outcome   string
	Stdout    string
	Stderr    string
}

// APIMessage is the Messages-API message inside assistant and user lines.
// Content is kept raw and decoded on demand by Blocks: most lines are only
// forwarded, so parsing every block up front would be wasted work.
type APIMessage struct {
	ID         string          `json:"id,omitempty"`
	Role       string          `json:"role"`
	Model      string          `json:"model,omitempty"`
	Content    json.RawMessage `json:"content"`
	StopReason string          `json:"stop_reason,omitempty"`
	Usage      Usage           `json:"usage"`
}

// AssistantMessage is an "assistant" line: one complete model message
// (text, thinking and tool_use blocks).
type AssistantMessage struct {
	Message         APIMessage
	SessionID       string
	UUID            string
	ParentToolUseID string // set inside sub-agent (Task) runs
	Error           string // set on synthetic API-error messages, e.g. "rate_limit"
}

// Text returns the text blocks joined with "\n".
func (a AssistantMessage) Text() string { return a.Message.Text() }

// ToolUses returns the tool_use blocks in order.
func (a AssistantMessage) ToolUses() []ToolUse { return a.Message.ToolUses() }

// UserTurn is a "user" line: the results of tool calls, or an echo of a
// prompt (IsReplay, e.g. slash-command output). It is not named UserMessage
// because that is the encoder for the user lines we send.
type UserTurn struct {
	Message         APIMessage
	SessionID       string
	UUID            string
	ParentToolUseID string
	IsReplay        bool
	// ToolUseResult is the tool's own structured result (for Bash: stdout,
	// stderr, interrupted, ...); its shape depends on the tool.
	ToolUseResult json.RawMessage
}

// Text returns the text blocks joined with "\n" (or the content itself when
// it is a plain string).
func (u UserTurn) Text() string { return u.Message.Text() }

// ToolResults returns the tool_result blocks in order.
func (u UserTurn) ToolResults() []ToolResult { return u.Message.ToolResults() }

// Result is the "result" line that ends a turn.
type Result struct {
	Subtype       string
	IsError       bool
	NumTurns      int
	DurationMS    int64
	DurationAPIMS int64
	TotalCostUSD  float64
	Usage         Usage
	// ModelUsage maps model name to per-model usage and cost (camelCase
	// keys, unlike Usage); kept raw because its keys vary by model.
	ModelUsage        json.RawMessage
	SessionID         string
	UUID              string
	Result            string // the final text; empty on error subtypes
	PermissionDenials json.RawMessage
	Errors            []string // error subtypes of newer CLIs list reasons here
}

// StreamEvent is a "stream_event" line (with --include-partial-messages): one
// raw Messages-API streaming event such as content_block_delta.
type StreamEvent struct {
	Event           json.RawMessage
	SessionID       string
	UUID            string
	ParentToolUseID string
}

// EventType returns the "type" of the wrapped event, e.g.
// "content_block_delta", or "" if it has none.
func (s StreamEvent) EventType() string {
	var e struct {
		Type string `json:"type"`
	}
	unmarshalLoose(s.Event, &e)
	return e.Type
}

// ControlCancelRequest is a "control_cancel_request" line: the CLI abandoned
// the control request with this ID (for example after an interrupt). No
// answer is expected.
type ControlCancelRequest struct {
	RequestID string
}

// ConversationID returns the Claude conversation ID (the value for --resume)
// that m carries, following seed 000 §12.1: the session_id of assistant,
// user, result, tool_use and tool_result lines. System lines are skipped
// because the session may not be fully initialised yet, stream events because
// the final messages are authoritative, and control messages because they
// are protocol, not conversation. The bool is false when m carries no ID.
func ConversationID(m Message) (string, bool) {
	switch m.Type {
	case TypeAssistant, TypeUser, TypeResult, TypeToolUse, TypeToolResult:
		return m.SessionID, m.SessionID != ""
	}
	return "", false
}
