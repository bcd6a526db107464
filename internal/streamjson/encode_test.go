package streamjson

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestUserMessage(t *testing.T) {
	tests := []struct {
		text string
		want string
	}{
		{"hello", `{"type":"user","message":{"role":"user","content":"hello"}}`},
		{"", `{"type":"user","message":{"role":"user","content":""}}`},
		{"fix <div> & \"quote\"\nline2\t\u2028", `{"type":"user","message":{"role":"user","content":"fix <div> & \"quote\"\nline2\t\u2028"}}`},
		{"bad \xff utf8", `{"type":"user","message":{"role":"user","content":"bad \ufffd utf8"}}`},
	}
	for _, tt := range tests {
		got := string(UserMessage(tt.text))
		if got != tt.want {
			t.Errorf("UserMessage(%q) =\n %s\nwant\n %s", tt.text, got, tt.want)
		}
		if strings.Contains(got, "\n") {
			t.Errorf("UserMessage(%q) contains a raw newline", tt.text)
		}
	}
}

func TestUserMessageRoundTrip(t *testing.T) {
	text := "multi\nline <prompt> with ünïcode 😀"
	m := mustDecode(t, string(UserMessage(text)))
	if m.User == nil || m.User.Text() != text || m.User.Message.Role != "user" {
		t.Errorf("decoded %+v", m.User)
	}
}

