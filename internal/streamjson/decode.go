package streamjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Line types the CLI writes (and, for user and control messages, reads).
const (
	TypeSystem               = "system"
	TypeAssistant            = "assistant"
	TypeUser                 = "user"
	TypeResult               = "result"
	TypeStreamEvent          = "stream_event"
	TypeControlRequest       = "control_request"
	TypeControlResponse      = "control_response"
	TypeControlCancelRequest = "control_cancel_request"
	// TypeToolUse and TypeToolResult are top-level types of older CLIs
	// (seed 000 §3.5). They have no typed view but count for ConversationID.
	TypeToolUse    = "tool_use"
	TypeToolResult = "tool_result"
)

var (
	// ErrEmptyLine marks a line that is empty or only whitespace. Readers
	// usually skip such lines rather than report them.
	ErrEmptyLine = errors.New("empty line")
	// ErrNotObject marks a line that is valid JSON but not an object.
	ErrNotObject = errors.New("not a JSON object")
)

// maxSnippet bounds how much of a bad line a DecodeError quotes, so that a
// 10 MB garbage line does not end up in a log message.
const maxSnippet = 120

// DecodeError reports a line Decode could not turn into a Message.
type DecodeError struct {
	// Snippet is the start of the offending line, about maxSnippet bytes,
	// cut at a rune boundary, with invalid UTF-8 replaced by U+FFFD.
	Snippet string
	// Len is the full length of the line in bytes.
	Len int
	// Err is ErrEmptyLine, ErrNotObject or the encoding/json error.
	Err error
}

func newDecodeError(line []byte, err error) *DecodeError {
	s := line
	if len(s) > maxSnippet {
		// Cut before a rune that would straddle the limit (at most UTFMax-1
		// bytes back; invalid bytes are replaced below anyway).
		cut := maxSnippet
		for i := 1; i < utf8.UTFMax && cut > 0 && !utf8.RuneStart(line[cut]); i++ {
			cut--
		}
		s = s[:cut]
	}
	return &DecodeError{Snippet: strings.ToValidUTF8(string(s), "\uFFFD"), Len: len(line), Err: err}
}

func (e *DecodeError) Error() string {
	more := ""
	if e.Len > maxSnippet {
		more = "…"
	}
	return fmt.Sprintf("streamjson: cannot decode CLI line (%d bytes) %q%s: %v", e.Len, e.Snippet, more, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// Message is one decoded line of the CLI's output.
//
// Raw, Type and Subtype are always set on success. At most one of the typed
// views is non-nil, matching Type; for any other type (see Unknown) all are nil
// and Raw is the whole story.
type Message struct {
	// Raw is a copy of the line exactly as given to Decode. Forward this,
	// never a re-encoding of the typed view.
	Raw json.RawMessage
	// Type is the top-level "type"; empty when absent or not a string.
	Type string
	// Subtype is the top-level "subtype". For control_request and
	// control_response lines, which have none, it is the nested
	// request.subtype ("can_use_tool", "hook_callback", ...) or
	// response.subtype ("success", "error").
	Subtype string
	// SessionID is the top-level "session_id" whatever the type. Use
	// ConversationID to decide whether it names the conversation.
	SessionID string
	// UUID is the top-level "uuid" the CLI puts on most lines.
	UUID string

	System               *System
	Assistant            *AssistantMessage
	User                 *UserTurn
	Result               *Result
	StreamEvent          *StreamEvent
	ControlRequest       *ControlRequest
	ControlResponse      *ControlResponse
	ControlCancelRequest *ControlCancelRequest
}

// Unknown reports whether m has no typed view: its type is not one this
// package models, or it has no type at all.
func (m Message) Unknown() bool {
	return m.System == nil && m.Assistant == nil && m.User == nil && m.Result == nil &&
		m.StreamEvent == nil && m.ControlRequest == nil && m.ControlResponse == nil &&
		m.ControlCancelRequest == nil
}

// wireLine is the union of the top-level fields of every line type, so that a
// line is decoded in a single json.Unmarshal pass whatever its type. Fields
// whose shape varies between types or that are rarely read stay raw.
type wireLine struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`
	UUID      string `json:"uuid"`

	// system
	CWD               string          `json:"cwd"`
	Model             string          `json:"model"`
	Tools             []string        `json:"tools"`
	MCPServers        json.RawMessage `json:"mcp_servers"`
	PermissionMode    PermissionMode  `json:"permissionMode"`
	ClaudeCodeVersion string          `json:"claude_code_version"`
	APIKeySource      string          `json:"apiKeySource"`
	SlashCommands     []string        `json:"slash_commands"`
	OutputStyle       string          `json:"output_style"`
	Status            string          `json:"status"`
	HookID            string          `json:"hook_id"`
	HookName          string          `json:"hook_name"`
	HookEvent         string          `json:"hook_event"`
	ExitCode          json.RawMessage `json:"exit_code"`
	Outcome           string          `json:"outcome"`
	Stdout            string          `json:"stdout"`
	Stderr            string          `json:"stderr"`

	// assistant, user, stream_event
	Message         APIMessage      `json:"message"`
	ParentToolUseID string          `json:"parent_tool_use_id"`
	IsReplay        bool            `json:"isReplay"`
	ToolUseResult   json.RawMessage `json:"tool_use_result"`
	Event           json.RawMessage `json:"event"`
	Error           string          `json:"error"`

	// result
	IsError           bool            `json:"is_error"`
	NumTurns          int             `json:"num_turns"`
	DurationMS        int64           `json:"duration_ms"`
	DurationAPIMS     int64           `json:"duration_api_ms"`
	TotalCostUSD      float64         `json:"total_cost_usd"`
	Usage             Usage           `json:"usage"`
	ModelUsage        json.RawMessage `json:"modelUsage"`
	Result            string          `json:"result"`
	PermissionDenials json.RawMessage `json:"permission_denials"`
	Errors            []string        `json:"errors"`

	// control messages
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`
	Response  json.RawMessage `json:"response"`
}

// Decode parses one NDJSON line from the CLI. The line may carry surrounding
// whitespace (a trailing "\r\n" included); Raw keeps it as given. Decode
// copies line, so the caller may reuse its buffer.
//
// The error, if any, is a *DecodeError wrapping ErrEmptyLine, ErrNotObject
// or the encoding/json syntax error. A well-formed object never fails: fields
// of an unexpected shape are left at their zero values.
func Decode(line []byte) (Message, error) {
	if err := checkObject(line); err != nil {
		return Message{}, newDecodeError(line, err)
	}
	var w wireLine
	if err := json.Unmarshal(line, &w); err != nil && !isShapeError(err) {
		return Message{}, newDecodeError(line, err)
	}
	m := Message{
		Raw:       append(json.RawMessage(nil), line...),
		Type:      w.Type,
		Subtype:   w.Subtype,
		SessionID: w.SessionID,
		UUID:      w.UUID,
	}
	w.fill(&m)
	return m, nil
}

// checkObject rejects blank lines and JSON values other than objects up front:
// json.Unmarshal would report an array as a type error, which Decode
// otherwise tolerates.
func checkObject(line []byte) error {
	for _, c := range line {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			return nil
		}
		var v json.RawMessage
		if err := json.Unmarshal(line, &v); err != nil {
			return err
		}
		return ErrNotObject
	}
	return ErrEmptyLine
}

