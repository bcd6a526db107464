package streamjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func mustDecode(t *testing.T, line string) Message {
	t.Helper()
	m, err := Decode([]byte(line))
	if err != nil {
		t.Fatalf("Decode(%.60s…): %v", line, err)
	}
	if !bytes.Equal(m.Raw, []byte(line)) {
		t.Fatalf("Raw = %s, want the input unchanged", m.Raw)
	}
	return m
}

func TestDecodeTypes(t *testing.T) {
	tests := []struct {
		name        string
		line        string
		wantType    string
		wantSubtype string
		check       func(t *testing.T, m Message)
	}{
		{"system init", lineSystemInit, TypeSystem, SystemInit, func(t *testing.T, m Message) {
			s := m.System
			if s == nil {
				t.Fatal("System view is nil")
			}
			if s.SessionID != sessionID || s.CWD != "/home/dev/project" || s.Model != "claude-sonnet-4-5-20250929" ||
				s.PermissionMode != PermissionModeDefault || s.ClaudeCodeVersion != "2.1.330" ||
				s.APIKeySource != "ANTHROPIC_API_KEY" || s.OutputStyle != "default" {
				t.Errorf("System = %+v", s)
			}
			if len(s.Tools) != 11 || s.Tools[1] != "Bash" || len(s.SlashCommands) != 5 {
				t.Errorf("Tools = %v, SlashCommands = %v", s.Tools, s.SlashCommands)
			}
			if string(s.MCPServers) != `[{"name":"github","status":"connected"}]` {
				t.Errorf("MCPServers = %s", s.MCPServers)
			}
		}},
		{"system hook_response", lineSystemHookResponse, TypeSystem, SystemHookResponse, func(t *testing.T, m Message) {
			s := m.System
			if s.HookEvent != "PreToolUse" || s.HookName != "PreToolUse:Bash" || s.Outcome != "success" ||
				s.ExitCode == nil || *s.ExitCode != 0 {
				t.Errorf("System = %+v", s)
			}
		}},
		{"assistant tool_use", lineAssistantToolUse, TypeAssistant, "", func(t *testing.T, m Message) {
			a := m.Assistant
			if a == nil {
				t.Fatal("Assistant view is nil")
			}
			if a.SessionID != sessionID || a.ParentToolUseID != "" || a.UUID == "" {
				t.Errorf("Assistant = %+v", a)
			}
			msg := a.Message
			if msg.Role != "assistant" || msg.ID != "msg_01XFDUDYJgAACzvnptvVoYEL" || msg.Model == "" || msg.StopReason != "" {
				t.Errorf("Message = %+v", msg)
			}
			wantUsage := Usage{InputTokens: 3, OutputTokens: 26, CacheReadInputTokens: 12034, CacheCreationInputTokens: 1520}
			if msg.Usage != wantUsage {
				t.Errorf("Usage = %+v, want %+v", msg.Usage, wantUsage)
			}
			if got := a.Text(); got != "I'll run that for you." {
				t.Errorf("Text() = %q", got)
			}
			uses := a.ToolUses()
			if len(uses) != 1 || uses[0].ID != "toolu_01JfiC8Xktjdoe7cUucSrajd" || uses[0].Name != "Bash" ||
				string(uses[0].Input) != `{"command":"echo start && sleep 1","description":"Print start then sleep"}` {
				t.Errorf("ToolUses() = %+v", uses)
			}
		}},
		{"assistant text and thinking", lineAssistantText, TypeAssistant, "", func(t *testing.T, m Message) {
			a := m.Assistant
			if got := a.Text(); got != "The command printed:\nstart" {
				t.Errorf("Text() = %q", got)
			}
			if a.ToolUses() != nil {
				t.Errorf("ToolUses() = %v, want none", a.ToolUses())
			}
			blocks := a.Message.Blocks()
			if len(blocks) != 3 || blocks[0].Type != BlockThinking || blocks[0].Thinking != "The command printed start." ||
				blocks[0].Signature == "" {
				t.Errorf("Blocks() = %+v", blocks)
			}
			if a.Message.StopReason != "end_turn" {
				t.Errorf("StopReason = %q", a.Message.StopReason)
			}
		}},
		{"user tool_result", lineUserToolResult, TypeUser, "", func(t *testing.T, m Message) {
			u := m.User
			if u == nil {
				t.Fatal("User view is nil")
			}
			if u.SessionID != sessionID || u.IsReplay {
				t.Errorf("User = %+v", u)
			}
			if string(u.ToolUseResult) != `{"stdout":"start","stderr":"","interrupted":false,"isImage":false}` {
				t.Errorf("ToolUseResult = %s", u.ToolUseResult)
			}
			rs := u.ToolResults()
			if len(rs) != 1 || rs[0].ToolUseID != "toolu_01JfiC8Xktjdoe7cUucSrajd" || rs[0].IsError {
				t.Fatalf("ToolResults() = %+v", rs)
			}
			if c := rs[0].Parse(); c.Kind != ToolResultText || c.Text != "start" {
				t.Errorf("Parse() = %+v", c)
			}
		}},
		{"user replay with string content", lineUserReplay, TypeUser, "", func(t *testing.T, m Message) {
			u := m.User
			if !u.IsReplay {
				t.Error("IsReplay = false")
			}
			if got := u.Text(); got != "<local-command-stdout>Total cost: $0.0123</local-command-stdout>" {
				t.Errorf("Text() = %q", got)
			}
		}},
		{"result success", lineResultSuccess, TypeResult, ResultSuccess, func(t *testing.T, m Message) {
			r := m.Result
			if r == nil {
				t.Fatal("Result view is nil")
			}
			if r.IsError || r.NumTurns != 2 || r.DurationMS != 5123 || r.DurationAPIMS != 4870 ||
				r.TotalCostUSD != 0.0123456 || r.SessionID != sessionID || r.Result != "The command printed:\nstart" {
				t.Errorf("Result = %+v", r)
			}
			wantUsage := Usage{InputTokens: 11, OutputTokens: 38, CacheReadInputTokens: 25588, CacheCreationInputTokens: 1520}
			if r.Usage != wantUsage {
				t.Errorf("Usage = %+v, want %+v", r.Usage, wantUsage)
			}
			if !strings.HasPrefix(string(r.ModelUsage), `{"claude-sonnet-4-5-20250929":{"inputTokens":11`) {
				t.Errorf("ModelUsage = %s", r.ModelUsage)
			}
			if string(r.PermissionDenials) != "[]" {
				t.Errorf("PermissionDenials = %s", r.PermissionDenials)
			}
		}},
		{"result error_max_turns", lineResultMaxTurns, TypeResult, ResultErrorMaxTurns, func(t *testing.T, m Message) {
			r := m.Result
			if !r.IsError || r.NumTurns != 3 || r.Result != "" || len(r.Errors) != 1 {
				t.Errorf("Result = %+v", r)
			}
		}},
		{"stream_event", lineStreamEvent, TypeStreamEvent, "", func(t *testing.T, m Message) {
			e := m.StreamEvent
			if e == nil {
				t.Fatal("StreamEvent view is nil")
			}
			if e.SessionID != sessionID || e.EventType() != "content_block_delta" ||
				!strings.Contains(string(e.Event), `"text_delta"`) {
				t.Errorf("StreamEvent = %+v", e)
			}
		}},
		{"control_request can_use_tool", lineCanUseTool, TypeControlRequest, SubtypeCanUseTool, func(t *testing.T, m Message) {
			cr := m.ControlRequest
			if cr == nil || cr.RequestID != "1f0c5d7e-0d8c-4f6b-9d0e-7a1b2c3d4e5f" || cr.Subtype() != SubtypeCanUseTool {
				t.Fatalf("ControlRequest = %+v", cr)
			}
			r, ok := cr.Request.(*CanUseToolRequest)
			if !ok {
				t.Fatalf("Request is %T", cr.Request)
			}
			if r.ToolName != "Bash" || r.DisplayName != "Bash" || r.ToolUseID != "toolu_01JfiC8Xktjdoe7cUucSrajd" ||
				r.Description != "Print start then sleep" || r.DecisionReasonType != "hook" || r.BlockedPath != "/etc/passwd" ||
				string(r.Input) != `{"command":"echo start && sleep 1","description":"Print start then sleep"}` {
				t.Errorf("CanUseToolRequest = %+v", r)
			}
			want := []PermissionUpdate{{Type: UpdateAddRules, Rules: []PermissionRuleValue{{ToolName: "Bash", RuleContent: "echo start:*"}},
				Behavior: "allow", Destination: DestinationLocalSettings}}
			if got := r.Suggestions(); !reflect.DeepEqual(got, want) {
				t.Errorf("Suggestions() = %+v, want %+v", got, want)
			}
		}},
		{"control_request hook_callback", lineHookCallback, TypeControlRequest, SubtypeHookCallback, func(t *testing.T, m Message) {
			r, ok := m.ControlRequest.Request.(*HookCallbackRequest)
			if !ok {
				t.Fatalf("Request is %T", m.ControlRequest.Request)
			}
			if r.CallbackID != "tool_approval" || r.ToolUseID != "toolu_01JfiC8Xktjdoe7cUucSrajd" {
				t.Errorf("HookCallbackRequest = %+v", r)
			}
			in := r.HookInput()
			if in.SessionID != sessionID || in.HookEventName != "PreToolUse" || in.ToolName != "Bash" ||
				in.PermissionMode != PermissionModeDefault || in.CWD != "/home/dev/project" ||
				!strings.HasSuffix(in.TranscriptPath, ".jsonl") || string(in.ToolInput) != `{"command":"echo hello"}` {
				t.Errorf("HookInput() = %+v", in)
			}
		}},
		{"control_request other subtype", lineControlRequestOther, TypeControlRequest, "mcp_message", func(t *testing.T, m Message) {
			r, ok := m.ControlRequest.Request.(*OtherControlRequest)
			if !ok {
				t.Fatalf("Request is %T", m.ControlRequest.Request)
			}
			if r.Subtype != "mcp_message" || !strings.HasPrefix(string(r.Raw), `{"subtype":"mcp_message","server_name":"ide"`) {
				t.Errorf("OtherControlRequest = %+v", r)
			}
		}},
		{"control_response initialize", lineControlResponseInit, TypeControlResponse, ResponseSuccess, func(t *testing.T, m Message) {
			r := m.ControlResponse
			if r == nil || r.RequestID != "r1" || r.Subtype != ResponseSuccess || r.Error != "" {
				t.Fatalf("ControlResponse = %+v", r)
			}
			var body struct {
				PID     int    `json:"pid"`
				Version string `json:"claude_code_version"`
			}
			if err := json.Unmarshal(r.Response, &body); err != nil || body.PID != 41872 || body.Version != "2.1.330" {
				t.Errorf("Response = %s (%v)", r.Response, err)
			}
		}},
		{"control_response set mode", lineControlResponseMode, TypeControlResponse, ResponseSuccess, func(t *testing.T, m Message) {
			if r := m.ControlResponse; r.RequestID != "r2" || string(r.Response) != `{"mode":"default"}` {
				t.Errorf("ControlResponse = %+v", r)
			}
		}},
		{"control_response error", lineControlResponseError, TypeControlResponse, ResponseError, func(t *testing.T, m Message) {
			if r := m.ControlResponse; r.RequestID != "r7" || r.Error != "Unsupported control request subtype: rewind_files" || r.Response != nil {
				t.Errorf("ControlResponse = %+v", r)
			}
		}},
		{"control_cancel_request", lineControlCancel, TypeControlCancelRequest, "", func(t *testing.T, m Message) {
			if c := m.ControlCancelRequest; c == nil || c.RequestID != "1f0c5d7e-0d8c-4f6b-9d0e-7a1b2c3d4e5f" {
				t.Errorf("ControlCancelRequest = %+v", c)
			}
		}},
		{"legacy tool_use has no view", lineLegacyToolUse, TypeToolUse, "", func(t *testing.T, m Message) {
			if !m.Unknown() || m.SessionID != "legacy-1" {
				t.Errorf("Unknown() = %v, SessionID = %q", m.Unknown(), m.SessionID)
			}
		}},
		{"unknown type", lineUnknownType, "rate_limit_event", "", func(t *testing.T, m Message) {
			if !m.Unknown() {
				t.Error("Unknown() = false")
			}
		}},
		{"no type", lineNoType, "", "", func(t *testing.T, m Message) {
			if !m.Unknown() || m.SessionID != "x" {
				t.Errorf("Unknown() = %v, SessionID = %q", m.Unknown(), m.SessionID)
			}
		}},
		{"empty object", `{}`, "", "", func(t *testing.T, m Message) {
			if !m.Unknown() {
				t.Error("Unknown() = false")
			}
		}},
		{"surrounding whitespace and CRLF", " \t" + lineControlCancel + "\r\n", TypeControlCancelRequest, "", func(t *testing.T, m Message) {
			if m.ControlCancelRequest == nil {
				t.Error("ControlCancelRequest view is nil")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustDecode(t, tt.line)
			if m.Type != tt.wantType || m.Subtype != tt.wantSubtype {
				t.Errorf("Type, Subtype = %q, %q; want %q, %q", m.Type, m.Subtype, tt.wantType, tt.wantSubtype)
			}
			if tt.check != nil {
				tt.check(t, m)
			}
		})
	}
}

// TestDecodeExactlyOneView guards the invariant that the typed view matches
// Type, which consumers rely on when they switch on Type.
func TestDecodeExactlyOneView(t *testing.T) {
	for _, line := range realLines {
		m := mustDecode(t, line)
		views := 0
		for _, v := range []bool{m.System != nil, m.Assistant != nil, m.User != nil, m.Result != nil,
			m.StreamEvent != nil, m.ControlRequest != nil, m.ControlResponse != nil, m.ControlCancelRequest != nil} {
			if v {
				views++
			}
		}
		known := map[string]bool{TypeSystem: true, TypeAssistant: true, TypeUser: true, TypeResult: true,
			TypeStreamEvent: true, TypeControlRequest: true, TypeControlResponse: true, TypeControlCancelRequest: true}
		if want := map[bool]int{true: 1, false: 0}[known[m.Type]]; views != want {
			t.Errorf("type %q: %d views, want %d", m.Type, views, want)
		}
	}
}

func TestDecodeMalformed(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		wantErr error // checked with errors.Is when set
		wantAs  any   // checked with errors.As when set
	}{
		{"empty", "", ErrEmptyLine, nil},
		{"whitespace", " \r\n\t", ErrEmptyLine, nil},
		{"array", `[{"type":"result"}]`, ErrNotObject, nil},
		{"string", `"type"`, ErrNotObject, nil},
		{"number", `42`, ErrNotObject, nil},
		{"null", `null`, ErrNotObject, nil},
		{"truncated", lineResultSuccess[:80], nil, new(*json.SyntaxError)},
		{"trailing garbage", `{"type":"user"} x`, nil, new(*json.SyntaxError)},
		{"two objects", `{"type":"user"}{"type":"user"}`, nil, new(*json.SyntaxError)},
		{"not json", `Error: something went wrong`, nil, new(*json.SyntaxError)},
		{"bad escape", `{"type":"\x"}`, nil, new(*json.SyntaxError)},
		{"single quotes", `{'type':'user'}`, nil, new(*json.SyntaxError)},
		{"invalid array", `[1,`, nil, new(*json.SyntaxError)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Decode([]byte(tt.line))
			if err == nil {
				t.Fatalf("Decode succeeded: %+v", m)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecodeError: %v", err, err)
			}
			if de.Len != len(tt.line) {
				t.Errorf("Len = %d, want %d", de.Len, len(tt.line))
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v is not %v", err, tt.wantErr)
			}
			if tt.wantAs != nil && !errors.As(err, tt.wantAs) {
				t.Errorf("error %v does not wrap %T", err, tt.wantAs)
			}
			if m.Raw != nil || m.Type != "" {
				t.Errorf("failed Decode returned a non-zero Message: %+v", m)
			}
		})
	}
}