func TestControlRequestEncode(t *testing.T) {
	hooks := map[string][]HookMatcher{
		"PreToolUse": {{Matcher: "^(?!(Glob|Grep|NotebookRead|Read|Task|TodoWrite)$).*", HookCallbackIDs: []string{"tool_approval"}}},
		"Stop":       {{HookCallbackIDs: []string{"stop_check"}, Timeout: 30}},
	}
	tests := []struct {
		name string
		req  ControlRequest
		want string
	}{
		{"initialize", ControlRequest{RequestID: "r1", Request: InitializeRequest{Hooks: hooks}},
			`{"type":"control_request","request_id":"r1","request":{"subtype":"initialize","hooks":{"PreToolUse":[{"matcher":"^(?!(Glob|Grep|NotebookRead|Read|Task|TodoWrite)$).*","hookCallbackIds":["tool_approval"]}],"Stop":[{"hookCallbackIds":["stop_check"],"timeout":30}]}}}`},
		{"initialize without hooks", ControlRequest{RequestID: "r1", Request: InitializeRequest{}},
			`{"type":"control_request","request_id":"r1","request":{"subtype":"initialize"}}`},
		{"set_permission_mode", ControlRequest{RequestID: "r2", Request: SetPermissionModeRequest{Mode: PermissionModeDefault}},
			`{"type":"control_request","request_id":"r2","request":{"subtype":"set_permission_mode","mode":"default"}}`},
		{"interrupt", ControlRequest{RequestID: "r3", Request: InterruptRequest{}},
			`{"type":"control_request","request_id":"r3","request":{"subtype":"interrupt"}}`},
		{"pointer request", ControlRequest{RequestID: "r4", Request: &SetPermissionModeRequest{Mode: PermissionModePlan}},
			`{"type":"control_request","request_id":"r4","request":{"subtype":"set_permission_mode","mode":"plan"}}`},
		{"raw request", ControlRequest{RequestID: "r5", Request: json.RawMessage(`{"subtype":"set_model","model":"opus"}`)},
			`{"type":"control_request","request_id":"r5","request":{"subtype":"set_model","model":"opus"}}`},
		{"can_use_tool (fake CLI side)", ControlRequest{RequestID: "c1", Request: CanUseToolRequest{ToolName: "Bash", Input: json.RawMessage(`{"command":"ls"}`), ToolUseID: "toolu_1"}},
			`{"type":"control_request","request_id":"c1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"ls"},"tool_use_id":"toolu_1"}}`},
		{"hook_callback (fake CLI side)", ControlRequest{RequestID: "c2", Request: HookCallbackRequest{CallbackID: "tool_approval", Input: json.RawMessage(`{"hook_event_name":"PreToolUse"}`)}},
			`{"type":"control_request","request_id":"c2","request":{"subtype":"hook_callback","callback_id":"tool_approval","input":{"hook_event_name":"PreToolUse"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.req.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Encode() =\n %s\nwant\n %s", got, tt.want)
			}
			viaMarshal, err := json.Marshal(tt.req)
			if err != nil || string(viaMarshal) != tt.want {
				t.Errorf("json.Marshal = %s, %v", viaMarshal, err)
			}
			// What we send must decode back to the same request.
			m := mustDecode(t, string(got))
			if m.ControlRequest == nil || m.ControlRequest.RequestID != tt.req.RequestID {
				t.Fatalf("decoded %+v", m)
			}
			if want := tt.req.Subtype(); want != "" && m.Subtype != want {
				t.Errorf("decoded Subtype = %q, want %q", m.Subtype, want)
			}
		})
	}
}

func TestControlRequestDecodesOwnRequests(t *testing.T) {
	line, err := ControlRequest{RequestID: "r1", Request: InitializeRequest{Hooks: map[string][]HookMatcher{
		"PreToolUse": {{Matcher: ".*", HookCallbackIDs: []string{"a", "b"}}},
	}}}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	init, ok := mustDecode(t, string(line)).ControlRequest.Request.(*InitializeRequest)
	if !ok || !reflect.DeepEqual(init.Hooks["PreToolUse"], []HookMatcher{{Matcher: ".*", HookCallbackIDs: []string{"a", "b"}}}) {
		t.Errorf("decoded %+v", init)
	}
	mode, ok := mustDecode(t, `{"type":"control_request","request_id":"r2","request":{"subtype":"set_permission_mode","mode":"acceptEdits"}}`).ControlRequest.Request.(*SetPermissionModeRequest)
	if !ok || mode.Mode != PermissionModeAcceptEdits {
		t.Errorf("decoded %+v", mode)
	}
	if _, ok := mustDecode(t, `{"type":"control_request","request_id":"r3","request":{"subtype":"interrupt"}}`).ControlRequest.Request.(*InterruptRequest); !ok {
		t.Error("interrupt did not decode to *InterruptRequest")
	}
}

func TestControlRequestEncodeErrors(t *testing.T) {
	if _, err := (ControlRequest{RequestID: "r"}).Encode(); !errors.Is(err, ErrNoRequest) {
		t.Errorf("nil Request: err = %v, want ErrNoRequest", err)
	}
	if _, err := (ControlRequest{RequestID: "r", Request: json.RawMessage(`{bad`)}).Encode(); err == nil {
		t.Error("invalid raw request encoded without error")
	}
}

func TestOtherControlRequestRoundTrip(t *testing.T) {
	m := mustDecode(t, lineControlRequestOther)
	out, err := m.ControlRequest.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != lineControlRequestOther {
		t.Errorf("re-encoded\n %s\nwant\n %s", out, lineControlRequestOther)
	}
}

func TestControlResponses(t *testing.T) {
	input := json.RawMessage(`{"command":"echo start && sleep 1","description":"Print start then sleep"}`)
	tests := []struct {
		name     string
		response any
		want     string
	}{
		{"allow", PermissionAllow(input),
			`{"type":"control_response","response":{"subtype":"success","request_id":"ID","response":{"behavior":"allow","updatedInput":{"command":"echo start && sleep 1","description":"Print start then sleep"}}}}`},
		{"allow with set mode", PermissionAllow(json.RawMessage(`{"plan":"do it"}`), SetModeUpdate(PermissionModeBypassPermissions)),
			`{"type":"control_response","response":{"subtype":"success","request_id":"ID","response":{"behavior":"allow","updatedInput":{"plan":"do it"},"updatedPermissions":[{"type":"setMode","mode":"bypassPermissions","destination":"session"}]}}}`},
		{"allow with add rules", PermissionAllow(input, PermissionUpdate{Type: UpdateAddRules, Rules: []PermissionRuleValue{{ToolName: "Bash", RuleContent: "echo:*"}}, Behavior: BehaviorAllow, Destination: DestinationLocalSettings}),
			`{"type":"control_response","response":{"subtype":"success","request_id":"ID","response":{"behavior":"allow","updatedInput":{"command":"echo start && sleep 1","description":"Print start then sleep"},"updatedPermissions":[{"type":"addRules","destination":"localSettings","rules":[{"toolName":"Bash","ruleContent":"echo:*"}],"behavior":"allow"}]}}}`},
		{"allow without input", PermissionAllow(nil),
			`{"type":"control_response","response":{"subtype":"success","request_id":"ID","response":{"behavior":"allow"}}}`},
		{"allow with null input", PermissionAllow(json.RawMessage(`null`)),
			`{"type":"control_response","response":{"subtype":"success","request_id":"ID","response":{"behavior":"allow"}}}`},
		{"deny", PermissionDeny("The user doesn't want to proceed with this tool use. Reason: not now", false),
			`{"type":"control_response","response":{"subtype":"success","request_id":"ID","response":{"behavior":"deny","message":"The user doesn't want to proceed with this tool use. Reason: not now","interrupt":false}}}`},
		{"deny and interrupt", PermissionDeny("Approval request timed out", true),
			`{"type":"control_response","response":{"subtype":"success","request_id":"ID","response":{"behavior":"deny","message":"Approval request timed out","interrupt":true}}}`},
		{"hook ask", PreToolUseDecision(HookDecisionAsk, ""),
			`{"type":"control_response","response":{"subtype":"success","request_id":"ID","response":{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask"}}}}`},
		{"hook allow with reason", PreToolUseDecision(HookDecisionAllow, "read-only tool"),
			`{"type":"control_response","response":{"subtype":"success","request_id":"ID","response":{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"read-only tool"}}}}`},
		{"empty hook output", HookOutput{},
			`{"type":"control_response","response":{"subtype":"success","request_id":"ID","response":{}}}`},
		{"nil", nil,
			`{"type":"control_response","response":{"subtype":"success","request_id":"ID"}}`},
		{"empty raw", json.RawMessage(nil),
			`{"type":"control_response","response":{"subtype":"success","request_id":"ID"}}`},
		{"map", map[string]any{"mode": "default"},
			`{"type":"control_response","response":{"subtype":"success","request_id":"ID","response":{"mode":"default"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ControlResponseSuccess("ID", tt.response)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("ControlResponseSuccess =\n %s\nwant\n %s", got, tt.want)
			}
			m := mustDecode(t, string(got))
			if r := m.ControlResponse; r == nil || r.RequestID != "ID" || r.Subtype != ResponseSuccess {
				t.Errorf("decoded %+v", m.ControlResponse)
			}
		})
	}
}

func TestPermissionResultDecodes(t *testing.T) {
	// A fake CLI reads our answers back with plain json.Unmarshal.
	for _, in := range []PermissionResult{
		PermissionAllow(json.RawMessage(`{"a":1}`), SetModeUpdate(PermissionModeBypassPermissions)),
		PermissionDeny("no", true),
	} {
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		var out PermissionResult
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(in, out) {
			t.Errorf("round trip %s: got %+v, want %+v", b, out, in)
		}
	}
}

func TestControlResponseErrors(t *testing.T) {
	if _, err := ControlResponseSuccess("ID", PermissionResult{Behavior: "maybe"}); err == nil ||
		!strings.Contains(err.Error(), `"maybe"`) {
		t.Errorf("bad behavior: err = %v", err)
	}
	if _, err := ControlResponseSuccess("ID", make(chan int)); err == nil {
		t.Error("unencodable response: no error")
	}
	if _, err := ControlResponseSuccess("ID", PermissionAllow(json.RawMessage(`{oops`))); err == nil {
		t.Error("invalid updatedInput: no error")
	}
	got := string(ControlResponseError("r9", "approval service unavailable"))
	want := `{"type":"control_response","response":{"subtype":"error","request_id":"r9","error":"approval service unavailable"}}`
	if got != want {
		t.Errorf("ControlResponseError =\n %s\nwant\n %s", got, want)
	}
	if m := mustDecode(t, got); m.Subtype != ResponseError || m.ControlResponse.Error != "approval service unavailable" {
		t.Errorf("decoded %+v", m.ControlResponse)
	}
}

func TestContentBlockMarshal(t *testing.T) {
	// Decoded blocks go back out byte for byte; built ones from their fields.
	const raw = `{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"},"extra":[1, 2]}`
	var b ContentBlock
	if err := json.Unmarshal([]byte(raw), &b); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(b)
	if err != nil || string(out) != `{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"},"extra":[1,2]}` {
		t.Errorf("Marshal(decoded) = %s, %v", out, err)
	}
	out, err = json.Marshal(ContentBlock{Type: BlockText, Text: "hi"})
	if err != nil || string(out) != `{"type":"text","text":"hi"}` {
		t.Errorf("Marshal(built) = %s, %v", out, err)
	}
}

func TestAcceptedModes(t *testing.T) {
	// The pinned CLI's refusal of a set_permission_mode with no mode.
	refusal := &ControlResponse{Subtype: ResponseError, ErrorCode: ErrorInvalidMode,
		Error: "Cannot set permission mode: must be one of acceptEdits, auto, bypassPermissions, default, dontAsk, plan"}
	for _, c := range []struct {
		name string
		resp *ControlResponse
		want []PermissionMode
	}{
		{"refusal", refusal, []PermissionMode{"acceptEdits", "auto", "bypassPermissions", "default", "dontAsk", "plan"}},
		{"nil", nil, nil},
		{"accepted", &ControlResponse{Subtype: ResponseSuccess, Response: json.RawMessage(`{"mode":"default"}`)}, nil},
		{"other error", &ControlResponse{Subtype: ResponseError, Error: "unsupported control request subtype"}, nil},
		{"no list", &ControlResponse{Subtype: ResponseError, ErrorCode: ErrorInvalidMode, Error: "bad mode"}, nil},
	} {
		if got := AcceptedModes(c.resp); !slices.Equal(got, c.want) {
			t.Errorf("%s: AcceptedModes = %q, want %q", c.name, got, c.want)
		}
	}
	b, err := ControlRequest{RequestID: "q", Request: ModesQuestion}.Encode()
	if err != nil || !strings.Contains(string(b), `"request":{"subtype":"set_permission_mode","mode":""}`) {
		t.Errorf("ModesQuestion = %s, %v; want a set_permission_mode with an empty mode", b, err)
	}
	for _, m := range Modes {
		if !m.Mode.Known() || m.Name == "" || m.Description == "" {
			t.Errorf("mode %+v: want known, named and described", m)
		}
	}
	if PermissionMode("yolo").Known() {
		t.Error(`"yolo" is known`)
	}
}
