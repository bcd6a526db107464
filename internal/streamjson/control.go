package streamjson

import (
	"encoding/json"
	"errors"
)

// Control request subtypes.
const (
	// From the CLI.
	SubtypeCanUseTool   = "can_use_tool"
	SubtypeHookCallback = "hook_callback"
	// From us.
	SubtypeInitialize        = "initialize"
	SubtypeSetPermissionMode = "set_permission_mode"
	SubtypeSetModel          = "set_model"
	SubtypeInterrupt         = "interrupt"
)

// Control response subtypes.
const (
	ResponseSuccess = "success"
	ResponseError   = "error"
)

// ErrNoRequest is returned when encoding a ControlRequest whose Request is nil.
var ErrNoRequest = errors.New("control request has no request body")

// ControlRequest is a "control_request" line, in either direction.
//
// Decoded from the CLI, Request is a *CanUseToolRequest, *HookCallbackRequest
// or, for any other subtype, *OtherControlRequest (our own initialize,
// set_permission_mode, set_model and interrupt lines decode to their types
// too, which a fake CLI in tests can use). To send one, set Request to an
// InitializeRequest, SetPermissionModeRequest, SetModelRequest or
// InterruptRequest (or any value that marshals to an object with a
// "subtype") and call Encode.
type ControlRequest struct {
	RequestID string
	Request   any
}

// subtyper is implemented by the request types of this package.
type subtyper interface{ subtype() string }

// Subtype returns the request's subtype, or "" if Request is not one of this
// package's request types.
func (r ControlRequest) Subtype() string {
	if s, ok := r.Request.(subtyper); ok {
		return s.subtype()
	}
	return ""
}

// MarshalJSON encodes the full line:
// {"type":"control_request","request_id":ID,"request":{"subtype":...}}.
func (r ControlRequest) MarshalJSON() ([]byte, error) {
	if r.Request == nil {
		return nil, ErrNoRequest
	}
	return marshalCompact(struct {
		Type      string `json:"type"`
		RequestID string `json:"request_id"`
		Request   any    `json:"request"`
	}{TypeControlRequest, r.RequestID, r.Request})
}

// Encode returns the line to write to the CLI's stdin (without newline).
func (r ControlRequest) Encode() ([]byte, error) { return r.MarshalJSON() }

// CanUseToolRequest asks whether a tool may run. Answer it with
// ControlResponseSuccess(requestID, PermissionAllow(...) or PermissionDeny(...)).
type CanUseToolRequest struct {
	ToolName    string          `json:"tool_name"`
	DisplayName string          `json:"display_name,omitempty"`
	Input       json.RawMessage `json:"input"`
	ToolUseID   string          `json:"tool_use_id,omitempty"`
	Description string          `json:"description,omitempty"`
	// PermissionSuggestions are PermissionUpdates the CLI proposes for
	// "always allow"; see Suggestions.
	PermissionSuggestions json.RawMessage `json:"permission_suggestions,omitempty"`
	BlockedPath           string          `json:"blocked_path,omitempty"`
	DecisionReason        string          `json:"decision_reason,omitempty"`
	DecisionReasonType    string          `json:"decision_reason_type,omitempty"`
	AgentID               string          `json:"agent_id,omitempty"`
}

func (CanUseToolRequest) subtype() string { return SubtypeCanUseTool }

// MarshalJSON adds the subtype.
func (r CanUseToolRequest) MarshalJSON() ([]byte, error) {
	type plain CanUseToolRequest
	return marshalWithSubtype(SubtypeCanUseTool, plain(r))
}

// Suggestions decodes PermissionSuggestions, skipping what does not fit.
func (r CanUseToolRequest) Suggestions() []PermissionUpdate {
	var s []PermissionUpdate
	unmarshalLoose(r.PermissionSuggestions, &s)
	return s
}

// HookCallbackRequest asks us to run the hook callback we registered under
// CallbackID in InitializeRequest. Answer it with ControlResponseSuccess and
// a HookOutput.
type HookCallbackRequest struct {
	CallbackID string          `json:"callback_id"`
	Input      json.RawMessage `json:"input"`
	ToolUseID  string          `json:"tool_use_id,omitempty"`
}

