package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
)

// Lines in these tests are the real CLI's (2.1.330, captured with
// executor.Run against mockapi, see testdata/), shortened where only a
// field matters.

// feed runs lines (one stream-json line each) through tr.
func feedLines(t *testing.T, tr *translator, lines ...string) []acpsdk.SessionUpdate {
	t.Helper()
	var out []acpsdk.SessionUpdate
	for _, l := range lines {
		msg, err := streamjson.Decode([]byte(l))
		if err != nil {
			t.Fatalf("decode %s: %v", l, err)
		}
		out = append(out, tr.line(msg)...)
	}
	return out
}

// feedFile runs a testdata file of stdout lines through tr.
func feedLinesFile(t *testing.T, tr *translator, path string) []acpsdk.SessionUpdate {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return feedLines(t, tr, lines...)
}

// wire is an update as the client receives it, decoded generically, so
// tests compare the JSON on the wire rather than Go structs.
func onWire(t *testing.T, u acpsdk.SessionUpdate) map[string]any {
	t.Helper()
	if err := u.Validate(); err != nil {
		t.Fatalf("invalid update %+v: %v", u, err)
	}
	b, err := json.Marshal(u)
	if err != nil {
		t.Fatalf("marshal update: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func onWireAll(t *testing.T, us []acpsdk.SessionUpdate) []map[string]any {
	t.Helper()
	out := make([]map[string]any, 0, len(us))
	for _, u := range us {
		out = append(out, onWire(t, u))
	}
	return out
}

// want decodes the expected updates from JSON (an array).
func wantUpdates(t *testing.T, js string) []map[string]any {
	t.Helper()
	var m []map[string]any
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		t.Fatalf("bad expectation %s: %v", js, err)
	}
	return m
}

func assertUpdates(t *testing.T, got []acpsdk.SessionUpdate, wantJSON string) {
	t.Helper()
	g, w := onWireAll(t, got), wantUpdates(t, wantJSON)
	if len(g) == 0 && len(w) == 0 {
		return
	}
	if !reflect.DeepEqual(g, w) {
		gb, _ := json.MarshalIndent(g, "", " ")
		wb, _ := json.MarshalIndent(w, "", " ")
		t.Errorf("updates:\n%s\nwant:\n%s", gb, wb)
	}
}

// kindOf is an update's sessionUpdate discriminator.
func updateKind(t *testing.T, u acpsdk.SessionUpdate) string {
	t.Helper()
	s, _ := onWire(t, u)["sessionUpdate"].(string)
	return s
}

// texts joins the text of every chunk of kind ("agent_message_chunk", ...).
func chunkText(t *testing.T, us []acpsdk.SessionUpdate, kind string) string {
	t.Helper()
	var b strings.Builder
	for _, u := range us {
		if updateKind(t, u) != kind {
			continue
		}
		m := onWire(t, u)
		c, _ := m["content"].(map[string]any)
		s, _ := c["text"].(string)
		b.WriteString(s)
	}
	return b.String()
}

const (
	bashUse    = `{"type":"assistant","message":{"content":[{"id":"toolu_bash","input":{"command":"echo hi-there && echo second-line","description":"Say hi"},"name":"Bash","type":"tool_use"}],"id":"msg_1","model":"claude-opus-5-5","role":"assistant","stop_reason":null,"type":"message","usage":{"input_tokens":10,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}},"parent_tool_use_id":null,"session_id":"s1","uuid":"u1"}`
	bashResult = `{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_bash","type":"tool_result","content":"hi-there\nsecond-line","is_error":false}]},"parent_tool_use_id":null,"session_id":"s1","uuid":"u2","tool_use_result":{"stdout":"hi-there\nsecond-line","stderr":"","interrupted":false,"isImage":false,"noOutputExpected":false}}`
	bashStart  = `{"_meta":{"claudeCode":{"toolName":"Bash"}},"kind":"execute","rawInput":{"command":"echo hi-there && echo second-line","description":"Say hi"},"sessionUpdate":"tool_call","status":"pending","title":"$ echo hi-there && echo second-line — Say hi","toolCallId":"toolu_bash"}`
)

func TestTranslateLine(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  string
	}{
		{"text", []string{`{"type":"assistant","message":{"content":[{"text":"All done here.","type":"text"}],"id":"msg_9","model":"claude-opus-5-5","role":"assistant","stop_reason":null,"type":"message","usage":{"input_tokens":10,"output_tokens":1}},"parent_tool_use_id":null,"session_id":"s1","uuid":"u9"}`},
			`[{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"All done here."}}]`},
		{"thinking", []string{`{"type":"assistant","message":{"content":[{"signature":"mock-signature","thinking":"Let me look around first.","type":"thinking"}],"id":"msg_1","role":"assistant","type":"message"},"parent_tool_use_id":null,"session_id":"s1"}`},
			`[{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"Let me look around first."}}]`},
		{"bash: the whole command is the title, the input is rawInput", []string{bashUse}, `[` + bashStart + `]`},
		{"bash result", []string{bashUse, bashResult}, `[` + bashStart + `,
			{"sessionUpdate":"tool_call_update","toolCallId":"toolu_bash","status":"completed",
			 "content":[{"type":"content","content":{"type":"text","text":"` + "```" + `\nhi-there\nsecond-line\n` + "```" + `"}}],
			 "rawOutput":{"stdout":"hi-there\nsecond-line","stderr":"","interrupted":false,"isImage":false,"noOutputExpected":false}}]`},
		{"failed bash", []string{
			`{"type":"assistant","message":{"content":[{"id":"toolu_ls","input":{"command":"ls /nonexistent-zz","description":"List"},"name":"Bash","type":"tool_use"}],"id":"msg_5","role":"assistant","type":"message"},"parent_tool_use_id":null,"session_id":"s1"}`,
			`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"Exit code 2\nls: cannot access '/nonexistent-zz': No such file or directory","is_error":true,"tool_use_id":"toolu_ls"}]},"parent_tool_use_id":null,"session_id":"s1","tool_use_result":"Error: Exit code 2\nls: cannot access '/nonexistent-zz': No such file or directory"}`},
			`[{"_meta":{"claudeCode":{"toolName":"Bash"}},"kind":"execute","rawInput":{"command":"ls /nonexistent-zz","description":"List"},"sessionUpdate":"tool_call","status":"pending","title":"$ ls /nonexistent-zz — List","toolCallId":"toolu_ls"},
			 {"sessionUpdate":"tool_call_update","toolCallId":"toolu_ls","status":"failed",
			  "content":[{"type":"content","content":{"type":"text","text":"` + "```" + `\nExit code 2\nls: cannot access '/nonexistent-zz': No such file or directory\n` + "```" + `"}}],
			  "rawOutput":"Error: Exit code 2\nls: cannot access '/nonexistent-zz': No such file or directory"}]`},
		{"a tool_use_error marker is for the model", []string{
			`{"type":"assistant","message":{"content":[{"id":"toolu_x","input":{"query":"q"},"name":"mcp__db__query","type":"tool_use"}],"id":"msg_2","role":"assistant","type":"message"},"session_id":"s1"}`,
			`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"<tool_use_error>Error: No such tool available: mcp__db__query.</tool_use_error>","is_error":true,"tool_use_id":"toolu_x"}]},"session_id":"s1"}`},
			`[{"_meta":{"claudeCode":{"toolName":"mcp__db__query"}},"kind":"other","rawInput":{"query":"q"},"sessionUpdate":"tool_call","status":"pending","title":"mcp__db__query {\"query\":\"q\"}","toolCallId":"toolu_x"},
			 {"sessionUpdate":"tool_call_update","toolCallId":"toolu_x","status":"failed",
			  "content":[{"type":"content","content":{"type":"text","text":"Error: No such tool available: mcp__db__query."}}],
			  "rawOutput":"<tool_use_error>Error: No such tool available: mcp__db__query.</tool_use_error>"}]`},
		{"read with an offset has a line", []string{`{"type":"assistant","message":{"content":[{"id":"toolu_r","input":{"file_path":"src/a.go","offset":40,"limit":10},"name":"Read","type":"tool_use"}],"id":"m","role":"assistant","type":"message"},"session_id":"s1"}`},
			`[{"_meta":{"claudeCode":{"toolName":"Read"}},"kind":"read","locations":[{"path":"/nowhere/proj/src/a.go","line":40}],"rawInput":{"file_path":"src/a.go","offset":40,"limit":10},"sessionUpdate":"tool_call","status":"pending","title":"Read src/a.go","toolCallId":"toolu_r"}]`},
		{"the ACP server's names are the same tools", []string{`{"type":"assistant","message":{"content":[{"id":"toolu_r","input":{"file_path":"/w/a.go"},"name":"mcp__acp__Read","type":"tool_use"}],"id":"m","role":"assistant","type":"message"},"session_id":"s1"}`},
			`[{"_meta":{"claudeCode":{"toolName":"Read"}},"kind":"read","locations":[{"path":"/w/a.go"}],"rawInput":{"file_path":"/w/a.go"},"sessionUpdate":"tool_call","status":"pending","title":"Read /w/a.go","toolCallId":"toolu_r"}]`},
		{"grep searches", []string{`{"type":"assistant","message":{"content":[{"id":"toolu_g","input":{"pattern":"TODO","path":"/w/src"},"name":"Grep","type":"tool_use"}],"id":"m","role":"assistant","type":"message"},"session_id":"s1"}`},
			`[{"_meta":{"claudeCode":{"toolName":"Grep"}},"kind":"search","locations":[{"path":"/w/src"}],"rawInput":{"pattern":"TODO","path":"/w/src"},"sessionUpdate":"tool_call","status":"pending","title":"Search: TODO","toolCallId":"toolu_g"}]`},
		{"webfetch fetches", []string{`{"type":"assistant","message":{"content":[{"id":"toolu_f","input":{"url":"https://example.invalid/x","prompt":"p"},"name":"WebFetch","type":"tool_use"}],"id":"m","role":"assistant","type":"message"},"session_id":"s1"}`},
			`[{"_meta":{"claudeCode":{"toolName":"WebFetch"}},"kind":"fetch","rawInput":{"url":"https://example.invalid/x","prompt":"p"},"sessionUpdate":"tool_call","status":"pending","title":"Fetch https://example.invalid/x","toolCallId":"toolu_f"}]`},
		{"a subagent thinks", []string{`{"type":"assistant","message":{"content":[{"id":"toolu_t","input":{"description":"Look around","prompt":"List the files","subagent_type":"general-purpose"},"name":"Task","type":"tool_use"}],"id":"m","role":"assistant","type":"message"},"session_id":"s1"}`},
			`[{"_meta":{"claudeCode":{"toolName":"Task"}},"kind":"think","rawInput":{"description":"Look around","prompt":"List the files","subagent_type":"general-purpose"},"sessionUpdate":"tool_call","status":"pending","title":"Subagent: List the files — Look around","toolCallId":"toolu_t"}]`},
		{"a plan switches mode", []string{`{"type":"assistant","message":{"content":[{"id":"toolu_p","input":{"plan":"1. Write out.txt\n2. Test it"},"name":"ExitPlanMode","type":"tool_use"}],"id":"m","role":"assistant","type":"message"},"session_id":"s1"}`},
			`[{"_meta":{"claudeCode":{"toolName":"ExitPlanMode"}},"kind":"switch_mode","rawInput":{"plan":"1. Write out.txt\n2. Test it"},"sessionUpdate":"tool_call","status":"pending","title":"Ready to code?","toolCallId":"toolu_p",
			  "content":[{"type":"content","content":{"type":"text","text":"1. Write out.txt\n2. Test it"}}]}]`},
		{"a subagent's text is not the answer, its tools are shown", []string{
			`{"type":"assistant","message":{"content":[{"text":"ok","type":"text"}],"id":"msg_sub","role":"assistant","type":"message"},"parent_tool_use_id":"toolu_t","session_id":"s1"}`,
			`{"type":"assistant","message":{"content":[{"id":"toolu_sub","input":{"command":"ls"},"name":"Bash","type":"tool_use"}],"id":"msg_sub","role":"assistant","type":"message"},"parent_tool_use_id":"toolu_t","session_id":"s1"}`},
			`[{"_meta":{"claudeCode":{"toolName":"Bash","parentToolUseId":"toolu_t"}},"kind":"execute","rawInput":{"command":"ls"},"sessionUpdate":"tool_call","status":"pending","title":"$ ls","toolCallId":"toolu_sub"}]`},
		{"a subagent's to-do list is not the session's plan", []string{
			`{"type":"assistant","message":{"content":[{"id":"toolu_subtodo","input":{"todos":[{"content":"sub step","status":"pending"}]},"name":"TodoWrite","type":"tool_use"}],"id":"msg_sub","role":"assistant","type":"message"},"parent_tool_use_id":"toolu_t","session_id":"s1"}`,
			`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"ok","tool_use_id":"toolu_subtodo"}]},"parent_tool_use_id":"toolu_t","session_id":"s1"}`}, `[]`},
		{"a result for a call never announced", []string{bashResult}, `[]`},
		{"the prompt echoed by --replay-user-messages", []string{`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"what is in this picture?"}]},"session_id":"s1","isReplay":true}`}, `[]`},
		{"system, result and control lines", []string{
			`{"type":"system","subtype":"init","cwd":"/w","session_id":"s1","tools":["Bash"],"model":"claude-opus-5-5","permissionMode":"default"}`,
			`{"type":"system","subtype":"status","status":"requesting","session_id":"s1"}`,
			`{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Write","input":{}}}`,
			`{"type":"result","subtype":"success","is_error":false,"num_turns":1,"session_id":"s1","total_cost_usd":0.001,"usage":{"input_tokens":1,"output_tokens":1},"result":"ok"}`}, `[]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertUpdates(t, feedLines(t, newTranslator("/nowhere/proj"), tt.lines...), tt.want)
		})
	}
}

// TestPartialMessages feeds a whole real turn with partial messages on:
// every text and thought reaches the client once, token by token, and
// every tool call arrives with its complete input.
func TestPartialMessages(t *testing.T) {
	got := feedLinesFile(t, newTranslator("/work/proj"), "testdata/stream_partial.jsonl")
	if s := chunkText(t, got, "agent_message_chunk"); s != "I will run a command now.All done here." {
		t.Errorf("message text %q, want each text once", s)
	}
	if s := chunkText(t, got, "agent_thought_chunk"); s != "Let me look around first." {
		t.Errorf("thought text %q, want it once", s)
	}
	var calls, chunks int
	for _, u := range got {
		switch updateKind(t, u) {
		case "agent_message_chunk", "agent_thought_chunk":
			chunks++
		case "tool_call":
			calls++
			tc := u.ToolCall
			if raw, _ := json.Marshal(tc.RawInput); len(raw) < 10 {
				t.Errorf("tool_call %s (%s) with rawInput %s: the complete input must come with it", tc.ToolCallId, tc.Title, raw)
			}
		}
	}
	if chunks < 5 {
		t.Errorf("%d chunks: the deltas should each be sent", chunks)
	}
	if calls != 5 { // Bash, Write, Edit, Read, Bash; TodoWrite is a plan
		t.Errorf("%d tool calls, want 5", calls)
	}
}

func TestPartialThenComplete(t *testing.T) {
	start := `{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_A","type":"message","role":"assistant","content":[]}},"session_id":"s1","parent_tool_use_id":null}`
	block := `{"type":"stream_event","event":{"type":"content_block_start","index":1,"content_block":{"text":"","type":"text"}},"session_id":"s1","parent_tool_use_id":null}`
	delta := func(s string) string {
		return `{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"` + s + `"}},"session_id":"s1","parent_tool_use_id":null}`
	}
	full := func(id, s string) string {
		return `{"type":"assistant","message":{"content":[{"text":"` + s + `","type":"text"}],"id":"` + id + `","role":"assistant","type":"message"},"parent_tool_use_id":null,"session_id":"s1"}`
	}
	tests := []struct {
		name  string
		lines []string
		want  []string // the chunks' texts
	}{
		{"deltas then the message: once", []string{start, block, delta("I will run"), delta(" a command now."), full("msg_A", "I will run a command now.")},
			[]string{"I will run", " a command now."}},
		{"a late delta of a sent block", []string{start, block, delta("Hi."), full("msg_A", "Hi."), delta("Hi.")},
			[]string{"Hi."}},
		{"the message holds more than the deltas", []string{start, block, delta("I will"), full("msg_A", "I will run it.")},
			[]string{"I will", " run it."}},
		{"no stream events: one chunk", []string{full("msg_B", "Whole answer.")}, []string{"Whole answer."}},
		{"another message's text follows after a break", []string{start, block, delta("Done."), full("msg_A", "Done."), full("msg_B", "Next.")},
			[]string{"Done.", "\n\nNext."}},
		{"a subagent's deltas are not the answer", []string{
			`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"sub"}},"session_id":"s1","parent_tool_use_id":"toolu_t"}`},
			nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, u := range feedLines(t, newTranslator(""), tt.lines...) {
				if u.AgentMessageChunk == nil {
					t.Fatalf("unexpected update %+v", onWire(t, u))
				}
				got = append(got, u.AgentMessageChunk.Content.Text.Text)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("chunks %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTodoWritePlan(t *testing.T) {
	tr := newTranslator("")
	got := feedLines(t, tr,
		`{"type":"assistant","message":{"content":[{"id":"toolu_todo","input":{"todos":[{"activeForm":"Writing the file","content":"Write the file","status":"in_progress"},{"activeForm":"Editing the file","content":"Edit the file","status":"pending"},{"content":"Ship","status":"completed","priority":"high"}]},"name":"TodoWrite","type":"tool_use"}],"id":"msg_2","role":"assistant","type":"message"},"parent_tool_use_id":null,"session_id":"s1"}`,
		// Its result is no tool call's, whatever it says.
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"Todos have been modified successfully.","tool_use_id":"toolu_todo"}]},"session_id":"s1"}`,
	)
	assertUpdates(t, got, `[{"sessionUpdate":"plan","entries":[
		{"content":"Write the file","status":"in_progress","priority":"medium"},
		{"content":"Edit the file","status":"pending","priority":"medium"},
		{"content":"Ship","status":"completed","priority":"high"}]}]`)
	if abandoned := tr.abandon(); len(abandoned) != 0 {
		t.Errorf("a plan is no open tool call: %v", onWireAll(t, abandoned))
	}
}

func TestImageToolResult(t *testing.T) {
	const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	use := `{"type":"assistant","message":{"content":[{"id":"toolu_img","input":{"file_path":"/w/pic.png"},"name":"Read","type":"tool_use"}],"id":"m","role":"assistant","type":"message"},"session_id":"s1"}`
	tests := []struct{ name, result, content string }{
		{"an image", `{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_img","type":"tool_result","content":[{"type":"image","source":{"type":"base64","data":"` + png + `","media_type":"image/png"}}]}]},"session_id":"s1"}`,
			`[{"type":"content","content":{"type":"image","data":"` + png + `","mimeType":"image/png"}}]`},
		{"text and an image", `{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_img","type":"tool_result","content":[{"type":"text","text":"a picture"},{"type":"image","source":{"type":"base64","data":"` + png + `","media_type":"image/png"}}]}]},"session_id":"s1"}`,
			`[{"type":"content","content":{"type":"text","text":"` + "```" + `\na picture\n` + "```" + `"}},{"type":"content","content":{"type":"image","data":"` + png + `","mimeType":"image/png"}}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := feedLines(t, newTranslator(""), use, tt.result)
			if len(got) != 2 || got[1].ToolCallUpdate == nil {
				t.Fatalf("updates %v", onWireAll(t, got))
			}
			m := onWire(t, got[1])
			var w any
			if err := json.Unmarshal([]byte(tt.content), &w); err != nil {
				t.Fatal(err)
			}
			if m["status"] != "completed" || !reflect.DeepEqual(m["content"], w) {
				t.Errorf("update %v\nwant content %v", m, w)
			}
			if m["rawOutput"] == nil {
				t.Errorf("no rawOutput: %v", m)
			}
		})
	}
}

func TestDuplicateToolUse(t *testing.T) {
	tr := newTranslator("")
	first := `{"type":"assistant","message":{"content":[{"id":"toolu_d","input":{},"name":"Bash","type":"tool_use"}],"id":"m","role":"assistant","type":"message"},"session_id":"s1"}`
	got := feedLines(t, tr, first, first, strings.Replace(bashUse, "toolu_bash", "toolu_d", 1))
	if len(got) != 2 || got[0].ToolCall == nil || got[1].ToolCallUpdate == nil {
		t.Fatalf("want a tool_call, nothing for the same line again, then an update: %v", onWireAll(t, got))
	}
	m := onWire(t, got[1])
	if m["title"] != "$ echo hi-there && echo second-line — Say hi" || m["rawInput"] == nil {
		t.Errorf("the update must carry the complete input and title: %v", m)
	}
}

func TestAbandon(t *testing.T) {
	tr := newTranslator("")
	feedLines(t, tr, bashUse)
	assertUpdates(t, tr.abandon(), `[{"sessionUpdate":"tool_call_update","toolCallId":"toolu_bash","status":"failed"}]`)
	if again := tr.abandon(); len(again) != 0 {
		t.Errorf("abandoned twice: %v", onWireAll(t, again))
	}
	if got := feedLines(t, tr, bashResult); len(got) != 0 {
		t.Errorf("a result after abandon: %v", onWireAll(t, got))
	}
}

func TestLastStopReason(t *testing.T) {
	result := `{"type":"result","subtype":"success","is_error":false,"num_turns":1,"stop_reason":"end_turn","session_id":"s1","total_cost_usd":0.001,"usage":{"input_tokens":1,"output_tokens":1}}`
	noReason := `{"type":"result","subtype":"success","is_error":false,"num_turns":0,"stop_reason":null,"session_id":"s1"}`
	refusalDelta := `{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"refusal","stop_sequence":null},"usage":{"output_tokens":5}},"session_id":"s1","parent_tool_use_id":null}`
	tests := []struct {
		name  string
		lines []string
		want  string
	}{
		{"from the result", []string{result}, "end_turn"},
		{"from message_delta when the result has none", []string{refusalDelta, noReason}, "refusal"},
		{"the result wins", []string{refusalDelta, result}, "end_turn"},
		{"a turn without one", []string{result, noReason}, ""},
		{"before any result", []string{refusalDelta}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTranslator("")
			feedLines(t, tr, tt.lines...)
			if got := tr.lastStopReason(); got != tt.want {
				t.Errorf("lastStopReason() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestUsage(t *testing.T) {
	msg, err := streamjson.Decode([]byte(`{"type":"result","subtype":"success","is_error":false,"duration_ms":2231,"num_turns":7,"session_id":"s1","total_cost_usd":0.00098,"usage":{"input_tokens":70,"cache_creation_input_tokens":3,"cache_read_input_tokens":4,"output_tokens":35},"modelUsage":{"claude-haiku-4-5":{"inputTokens":1,"contextWindow":200000},"claude-opus-5-5":{"inputTokens":70,"outputTokens":35,"costUSD":0.00098,"contextWindow":1000000,"maxOutputTokens":128000}}}`))
	if err != nil {
		t.Fatal(err)
	}
	res := msg.Result
	gotMeta, _ := json.Marshal(usageMeta(res))
	wantMeta := `{"total_cost_usd":0.00098,"usage":{"cache_creation_input_tokens":3,"cache_read_input_tokens":4,"input_tokens":70,"output_tokens":35,"total_tokens":105}}`
	if string(gotMeta) != wantMeta {
		t.Errorf("usageMeta = %s, want %s", gotMeta, wantMeta)
	}
	if u := promptUsage(res); u.InputTokens != 70 || u.OutputTokens != 35 || *u.CachedReadTokens != 4 || *u.CachedWriteTokens != 3 || u.TotalTokens != 112 {
		t.Errorf("promptUsage = %+v", u)
	}
	if usageMeta(nil) != nil || promptUsage(nil) != nil {
		t.Error("no result, no usage")
	}

	tr := newTranslator("")
	// The context is the latest main-thread message's: input, cache and output.
	feedLines(t, tr, `{"type":"assistant","message":{"content":[{"text":"x","type":"text"}],"id":"m","model":"claude-opus-5-5","role":"assistant","type":"message","usage":{"input_tokens":10,"output_tokens":5,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000}},"session_id":"s1"}`,
		`{"type":"assistant","message":{"content":[{"text":"sub","type":"text"}],"id":"m2","model":"claude-haiku-4-5","role":"assistant","type":"message","usage":{"input_tokens":99999,"output_tokens":1}},"parent_tool_use_id":"toolu_t","session_id":"s1"}`)
	u, ok := tr.usageUpdate(res)
	if !ok {
		t.Fatal("no usage_update")
	}
	assertUpdates(t, []acpsdk.SessionUpdate{u}, `[{"sessionUpdate":"usage_update","size":1000000,"used":1115,"cost":{"amount":0.00098,"currency":"USD"}}]`)

	msg, _ = streamjson.Decode([]byte(`{"type":"result","subtype":"success","session_id":"s1","total_cost_usd":0.1}`))
	if _, ok := newTranslator("").usageUpdate(msg.Result); ok {
		t.Error("usage_update without a context window")
	}
}

func TestAvailableCommands(t *testing.T) {
	info, err := os.ReadFile("testdata/init_response.json")
	if err != nil {
		t.Fatal(err)
	}
	wrapped := []byte(`{"type":"control_response","response":{"subtype":"success","request_id":"r1","response":` + string(info) + `}}`)
	for name, in := range map[string][]byte{"response": info, "control_response": wrapped} {
		t.Run(name, func(t *testing.T) {
			cmds := availableCommands(in)
			got := map[string]acpsdk.AvailableCommand{}
			var names []string
			for _, c := range cmds {
				got[c.Name] = c
				names = append(names, c.Name)
			}
			// __remote-workflow is internal, agents is "(removed)", color
			// only colours the CLI's own prompt bar.
			wantNames := []string{"deep-research", "debug", "compact", "context", "model", "usage"}
			if !reflect.DeepEqual(names, wantNames) {
				t.Errorf("commands %v, want %v", names, wantNames)
			}
			if d := got["debug"]; d.Description != "Enable debug logging for this session and help diagnose issues" ||
				d.Input == nil || d.Input.Unstructured == nil || d.Input.Unstructured.Hint != "[issue description]" {
				t.Errorf("debug = %+v", d)
			}
			if c := got["context"]; c.Input != nil {
				t.Errorf("context takes no input: %+v", c.Input)
			}
		})
	}
	if cmds := availableCommands([]byte(`not json`)); len(cmds) != 0 {
		t.Errorf("commands from garbage: %v", cmds)
	}
}

func FuzzTranslateLine(f *testing.F) {
	data, err := os.ReadFile("testdata/stream_partial.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	for l := range bytes.SplitSeq(data, []byte("\n")) {
		if len(l) > 0 {
			f.Add(l)
		}
	}
	f.Add([]byte(bashResult))
	tr := newTranslator(f.TempDir())
	f.Fuzz(func(t *testing.T, line []byte) {
		msg, err := streamjson.Decode(line)
		if err != nil {
			return
		}
		for _, u := range tr.line(msg) {
			if err := u.Validate(); err != nil {
				t.Fatalf("invalid update from %q: %v", line, err)
			}
			if _, err := json.Marshal(u); err != nil {
				t.Fatalf("update from %q does not encode: %v", line, err)
			}
		}
	})
}

// TestStopReasonRealCLI: the CLI's assistant lines carry no stop_reason
// (null, seen with 2.1.330), so the turn's is read from the result line.
// A refusal does not end the turn there: the CLI tells the model in a
// synthetic user line and asks again, and the result has the final
// message's stop_reason (here the scripted "done" after it).
func TestStopReasonRealCLI(t *testing.T) {
	cli := realcli.RealCLI(t)
	cwd := t.TempDir()
	cli.TrustDir(cwd)
	api := mockapi.New(t, mockapi.Script{{Blocks: []mockapi.Block{mockapi.Text("I can't help with that.")}, StopReason: "refusal"}})
	e := executor.New(executor.Options{CLIPath: cli.Path, BaseEnv: cli.Env(t, api.URL())})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tr := newTranslator(cwd)
	var mu sync.Mutex
	var got []acpsdk.SessionUpdate
	var reasons []string // the assistant lines' own stop_reason
	res, err := e.Run(ctx, executor.Request{RunOptions: executor.RunOptions{Cwd: cwd, MaxTurns: 3, PartialMessages: true}, Prompt: "do something bad"},
		executor.ObserverFunc(func(ev executor.Event) {
			if ev.Kind != executor.EventLine {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if a := ev.Message.Assistant; a != nil {
				reasons = append(reasons, a.Message.StopReason)
			}
			got = append(got, tr.line(ev.Message)...)
		}), nil)
	if err != nil || res.Status != executor.StatusCompleted {
		t.Fatalf("run: %+v, %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if r := tr.lastStopReason(); r != "end_turn" {
		t.Errorf("lastStopReason() = %q, want the result's end_turn", r)
	}
	if s := chunkText(t, got, "agent_message_chunk"); s != "I can't help with that.\n\ndone" {
		t.Errorf("message text %q: the refused text, then the answer after it", s)
	}
	t.Logf("assistant lines' stop_reason: %q", reasons)
}

// stamp numbers each session's prompts as they arrive, replacing a
// client's own value, and leaves every other line as it was.
func TestArrivalStamp(t *testing.T) {
	a := arrivals{}
	prompt := func(sid, meta string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[]` + meta + `}}`
	}
	for i, tt := range []struct {
		line string
		want int
	}{
		{prompt("s1", ""), 0},
		{prompt("s2", ""), 0},
		{prompt("s1", `,"_meta":{"claudeRelayArrival":99,"other":"kept"}`), 1},
		{prompt("s1", `,"_meta":"not an object"`), 2},
	} {
		var m struct {
			Params struct {
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		out := a.stamp([]byte(tt.line))
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("%d: %v: %s", i, err, out)
		}
		if got := arrivalOf(m.Params.Meta); got != tt.want {
			t.Errorf("%d: arrival %d, want %d (%s)", i, got, tt.want, out)
		}
		if i == 2 && m.Params.Meta["other"] != "kept" {
			t.Errorf("the client's other _meta keys were lost: %s", out)
		}
	}
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"session/cancel","params":{"sessionId":"s1"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"/x","note":"session/prompt"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"prompt":[]}}`,
	} {
		if out := a.stamp([]byte(line)); string(out) != line {
			t.Errorf("%s changed to %s", line, out)
		}
	}
}