func TestDecodeErrorTruncatesSnippet(t *testing.T) {
	line := strings.Repeat("é", 10<<10) // 20 KiB, two bytes per rune
	_, err := Decode([]byte(line))
	var de *DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("err = %v", err)
	}
	if len(de.Snippet) > maxSnippet || !strings.HasPrefix(line, de.Snippet) || de.Len != len(line) {
		t.Errorf("Snippet is %d bytes, Len %d", len(de.Snippet), de.Len)
	}
	if msg := err.Error(); len(msg) > 400 || !strings.Contains(msg, "20480 bytes") || !strings.Contains(msg, "…") {
		t.Errorf("Error() = %q", msg)
	}
}

func TestDecodeErrorSnippetInvalidUTF8(t *testing.T) {
	tests := []struct {
		line     string
		wantMore bool
	}{
		{"\xff\xfe not json", false},
		{"\xff" + strings.Repeat("x", 300), true},
		{strings.Repeat("x", maxSnippet-1) + "😀 tail", true}, // 4-byte rune straddles the cut
	}
	for _, tt := range tests {
		_, err := Decode([]byte(tt.line))
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Fatalf("err = %v", err)
		}
		if !utf8.ValidString(de.Snippet) || de.Snippet == "" || len(de.Snippet) > maxSnippet+3 {
			t.Errorf("Snippet = %q", de.Snippet)
		}
		if got := strings.Contains(err.Error(), "…"); got != tt.wantMore {
			t.Errorf("Error() = %q, want ellipsis %v", err.Error(), tt.wantMore)
		}
	}
}