func (HookCallbackRequest) subtype() string { return SubtypeHookCallback }

// MarshalJSON adds the subtype.
func (r HookCallbackRequest) MarshalJSON() ([]byte, error) {
	type plain HookCallbackRequest
	return marshalWithSubtype(SubtypeHookCallback, plain(r))
}

// HookInput decodes Input, leaving fields that do not fit at zero.
func (r HookCallbackRequest) HookInput() HookInput {
	var in HookInput
	unmarshalLoose(r.Input, &in)
	return in
}

// HookInput is what the CLI passes to a hook (seed 000 §9.3). Which fields are
// set depends on HookEventName.
type HookInput struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	CWD            string          `json:"cwd"`
	PermissionMode PermissionMode  `json:"permission_mode,omitempty"`
	HookEventName  string          `json:"hook_event_name"`
	ToolName       string          `json:"tool_name,omitempty"`
	ToolInput      json.RawMessage `json:"tool_input,omitempty"`
	ToolUseID      string          `json:"tool_use_id,omitempty"`
	StopHookActive bool            `json:"stop_hook_active,omitempty"`
}

// InitializeRequest is the first line we send: it registers hook callbacks
// by event name ("PreToolUse", "Stop", ...).
type InitializeRequest struct {
	Hooks map[string][]HookMatcher `json:"hooks,omitempty"`
}

func (InitializeRequest) subtype() string { return SubtypeInitialize }

// MarshalJSON adds the subtype.
func (r InitializeRequest) MarshalJSON() ([]byte, error) {
	type plain InitializeRequest
	return marshalWithSubtype(SubtypeInitialize, plain(r))
}

// HookMatcher routes the tools whose names match the Matcher regular
// expression (all tools when empty) to our callbacks.
type HookMatcher struct {
	Matcher         string   `json:"matcher,omitempty"`
	HookCallbackIDs []string `json:"hookCallbackIds"`
	Timeout         int      `json:"timeout,omitempty"` // seconds
}

// SetPermissionModeRequest changes the session's permission mode.
type SetPermissionModeRequest struct {
	Mode PermissionMode `json:"mode"`
}

func (SetPermissionModeRequest) subtype() string { return SubtypeSetPermissionMode }

// MarshalJSON adds the subtype.
func (r SetPermissionModeRequest) MarshalJSON() ([]byte, error) {
	type plain SetPermissionModeRequest
	return marshalWithSubtype(SubtypeSetPermissionMode, plain(r))
}

// SetModelRequest changes the model of the session's next requests. An empty
// Model is sent without the key, which the CLI takes as "the default model"
// (as the official SDKs' setModel() with no argument does). The CLI answers
// {"model":…} and echoes the change as a replayed user line.
type SetModelRequest struct {
	Model string `json:"model,omitempty"`
}

func (SetModelRequest) subtype() string { return SubtypeSetModel }

// MarshalJSON adds the subtype.
func (r SetModelRequest) MarshalJSON() ([]byte, error) {
	type plain SetModelRequest
	return marshalWithSubtype(SubtypeSetModel, plain(r))
}

// InterruptRequest asks the CLI to stop the running turn gracefully.
type InterruptRequest struct{}

func (InterruptRequest) subtype() string { return SubtypeInterrupt }

// MarshalJSON adds the subtype.
func (InterruptRequest) MarshalJSON() ([]byte, error) {
	return []byte(`{"subtype":"interrupt"}`), nil
}

// OtherControlRequest is a control request of a subtype this package does not
// model; Raw is the whole "request" object.
type OtherControlRequest struct {
	Subtype string
	Raw     json.RawMessage
}

func (r OtherControlRequest) subtype() string { return r.Subtype }

// MarshalJSON writes Raw back unchanged.
func (r OtherControlRequest) MarshalJSON() ([]byte, error) {
	if len(r.Raw) == 0 {
		return []byte("null"), nil
	}
	return r.Raw, nil
}

