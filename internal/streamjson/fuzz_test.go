package streamjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func FuzzDecode(f *testing.F) {
	for _, line := range realLines {
		f.Add([]byte(line))
	}
	for _, line := range []string{
		"", " ", "{", "}", "[]", "null", `"x"`, "{}", "{}\r\n", `{"type":null}`,
		`{"type":"assistant","message":{"role":"assistant","content":[1,null,{"type":"tool_use","input":5}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","content":[{"type":"image","source":{"type":"base64","data":"iVBORw0KGgo=","media_type":"image/png"}}]}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","content":"{\"a\":[1,2]}"}]},"session_id":"s"}`,
		`{"type":"control_request","request_id":7,"request":{"subtype":"can_use_tool","input":"x","permission_suggestions":{}}}`,
		`{"type":"control_request","request":{"subtype":"hook_callback","input":[]}}`,
		`{"type":"control_request","request":{"subtype":"initialize","hooks":{"PreToolUse":[{"hookCallbackIds":[1]}]}}}`,
		`{"type":"control_response","response":{"subtype":"error","error":{"message":"x"}}}`,
		`{"type":"result","usage":[],"num_turns":-1e400,"total_cost_usd":1e999}`,
		`{"type":"system","exit_code":1.5,"tools":[null,"Bash",3]}`,
		`{"Type":"result","TYPE":"user"}`,
		"{\"type\":\"stream_event\",\"event\":{\"type\":\"\\ud800\"}}",
	} {
		f.Add([]byte(line))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		orig := bytes.Clone(line)
		m, err := Decode(line)
		if !bytes.Equal(line, orig) {
			t.Fatal("Decode modified its input")
		}
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecodeError", err)
			}
			if json.Valid(line) && firstByte(line) == '{' {
				t.Fatalf("valid object rejected: %v", err)
			}
			_ = err.Error()
			return
		}
		if !json.Valid(line) || firstByte(line) != '{' {
			t.Fatalf("accepted a line that is not a JSON object: %q", line)
		}
		if !bytes.Equal(m.Raw, line) {
			t.Fatalf("Raw = %q, want the input %q", m.Raw, line)
		}
		again, err := Decode(m.Raw)
		if err != nil {
			t.Fatalf("re-decoding Raw failed: %v", err)
		}
		if !reflect.DeepEqual(m, again) {
			t.Fatalf("re-decoding is not stable:\n%+v\n%+v", m, again)
		}
		exercise(t, m)
	})
}

// exercise runs every lazy accessor on m: none may panic, and the few
// invariants between them must hold.
func exercise(t *testing.T, m Message) {
	if id, ok := ConversationID(m); ok != (id != "") || (ok && id != m.SessionID) {
		t.Fatalf("ConversationID = %q, %v for SessionID %q", id, ok, m.SessionID)
	}
	_ = m.Unknown()
	if a := m.Assistant; a != nil {
		_ = a.Text()
		_ = a.ToolUses()
		for _, b := range a.Message.Blocks() {
			if _, err := json.Marshal(b); err != nil {
				t.Fatalf("re-encoding decoded block %q: %v", b.Raw, err)
			}
		}
	}
	if u := m.User; u != nil {
		_ = u.Text()
		for _, r := range u.ToolResults() {
			_, _ = r.Parse().JSON()
		}
	}
	if e := m.StreamEvent; e != nil {
		_ = e.EventType()
	}
	if cr := m.ControlRequest; cr != nil {
		switch r := cr.Request.(type) {
		case *CanUseToolRequest:
			_ = r.Suggestions()
		case *HookCallbackRequest:
			_ = r.HookInput()
		}
		line, err := cr.Encode()
		if err != nil {
			t.Fatalf("re-encoding a decoded control request: %v", err)
		}
		back, err := Decode(line)
		if err != nil || back.ControlRequest == nil || back.ControlRequest.RequestID != cr.RequestID ||
			back.ControlRequest.Subtype() != cr.Subtype() {
			t.Fatalf("re-encoded control request %s decodes to %+v, %v", line, back.ControlRequest, err)
		}
	}
}

func FuzzParseToolResultContent(f *testing.F) {
	for _, raw := range []string{
		``, `null`, `"text"`, `"{\"a\":1}"`, `[]`, `[{"type":"text","text":"a"},{"type":"text","text":"b"}]`,
		`[{"type":"image","source":{"type":"base64","data":"iVBORw0KGgo=","media_type":"image/png"}}]`,
		`[{"type":"image","source":{"type":"base64","data":"iVBORw0KGgo","media_type":"image/png"}}]`,
		`[{"type":"text","text":"see"},{"type":"image","source":{"type":"base64","data":"AAAA","media_type":"image/gif"}}]`,
		`[{"type":"image","source":{"type":"base64","data":"!!"}}]`, `[{"type":"image"}]`, `[{"type":"tool_reference"}]`,
		`{"stdout":"x"}`, `42`, `[1,"a",null]`, `not json`, `"unterminated`, ` [ { "type" : "text" , "text" : 5 } ] `,
	} {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c := ParseToolResultContent(raw)
		if !reflect.DeepEqual(c, ParseToolResultContent(raw)) {
			t.Fatal("not deterministic")
		}
		switch c.Kind {
		case ToolResultText:
			if c.Blocks != nil || c.Image.Data != nil {
				t.Fatalf("text result with other fields: %+v", c)
			}
		case ToolResultImage:
			if c.Text != "" || c.Blocks != nil {
				t.Fatalf("image result with other fields: %+v", c)
			}
		case ToolResultMixed:
			if len(c.Blocks) == 0 || c.Text != "" {
				t.Fatalf("mixed result without blocks: %+v", c)
			}
		default:
			t.Fatalf("kind %v", c.Kind)
		}
		var s string
		if json.Unmarshal(raw, &s) == nil && (c.Kind != ToolResultText || c.Text != s) {
			t.Fatalf("string content %q parsed as %+v", s, c)
		}
		if v, ok := c.JSON(); ok != (v != nil) {
			t.Fatalf("JSON() = %v, %v", v, ok)
		}
	})
}
