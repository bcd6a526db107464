package mockapi

import (
	"net/http"
	"time"
)

// Script is the model's side of the main conversation: Script[i] answers the
// request that already carries i assistant messages.
type Script []Turn

// Turn is one assistant message of the main conversation.
type Turn struct {
	// Blocks are the content blocks, streamed in order.
	Blocks []Block
	// StopReason overrides the stop reason; empty means "tool_use" when the
	// turn holds a tool call and "end_turn" otherwise.
	StopReason string
	// Usage is reported in message_start and message_delta; the zero value
	// means DefaultUsage.
	Usage Usage
	// DeltaDelay is slept before every content_block_delta, so a test can
	// watch a reply arrive slowly or interrupt it halfway.
	DeltaDelay time.Duration
	// Fail, when set, makes the server answer this turn with an HTTP error
	// a number of times before it streams the turn.
	Fail *Failure
}

// BlockType names a content block type of the Messages API.
type BlockType string

// Content block types a Turn can hold.
const (
	BlockText     BlockType = "text"
	BlockToolUse  BlockType = "tool_use"
	BlockThinking BlockType = "thinking"
)

// Block is one content block of a scripted assistant message.
type Block struct {
	Type BlockType
	// Text is the text of a text block or the thinking of a thinking block.
	Text string
	// Name and Input describe a tool call.
	Name  string
	Input map[string]any
	// ID is the tool_use id; empty means a fresh "toolu_..." id each time
	// the turn is served.
	ID string
}

// Text returns a text block.
func Text(s string) Block { return Block{Type: BlockText, Text: s} }

// ToolUse returns a tool call block with a generated id.
func ToolUse(name string, input map[string]any) Block {
	return Block{Type: BlockToolUse, Name: name, Input: input}
}

// Thinking returns an extended-thinking block (sent with a dummy signature).
func Thinking(s string) Block { return Block{Type: BlockThinking, Text: s} }

// TextTurn is a turn that only says s and ends the turn.
func TextTurn(s string) Turn { return Turn{Blocks: []Block{Text(s)}} }

// ToolTurn is a turn that only calls one tool.
func ToolTurn(name string, input map[string]any) Turn {
	return Turn{Blocks: []Block{ToolUse(name, input)}}
}

// Usage holds the token figures the server reports for a turn.
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// DefaultUsage is reported for turns whose Usage is the zero value, and for
// side tasks and the final "done" reply.
var DefaultUsage = Usage{InputTokens: 10, OutputTokens: 5}

// Failure is an HTTP error served instead of a turn.
type Failure struct {
	// Status is the HTTP status: 429, 500, 529 (overloaded), or any other.
	Status int
	// Times is how many requests for this turn fail before one succeeds;
	// 0 means once, a negative value means every time.
	Times int
	// RetryAfter, when positive, is sent as retry-after (whole seconds,
	// rounded up) and retry-after-ms.
	RetryAfter time.Duration
	// Message is the error message; empty means a stock one for Status.
	Message string
}

func (f *Failure) times() int {
	if f.Times == 0 {
		return 1
	}
	return f.Times
}

// errorType maps a status to the Anthropic error type the SDKs expect.
func errorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	default:
		return "api_error"
	}
}

func (f *Failure) message() string {
	if f.Message != "" {
		return f.Message
	}
	switch f.Status {
	case http.StatusTooManyRequests:
		return "mockapi: rate limited"
	case 529:
		return "Overloaded"
	default:
		return "mockapi: scripted failure"
	}
}