// requestWire is the union of all request fields: one pass decodes any
// subtype.
type requestWire struct {
	Subtype               string                   `json:"subtype"`
	ToolName              string                   `json:"tool_name"`
	DisplayName           string                   `json:"display_name"`
	Input                 json.RawMessage          `json:"input"`
	ToolUseID             string                   `json:"tool_use_id"`
	Description           string                   `json:"description"`
	PermissionSuggestions json.RawMessage          `json:"permission_suggestions"`
	BlockedPath           string                   `json:"blocked_path"`
	DecisionReason        string                   `json:"decision_reason"`
	DecisionReasonType    string                   `json:"decision_reason_type"`
	AgentID               string                   `json:"agent_id"`
	CallbackID            string                   `json:"callback_id"`
	Hooks                 map[string][]HookMatcher `json:"hooks"`
	Mode                  PermissionMode           `json:"mode"`
	Model                 string                   `json:"model"`
}

func decodeControlRequest(requestID string, raw json.RawMessage) *ControlRequest {
	var w requestWire
	unmarshalLoose(raw, &w)
	r := &ControlRequest{RequestID: requestID}
	switch w.Subtype {
	case SubtypeCanUseTool:
		r.Request = &CanUseToolRequest{
			ToolName:              w.ToolName,
			DisplayName:           w.DisplayName,
			Input:                 w.Input,
			ToolUseID:             w.ToolUseID,
			Description:           w.Description,
			PermissionSuggestions: w.PermissionSuggestions,
			BlockedPath:           w.BlockedPath,
			DecisionReason:        w.DecisionReason,
			DecisionReasonType:    w.DecisionReasonType,
			AgentID:               w.AgentID,
		}
	case SubtypeHookCallback:
		r.Request = &HookCallbackRequest{CallbackID: w.CallbackID, Input: w.Input, ToolUseID: w.ToolUseID}
	case SubtypeInitialize:
		r.Request = &InitializeRequest{Hooks: w.Hooks}
	case SubtypeSetPermissionMode:
		r.Request = &SetPermissionModeRequest{Mode: w.Mode}
	case SubtypeSetModel:
		r.Request = &SetModelRequest{Model: w.Model}
	case SubtypeInterrupt:
		r.Request = &InterruptRequest{}
	default:
		r.Request = &OtherControlRequest{Subtype: w.Subtype, Raw: raw}
	}
	return r
}

// ControlResponse is a "control_response" line: the CLI's answer to one of
// our control requests (or, when a fake CLI decodes our lines, ours to its).
type ControlResponse struct {
	Subtype   string          `json:"subtype"` // ResponseSuccess or ResponseError
	RequestID string          `json:"request_id"`
	Response  json.RawMessage `json:"response,omitempty"`
	Error     string          `json:"error,omitempty"`
	ErrorCode string          `json:"error_code,omitempty"` // newer CLIs: e.g. ErrorInvalidMode
}

func decodeControlResponse(raw json.RawMessage) *ControlResponse {
	var r ControlResponse
	unmarshalLoose(raw, &r)
	return &r
}

// ControlResponseSuccess returns the line answering the CLI's control request
// requestID with response (a PermissionResult, a HookOutput, or any value
// that marshals to a JSON object). A nil response omits the field.
func ControlResponseSuccess(requestID string, response any) ([]byte, error) {
	if raw, ok := response.(json.RawMessage); ok && len(raw) == 0 {
		response = nil
	}
	return marshalCompact(controlResponseLine{
		Type: TypeControlResponse,
		Response: successBody{
			Subtype:   ResponseSuccess,
			RequestID: requestID,
			Response:  response,
		},
	})
}

// ControlResponseError returns the line telling the CLI that its control
// request requestID failed with msg.
func ControlResponseError(requestID, msg string) []byte {
	b, err := marshalCompact(controlResponseLine{
		Type: TypeControlResponse,
		Response: errorBody{
			Subtype:   ResponseError,
			RequestID: requestID,
			Error:     msg,
		},
	})
	if err != nil {
		panic("streamjson: encoding strings cannot fail: " + err.Error())
	}
	return b
}

type controlResponseLine struct {
	Type     string `json:"type"`
	Response any    `json:"response"`
}

type successBody struct {
	Subtype   string `json:"subtype"`
	RequestID string `json:"request_id"`
	Response  any    `json:"response,omitempty"`
}

type errorBody struct {
	Subtype   string `json:"subtype"`
	RequestID string `json:"request_id"`
	Error     string `json:"error"`
}