// isShapeError reports whether err only says that some value did not fit its
// Go field. encoding/json documents that it then still decodes everything else
// "as best it can", which is the leniency we want.
func isShapeError(err error) bool {
	var te *json.UnmarshalTypeError
	return errors.As(err, &te)
}

// unmarshalLoose decodes data into v, tolerating shape errors. It reports
// false only when data is not valid JSON.
func unmarshalLoose(data []byte, v any) bool {
	err := json.Unmarshal(data, v)
	return err == nil || isShapeError(err)
}

func (w *wireLine) fill(m *Message) {
	switch w.Type {
	case TypeSystem:
		m.System = w.system()
	case TypeAssistant:
		m.Assistant = &AssistantMessage{
			Message:         w.Message,
			SessionID:       w.SessionID,
			UUID:            w.UUID,
			ParentToolUseID: w.ParentToolUseID,
			Error:           w.Error,
		}
	case TypeUser:
		m.User = &UserTurn{
			Message:         w.Message,
			SessionID:       w.SessionID,
			UUID:            w.UUID,
			ParentToolUseID: w.ParentToolUseID,
			IsReplay:        w.IsReplay,
			ToolUseResult:   w.ToolUseResult,
		}
	case TypeResult:
		m.Result = w.result()
	case TypeStreamEvent:
		m.StreamEvent = &StreamEvent{
			Event:           w.Event,
			SessionID:       w.SessionID,
			UUID:            w.UUID,
			ParentToolUseID: w.ParentToolUseID,
		}
	case TypeControlRequest:
		m.ControlRequest = decodeControlRequest(w.RequestID, w.Request)
		if m.Subtype == "" {
			m.Subtype = m.ControlRequest.Subtype()
		}
	case TypeControlResponse:
		m.ControlResponse = decodeControlResponse(w.Response)
		if m.Subtype == "" {
			m.Subtype = m.ControlResponse.Subtype
		}
	case TypeControlCancelRequest:
		m.ControlCancelRequest = &ControlCancelRequest{RequestID: w.RequestID}
	}
}

func (w *wireLine) system() *System {
	return &System{
		Subtype:           w.Subtype,
		SessionID:         w.SessionID,
		UUID:              w.UUID,
		CWD:               w.CWD,
		Model:             w.Model,
		Tools:             w.Tools,
		MCPServers:        w.MCPServers,
		PermissionMode:    w.PermissionMode,
		ClaudeCodeVersion: w.ClaudeCodeVersion,
		APIKeySource:      w.APIKeySource,
		SlashCommands:     w.SlashCommands,
		OutputStyle:       w.OutputStyle,
		Status:            w.Status,
		HookID:            w.HookID,
		HookName:          w.HookName,
		HookEvent:         w.HookEvent,
		ExitCode:          intPtr(w.ExitCode),
		Outcome:           w.Outcome,
		Stdout:            w.Stdout,
		Stderr:            w.Stderr,
	}
}

func (w *wireLine) result() *Result {
	return &Result{
		Subtype:           w.Subtype,
		IsError:           w.IsError,
		NumTurns:          w.NumTurns,
		DurationMS:        w.DurationMS,
		DurationAPIMS:     w.DurationAPIMS,
		TotalCostUSD:      w.TotalCostUSD,
		Usage:             w.Usage,
		ModelUsage:        w.ModelUsage,
		SessionID:         w.SessionID,
		UUID:              w.UUID,
		Result:            w.Result,
		PermissionDenials: w.PermissionDenials,
		Errors:            w.Errors,
	}
}

// intPtr returns the integer raw holds, or nil when raw is missing, null or
// not an integer. Decoding exit_code into a *int directly would leave a
// pointer to 0 behind for a value of the wrong shape, which reads as success.
func intPtr(raw json.RawMessage) *int {
	n, err := strconv.Atoi(string(raw))
	if err != nil {
		return nil
	}
	return &n
}