// TestDecodeLenient checks that known types with odd field shapes still
// decode: the CLI changes and one surprising field must not lose the line.
func TestDecodeLenient(t *testing.T) {
	tests := []struct {
		name  string
		line  string
		check func(t *testing.T, m Message)
	}{
		{"result with string num_turns", `{"type":"result","subtype":"success","num_turns":"2","is_error":false,"result":"ok","session_id":"s"}`,
			func(t *testing.T, m Message) {
				if r := m.Result; r == nil || r.NumTurns != 0 || r.Result != "ok" || r.SessionID != "s" {
					t.Errorf("Result = %+v", r)
				}
			}},
		{"result with float durations and usage strings", `{"type":"result","duration_ms":12.5,"usage":{"input_tokens":"5","output_tokens":7},"session_id":"s"}`,
			func(t *testing.T, m Message) {
				if r := m.Result; r.DurationMS != 0 || r.Usage.OutputTokens != 7 || r.Usage.InputTokens != 0 || r.SessionID != "s" {
					t.Errorf("Result = %+v", r)
				}
			}},
		{"assistant with string message", `{"type":"assistant","message":"hi","session_id":"s"}`,
			func(t *testing.T, m Message) {
				if a := m.Assistant; a == nil || a.SessionID != "s" || a.Text() != "" || a.ToolUses() != nil {
					t.Errorf("Assistant = %+v", a)
				}
			}},
		{"assistant with object content", `{"type":"assistant","message":{"role":"assistant","content":{"type":"text","text":"x"}},"session_id":"s"}`,
			func(t *testing.T, m Message) {
				if a := m.Assistant; a.Message.Role != "assistant" || a.Message.Blocks() != nil {
					t.Errorf("Assistant = %+v", a)
				}
			}},
		{"assistant with odd blocks", `{"type":"assistant","message":{"role":"assistant","content":[1,null,"s",{"type":"text","text":5},{"type":"text","text":"ok"},{"type":"server_tool_use","id":"srv_1","name":"web_search","input":{"query":"go"}}]}}`,
			func(t *testing.T, m Message) {
				blocks := m.Assistant.Message.Blocks()
				if len(blocks) != 6 {
					t.Fatalf("Blocks() = %+v", blocks)
				}
				if string(blocks[0].Raw) != "1" || string(blocks[2].Raw) != `"s"` || blocks[0].Type != "" {
					t.Errorf("non-object blocks = %+v %+v", blocks[0], blocks[2])
				}
				if blocks[5].Type != "server_tool_use" || !strings.Contains(string(blocks[5].Raw), "web_search") {
					t.Errorf("unknown block = %+v", blocks[5])
				}
				if got := m.Assistant.Text(); got != "\nok" {
					t.Errorf("Text() = %q", got)
				}
			}},
		{"system with string tools and null fields", `{"type":"system","subtype":"init","tools":"Bash","model":null,"cwd":"/x","session_id":"s"}`,
			func(t *testing.T, m Message) {
				if s := m.System; s.Tools != nil || s.Model != "" || s.CWD != "/x" {
					t.Errorf("System = %+v", s)
				}
			}},
		{"exit_code of the wrong shape is absent, not 0", `{"type":"system","subtype":"hook_response","exit_code":"1"}`,
			func(t *testing.T, m Message) {
				if m.System.ExitCode != nil {
					t.Errorf("ExitCode = %d, want nil", *m.System.ExitCode)
				}
			}},
		{"exit_code non-zero", `{"type":"system","subtype":"hook_response","exit_code":2}`,
			func(t *testing.T, m Message) {
				if c := m.System.ExitCode; c == nil || *c != 2 {
					t.Errorf("ExitCode = %v, want 2", c)
				}
			}},
		{"type not a string", `{"type":5,"session_id":"s"}`,
			func(t *testing.T, m Message) {
				if m.Type != "" || !m.Unknown() || m.SessionID != "s" {
					t.Errorf("Message = %+v", m)
				}
			}},
		{"control_request with array request", `{"type":"control_request","request_id":"r","request":[1]}`,
			func(t *testing.T, m Message) {
				r, ok := m.ControlRequest.Request.(*OtherControlRequest)
				if !ok || r.Subtype != "" || string(r.Raw) != "[1]" || m.ControlRequest.RequestID != "r" {
					t.Errorf("ControlRequest = %+v", m.ControlRequest)
				}
			}},
		{"control_request with no request", `{"type":"control_request","request_id":"r"}`,
			func(t *testing.T, m Message) {
				if r, ok := m.ControlRequest.Request.(*OtherControlRequest); !ok || r.Raw != nil {
					t.Errorf("ControlRequest = %+v", m.ControlRequest)
				}
			}},
		{"can_use_tool with odd suggestion", `{"type":"control_request","request_id":"r","request":{"subtype":"can_use_tool","tool_name":"Edit","input":{},"permission_suggestions":[{"type":"setMode","mode":"acceptEdits","destination":"session"},7]}}`,
			func(t *testing.T, m Message) {
				r := m.ControlRequest.Request.(*CanUseToolRequest)
				got := r.Suggestions()
				if len(got) != 2 || !reflect.DeepEqual(got[0], SetModeUpdate(PermissionModeAcceptEdits)) {
					t.Errorf("Suggestions() = %+v", got)
				}
			}},
		{"control_response with string response", `{"type":"control_response","response":"ok"}`,
			func(t *testing.T, m Message) {
				if r := m.ControlResponse; r == nil || r.Subtype != "" || m.Subtype != "" {
					t.Errorf("ControlResponse = %+v", r)
				}
			}},
		{"top-level subtype wins over nested", `{"type":"control_request","subtype":"outer","request_id":"r","request":{"subtype":"interrupt"}}`,
			func(t *testing.T, m Message) {
				if m.Subtype != "outer" || m.ControlRequest.Subtype() != SubtypeInterrupt {
					t.Errorf("Subtype = %q, request subtype = %q", m.Subtype, m.ControlRequest.Subtype())
				}
			}},
		{"duplicate keys: last wins", `{"type":"user","type":"result","subtype":"success","session_id":"s"}`,
			func(t *testing.T, m Message) {
				if m.Type != TypeResult || m.Result == nil {
					t.Errorf("Message = %+v", m)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, mustDecode(t, tt.line))
		})
	}
}

