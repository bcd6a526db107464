package wire

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRecordPrompt(t *testing.T) {
	tenMiB := strings.Repeat("abcdefgh", 10<<20/8)
	// "é" is two bytes: the cap falls inside one.
	accents := strings.Repeat("é", MaxPromptBytes/2) + "!"
	for _, tc := range []struct {
		name      string
		text      string
		want      string
		bytes     int
		truncated bool
	}{
		{"plain", "fix the test", "fix the test", 12, false},
		{"blank: no prompt", " \n\t", "", 0, false},
		{"exactly the cap", strings.Repeat("x", MaxPromptBytes), strings.Repeat("x", MaxPromptBytes), MaxPromptBytes, false},
		{"one byte over", strings.Repeat("x", MaxPromptBytes+1), strings.Repeat("x", MaxPromptBytes), MaxPromptBytes + 1, true},
		{"10 MiB", tenMiB, tenMiB[:MaxPromptBytes], 10 << 20, true},
		{"cut on a rune boundary", "x" + accents, "x" + strings.Repeat("é", (MaxPromptBytes-1)/2), 1 + len(accents), true},
		{"invalid UTF-8 and NUL: each byte replaced", "ok\xff\xfe\x00end", "ok\uFFFD\uFFFD\uFFFDend", 8, false},
		{"U+FFFD itself stays", "a\uFFFDb", "a\uFFFDb", 5, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RecordPrompt(tc.text, nil)
			if got.Prompt != tc.want || got.PromptBytes != tc.bytes || got.PromptTruncated != tc.truncated {
				t.Errorf("RecordPrompt: %d bytes (prompt_bytes %d, truncated %v); want %d bytes (%d, %v)",
					len(got.Prompt), got.PromptBytes, got.PromptTruncated, len(tc.want), tc.bytes, tc.truncated)
			}
			if !utf8.ValidString(got.Prompt) || strings.ContainsRune(got.Prompt, 0) || len(got.Prompt) > MaxPromptBytes {
				t.Errorf("recorded prompt is not bounded, valid UTF-8 without NUL")
			}
		})
	}
}

func TestRecordPromptBlocks(t *testing.T) {
	blocks := make([]PromptBlock, 300)
	for i := range blocks {
		blocks[i] = PromptBlock{Type: BlockImage, MediaType: "image/png", Size: 10, SHA256: SHA256([]byte{byte(i)})}
	}
	got := RecordPrompt("", blocks)
	if len(got.Blocks) != MaxPromptBlocks || !got.BlocksTruncated || got.BlocksTotal != 300 || got.Prompt != "" {
		t.Errorf("300 blocks: kept %d, truncated %v, total %d; want %d, true, 300", len(got.Blocks), got.BlocksTruncated, got.BlocksTotal, MaxPromptBlocks)
	}
	if got := RecordPrompt("", blocks[:100]); len(got.Blocks) != 100 || got.BlocksTruncated || got.BlocksTotal != 0 {
		t.Errorf("100 blocks: kept %d, truncated %v, total %d; want all, unmarked", len(got.Blocks), got.BlocksTruncated, got.BlocksTotal)
	}
	long := RecordPrompt("", []PromptBlock{{Type: BlockFile, Path: strings.Repeat("ü", MaxBlockField), Name: "a\x00b"}})
	if p := long.Blocks[0].Path; len(p) > MaxBlockField || !utf8.ValidString(p) || !strings.HasSuffix(p, "…") {
		t.Errorf("a long path is recorded as %d bytes (valid %v), want at most %d ending in …", len(p), utf8.ValidString(p), MaxBlockField)
	}
	if n := long.Blocks[0].Name; n != "a\uFFFDb" {
		t.Errorf("name %q, want NUL replaced", n)
	}
	if !(PromptRecord{}).Empty() || RecordPrompt("", blocks[:1]).Empty() || RecordPrompt("x", nil).Empty() {
		t.Error("Empty: only a record with neither text nor blocks is empty")
	}
}

