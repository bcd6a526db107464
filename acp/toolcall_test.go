package acp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
)

// use is an assistant line with one tool_use.
func toolUseLine(t *testing.T, id, name string, input map[string]any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"type": "assistant", "session_id": "s1", "parent_tool_use_id": nil,
		"message": map[string]any{"id": "msg_" + id, "role": "assistant", "type": "message",
			"content": []any{map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// result is a user line with one tool_result and the tool's structured
// result, as the CLI writes them.
func toolResultLine(t *testing.T, id string, isError bool, content any, toolUseResult any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"type": "user", "session_id": "s1", "parent_tool_use_id": nil, "tool_use_result": toolUseResult,
		"message": map[string]any{"role": "user",
			"content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": content, "is_error": isError}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDiffs(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "old.txt")
	if err := os.WriteFile(existing, []byte("line one\nline two\nline three\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "new.txt")
	tests := []struct {
		name, tool string
		input      map[string]any
		want       string // the tool_call's content and locations
	}{
		{"write over a file: the old text is the file", "Write", map[string]any{"file_path": existing, "content": "brand new\n"},
			`{"content":[{"type":"diff","path":"` + existing + `","oldText":"line one\nline two\nline three\n","newText":"brand new\n"}],"locations":[{"path":"` + existing + `"}]}`},
		{"write a new file: no old text", "Write", map[string]any{"file_path": fresh, "content": "hello\n"},
			`{"content":[{"type":"diff","path":"` + fresh + `","newText":"hello\n"}],"locations":[{"path":"` + fresh + `"}]}`},
		{"a relative path is the session's", "Write", map[string]any{"file_path": "new.txt", "content": "x"},
			`{"content":[{"type":"diff","path":"` + fresh + `","newText":"x"}],"locations":[{"path":"` + fresh + `"}]}`},
		{"edit: the replaced text, on its line", "Edit", map[string]any{"file_path": existing, "old_string": "line two", "new_string": "line 2"},
			`{"content":[{"type":"diff","path":"` + existing + `","oldText":"line two","newText":"line 2"}],"locations":[{"path":"` + existing + `","line":2}]}`},
		{"multiedit: one diff per edit", "MultiEdit", map[string]any{"file_path": existing, "edits": []any{
			map[string]any{"old_string": "line one", "new_string": "1"}, map[string]any{"old_string": "line three", "new_string": "3"}}},
			`{"content":[{"type":"diff","path":"` + existing + `","oldText":"line one","newText":"1"},{"type":"diff","path":"` + existing + `","oldText":"line three","newText":"3"}],"locations":[{"path":"` + existing + `"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := feedLines(t, newTranslator(dir), toolUseLine(t, "toolu_e", tt.tool, tt.input))
			if len(got) != 1 || got[0].ToolCall == nil {
				t.Fatalf("updates %v", onWireAll(t, got))
			}
			m := onWire(t, got[0])
			if m["kind"] != "edit" || m["status"] != "pending" {
				t.Errorf("kind %v status %v", m["kind"], m["status"])
			}
			assertJSON(t, map[string]any{"content": m["content"], "locations": m["locations"]}, tt.want)
		})
	}
}

func TestEditResultKeepsDiff(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "old.txt")
	if err := os.WriteFile(path, []byte("line one\nline two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const ok = "The file has been updated successfully."
	tests := []struct {
		name     string
		tool     string
		input    map[string]any
		isError  bool
		content  any
		structed any
		read     bool   // look at the disk (live) or not (replay)
		want     string // the update's content and locations
	}{
		{"edit completed", "Edit", map[string]any{"file_path": path, "old_string": "line two", "new_string": "edited"}, false, ok,
			map[string]any{"filePath": path, "oldString": "line two", "newString": "edited", "originalFile": "line one\nline two\n",
				"structuredPatch": []any{map[string]any{"oldStart": 2, "oldLines": 1, "newStart": 2, "newLines": 1}}}, true,
			`{"content":[{"type":"diff","path":"` + path + `","oldText":"line two","newText":"edited"}],"locations":[{"path":"` + path + `","line":2}]}`},
		{"write completed: the result's original file", "Write", map[string]any{"file_path": path, "content": "brand new\n"}, false, ok,
			map[string]any{"type": "update", "filePath": path, "content": "brand new\n", "originalFile": "line one\nline two\n",
				"structuredPatch": []any{map[string]any{"oldStart": 1, "newStart": 1}}}, false,
			`{"content":[{"type":"diff","path":"` + path + `","oldText":"line one\nline two\n","newText":"brand new\n"}],"locations":[{"path":"` + path + `","line":1}]}`},
		{"write created a file", "Write", map[string]any{"file_path": path, "content": "brand new\n"}, false, ok,
			map[string]any{"type": "create", "filePath": path, "content": "brand new\n", "originalFile": nil, "structuredPatch": []any{}}, false,
			`{"content":[{"type":"diff","path":"` + path + `","newText":"brand new\n"}],"locations":null}`},
		{"edit failed: the error, not a diff", "Edit", map[string]any{"file_path": path, "old_string": "nope", "new_string": "x"}, true,
			"<tool_use_error>String to replace not found in file.\nString: nope</tool_use_error>", "Error: String to replace not found in file.", true,
			`{"content":[{"type":"content","content":{"type":"text","text":"String to replace not found in file.\nString: nope"}}],"locations":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTranslator(dir)
			if !tt.read {
				tr.read = nil
			}
			got := feedLines(t, tr, toolUseLine(t, "toolu_e", tt.tool, tt.input), toolResultLine(t, "toolu_e", tt.isError, tt.content, tt.structed))
			if len(got) != 2 || got[1].ToolCallUpdate == nil {
				t.Fatalf("updates %v", onWireAll(t, got))
			}
			m := onWire(t, got[1])
			wantStatus := "completed"
			if tt.isError {
				wantStatus = "failed"
			}
			if m["status"] != wantStatus || m["rawOutput"] == nil {
				t.Errorf("status %v rawOutput %v", m["status"], m["rawOutput"])
			}
			assertJSON(t, map[string]any{"content": m["content"], "locations": m["locations"]}, tt.want)
		})
	}
}

func assertJSON(t *testing.T, got any, wantJSON string) {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(g, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(wantJSON), &b); err != nil {
		t.Fatalf("bad expectation %s: %v", wantJSON, err)
	}
	ga, _ := json.Marshal(a)
	gb, _ := json.Marshal(b)
	if string(ga) != string(gb) {
		t.Errorf("got  %s\nwant %s", ga, gb)
	}
}

func TestToolKinds(t *testing.T) {
	kinds := map[string]acpsdk.ToolKind{
		"Read": acpsdk.ToolKindRead, "Edit": acpsdk.ToolKindEdit, "MultiEdit": acpsdk.ToolKindEdit, "Write": acpsdk.ToolKindEdit,
		"NotebookEdit": acpsdk.ToolKindEdit, "Bash": acpsdk.ToolKindExecute, "BashOutput": acpsdk.ToolKindExecute,
		"KillShell": acpsdk.ToolKindExecute, "Grep": acpsdk.ToolKindSearch, "Glob": acpsdk.ToolKindSearch,
		"WebFetch": acpsdk.ToolKindFetch, "WebSearch": acpsdk.ToolKindFetch, "Task": acpsdk.ToolKindThink,
		"Agent": acpsdk.ToolKindThink, "ExitPlanMode": acpsdk.ToolKindSwitchMode, "EnterPlanMode": acpsdk.ToolKindSwitchMode,
		"AskUserQuestion": acpsdk.ToolKindOther, "mcp__github__create_issue": acpsdk.ToolKindOther,
	}
	for name, want := range kinds {
		if got := toolKind(name); got != want {
			t.Errorf("toolKind(%s) = %s, want %s", name, got, want)
		}
	}
}

func TestFenced(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "```\nplain\n```"},
		{"has ``` inside", "````\nhas ``` inside\n````"},
		{"````` five", "``````\n````` five\n``````"},
	}
	for _, tt := range tests {
		if got := fenced(tt.in); got != tt.want {
			t.Errorf("fenced(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestReadSmallFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(small, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, []byte(strings.Repeat("x", maxDiffFile+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, ok := readSmallFile(small); !ok || string(b) != "x" {
		t.Errorf("small file: %q %v", b, ok)
	}
	for _, p := range []string{big, dir, filepath.Join(dir, "missing")} {
		if _, ok := readSmallFile(p); ok {
			t.Errorf("readSmallFile(%s) should give nothing", p)
		}
	}
}

func TestPermissionToolCall(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "old.txt")
	if err := os.WriteFile(path, []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, tool, input, want string
	}{
		{"write: the diff against the disk", "Write", `{"file_path":"old.txt","content":"after\n"}`,
			`{"toolCallId":"toolu_1","title":"Write old.txt","kind":"edit","status":"pending",
			  "content":[{"type":"diff","path":"` + path + `","oldText":"before\n","newText":"after\n"}],
			  "locations":[{"path":"` + path + `"}],"rawInput":{"file_path":"old.txt","content":"after\n"}}`},
		{"bash: the whole command", "Bash", `{"command":"rm -rf build","description":"Clean"}`,
			`{"toolCallId":"toolu_1","title":"$ rm -rf build — Clean","kind":"execute","status":"pending","rawInput":{"command":"rm -rf build","description":"Clean"}}`},
		// The CLI asks about ExitPlanMode with an empty input: the tool_call
		// keeps its plan text.
		{"a plan", "ExitPlanMode", `{}`,
			`{"toolCallId":"toolu_1","title":"Ready to code?","kind":"switch_mode","status":"pending","rawInput":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc := permissionToolCall("toolu_1", tt.tool, json.RawMessage(tt.input), dir)
			if err := tc.Validate(); err != nil {
				t.Fatal(err)
			}
			assertJSON(t, tc, tt.want)
		})
	}
}