func TestDecodeUnknownPreservedByteForByte(t *testing.T) {
	lines := []string{
		lineUnknownType,
		lineNoType,
		lineLegacyToolResult,
		// Odd spacing, escapes, key order, big numbers and non-ASCII must all
		// survive untouched.
		"{\"type\" :\t\"future_thing\",\n \"n\": 12345678901234567890123, \"f\": 1.000e+02, \"s\":\"\\u003c\\/tag\\u003e \u00e9\", \"z\":null}",
		`{"type":"keep_alive"}`,
	}
	for _, line := range lines {
		m := mustDecode(t, line)
		if !m.Unknown() {
			t.Errorf("%s: Unknown() = false", line)
		}
		if string(m.Raw) != line {
			t.Errorf("Raw = %q, want %q", m.Raw, line)
		}
	}
}

func TestDecodeCopiesInput(t *testing.T) {
	buf := []byte(lineResultSuccess)
	m, err := Decode(buf)
	if err != nil {
		t.Fatal(err)
	}
	for i := range buf {
		buf[i] = ' '
	}
	if string(m.Raw) != lineResultSuccess {
		t.Error("Raw aliases the caller's buffer")
	}
}

func TestConversationID(t *testing.T) {
	tests := []struct {
		line   string
		wantID string
		wantOK bool
	}{
		{lineSystemInit, "", false},
		{lineSystemHookResponse, "", false},
		{lineStreamEvent, "", false},
		{lineAssistantToolUse, sessionID, true},
		{lineUserToolResult, sessionID, true},
		{lineUserReplay, sessionID, true},
		{lineResultSuccess, sessionID, true},
		{lineLegacyToolUse, "legacy-1", true},
		{lineLegacyToolResult, "legacy-2", true},
		{lineCanUseTool, "", false},
		{lineHookCallback, "", false}, // the session_id inside input does not count
		{lineControlResponseInit, "", false},
		{lineControlCancel, "", false},
		{lineUnknownType, "", false},
		{lineNoType, "", false},
		{`{"type":"assistant","message":{"role":"assistant","content":[]}}`, "", false},
		{`{"type":"result","session_id":""}`, "", false},
		{`{"type":"control_request","request_id":"r","session_id":"s","request":{"subtype":"interrupt"}}`, "", false},
	}
	for _, tt := range tests {
		m := mustDecode(t, tt.line)
		id, ok := ConversationID(m)
		if id != tt.wantID || ok != tt.wantOK {
			t.Errorf("ConversationID(%.50s…) = %q, %v; want %q, %v", tt.line, id, ok, tt.wantID, tt.wantOK)
		}
	}
}

// TestConversationIDFork follows seed 000 §12.1: the first non-system line
// carrying an ID names the conversation, which after --fork-session is the
// new ID, not the one passed to --resume.
func TestConversationIDFork(t *testing.T) {
	const forked = "c0ffee00-0000-4000-8000-000000000001"
	stream := []string{
		lineControlResponseInit,
		strings.ReplaceAll(lineSystemInit, sessionID, "old-session-from-resume"),
		strings.ReplaceAll(lineStreamEvent, sessionID, forked),
		strings.ReplaceAll(lineAssistantText, sessionID, forked),
		strings.ReplaceAll(lineResultSuccess, sessionID, forked),
	}
	var got string
	for _, line := range stream {
		if id, ok := ConversationID(mustDecode(t, line)); ok && got == "" {
			got = id
		}
	}
	if got != forked {
		t.Errorf("conversation ID = %q, want %q", got, forked)
	}
}