func TestJoinPrompt(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"one"}, "one"},
		{[]string{"look at", "this"}, "look at\n\nthis"},
		{[]string{"look at ", "@/w/a.go", " please"}, "look at @/w/a.go please"},
		{[]string{"a\n", "b"}, "a\nb"},
		{[]string{"", "  ", "x", ""}, "x"},
	} {
		if got := JoinPrompt(tc.in...); got != tc.want {
			t.Errorf("JoinPrompt(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSHA256(t *testing.T) {
	if got := SHA256([]byte("abc")); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("SHA256(abc) = %s", got)
	}
}

// Every relay event's data says its schema version; run_started and
// message_sent carry the prompt record's fields flat beside their own.
func TestEventVersions(t *testing.T) {
	rec := RecordPrompt("hi", []PromptBlock{{Type: BlockText, Size: 2}})
	for _, tc := range []struct {
		data any
		want string
	}{
		{RunStarted{RunID: "r", PromptRecord: rec, Cwd: "/w"},
			`{"v":2,"run_id":"r","prompt":"hi","prompt_bytes":2,"blocks":[{"type":"text","size":2}],"cwd":"/w"}`},
		{RunStarted{RunID: "r", Mode: ModeACP, Idle: true, Cwd: "/w"}, `{"v":2,"run_id":"r","mode":"acp","idle":true,"cwd":"/w"}`},
		{MessageSent{RunID: "r", PromptRecord: rec}, `{"v":2,"run_id":"r","prompt":"hi","prompt_bytes":2,"blocks":[{"type":"text","size":2}]}`},
		{MessageSent{RunID: "r", PromptRecord: RecordPrompt(strings.Repeat("x", MaxPromptBytes+2), nil)}, ``},
		{RunEnded{RunID: "r", Status: "completed"}, `{"v":1,"run_id":"r","status":"completed","result":{"stdout":"","stderr":"","exitCode":0,"duration_ms":0},"conversation_id":""}`},
		{TurnCompleted{RunID: "r", Turn: 1, Status: "completed"}, `{"v":2,"run_id":"r","turn":1,"status":"completed","result":{"stdout":"","stderr":"","exitCode":0,"duration_ms":0}}`},
		{ModeChanged{RunID: "r", PermissionMode: "plan"}, `{"v":1,"run_id":"r","permission_mode":"plan"}`},
		{Stderr{RunID: "r", Line: "x"}, `{"v":1,"run_id":"r","line":"x"}`},
		{LimitNotice{RunID: "r", Message: "m"}, `{"v":1,"run_id":"r","message":"m"}`},
		{MalformedLine{RunID: "r", Raw: "x"}, `{"v":1,"run_id":"r","raw":"x"}`},
		{ApprovalRequested{RunID: "r", ApprovalID: "a", Kind: ApprovalTool, ToolName: "Bash", Title: "ls", Options: []Decision{DecisionAllow}},
			`{"v":1,"run_id":"r","approval_id":"a","kind":"tool","tool_name":"Bash","title":"ls","options":["allow"]}`},
		{ApprovalResolved{RunID: "r", ApprovalID: "a", Decision: "allow", By: ByTTY}, `{"v":1,"run_id":"r","approval_id":"a","decision":"allow","by":"tty"}`},
	} {
		b, err := json.Marshal(tc.data)
		if err != nil {
			t.Fatalf("%T: %v", tc.data, err)
		}
		if tc.want == "" {
			// A cut prompt says so, and how big it was.
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil || m["prompt_truncated"] != true || m["prompt_bytes"] != float64(MaxPromptBytes+2) {
				t.Errorf("%T: a cut prompt's data has prompt_truncated %v, prompt_bytes %v", tc.data, m["prompt_truncated"], m["prompt_bytes"])
			}
			continue
		}
		if string(b) != tc.want {
			t.Errorf("%T:\n got %s\nwant %s", tc.data, b, tc.want)
		}
	}
}
