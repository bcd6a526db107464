package tooltitle

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestFull(t *testing.T) {
	long := "echo harmless-looking-prefix " + strings.Repeat("x", 300) + " && rm -rf /tmp/victim"
	tests := []struct {
		name, input, want string
	}{
		// The description never replaces the command: the whole command comes first.
		{"Bash", `{"command":"` + long + `","description":"Run echo harmless-looking-prefix"}`,
			"$ " + long + " — Run echo harmless-looking-prefix"},
		{"Bash", `{"command":"ls"}`, "$ ls"},
		{"Bash", `{}`, "Bash (no command)"},
		{"Write", `{"file_path":"/w/a.go","content":"x"}`, "Write /w/a.go"},
		{"Edit", `{"file_path":"/w/a.go"}`, "Edit /w/a.go"},
		{"MultiEdit", `{"file_path":"/w/a.go"}`, "MultiEdit /w/a.go"},
		{"NotebookEdit", `{"notebook_path":"/w/n.ipynb"}`, "NotebookEdit /w/n.ipynb"},
		{"WebFetch", `{"url":"https://example.invalid/x","prompt":"p"}`, "Fetch https://example.invalid/x"},
		{"Grep", `{"pattern":"TODO","path":"src"}`, "Grep TODO in src"},
		{"WebSearch", `{"query":"go generics"}`, "Search the web: go generics"},
		{"Task", `{"prompt":"look around\nmore","description":"Explore"}`, "Subagent: look around — Explore"},
		{"mcp__db__query", `{"sql": "drop table users"}`, `mcp__db__query {"sql":"drop table users"}`},
		{"ExitPlanMode", `{"plan":"1. Test\n2. Write"}`, "Plan: 1. Test\n2. Write"},
		{"ExitPlanMode", `{}`, "Plan: (no plan text)"},
		{"AskUserQuestion", `{"questions":[{"question":"Which color?"},{"question":"How many?"}]}`, "Question: Which color? / How many?"},
		{"mcp__x", `{}`, "mcp__x"},
		{"mcp__y", `not json`, "mcp__y not json"},
	}
	for _, tt := range tests {
		if got := Full(tt.name, json.RawMessage(tt.input)); got != tt.want {
			t.Errorf("Full(%s, %s) =\n %q\nwant\n %q", tt.name, tt.input, got, tt.want)
		}
	}
}

func TestDiff(t *testing.T) {
	tests := []struct {
		name, input string
		max         int
		want        string
	}{
		{"Write", `{"content":"a\nb\n"}`, 10, "+a\n+b"},
		{"Edit", `{"old_string":"x := 1","new_string":"x := 2"}`, 10, "-x := 1\n+x := 2"},
		{"MultiEdit", `{"edits":[{"old_string":"a","new_string":"b"},{"old_string":"c","new_string":""}]}`, 10, "-a\n+b\n-c"},
		{"Write", `{"content":"1\n2\n3\n4"}`, 2, "+1\n+2\n… 2 more lines"},
		{"Write", `{"content":"1\n2\n3"}`, 2, "+1\n+2\n… 1 more line"},
		{"Bash", `{"command":"ls"}`, 10, ""},
		{"Write", `nope`, 10, ""},
	}
	for _, tt := range tests {
		if got := Diff(tt.name, json.RawMessage(tt.input), tt.max); got != tt.want {
			t.Errorf("Diff(%s, %s) = %q, want %q", tt.name, tt.input, got, tt.want)
		}
	}
}
