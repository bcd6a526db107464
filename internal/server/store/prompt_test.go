package store_test

import (
	"encoding/json"
	"testing"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/wire"
)

func TestDescribeBlocks(t *testing.T) {
	png := func(path string, size int64) wire.PromptBlock {
		return wire.PromptBlock{Type: "image", Path: path, MediaType: "image/png", Size: size}
	}
	for _, tc := range []struct {
		blocks []wire.PromptBlock
		total  int
		want   string
	}{
		{nil, 0, ""},
		{[]wire.PromptBlock{png("shots/image.png", 120<<10)}, 1, "image.png (PNG, 120.0 KiB)"},
		{[]wire.PromptBlock{{Type: "image", MediaType: "image/jpeg", Size: 900}}, 1, "image (JPEG, 900 B)"},
		{[]wire.PromptBlock{{Type: "file", Path: "notes.txt", MediaType: "text/plain", Size: 2048}}, 1, "notes.txt (text, 2.0 KiB)"},
		{[]wire.PromptBlock{{Type: "resource_link", Name: "main.go", Path: "file:///w/main.go"}}, 1, "main.go"},
		{[]wire.PromptBlock{{Type: "resource", Path: "https://x.test/a/b.md?rev=2#top", MediaType: "text/markdown", Size: 5}}, 1, "b.md (text/markdown, 5 B)"},
		{[]wire.PromptBlock{{Type: "resource", Path: "/"}}, 1, "resource"},
		{[]wire.PromptBlock{{Type: "text"}, png("a.png", 1)}, 2, "a.png (PNG, 1 B)"},
		{[]wire.PromptBlock{{Type: "text"}}, 1, ""},
		{[]wire.PromptBlock{png("a.png", 1), png("b.png", 1), png("c.png", 1), png("d.png", 1), png("e.png", 1)}, 300,
			"a.png (PNG, 1 B), b.png (PNG, 1 B), c.png (PNG, 1 B), d.png (PNG, 1 B) and 296 more"},
	} {
		if got := store.DescribeBlocks(tc.blocks, tc.total); got != tc.want {
			t.Errorf("DescribeBlocks(%+v, %d) = %q, want %q", tc.blocks, tc.total, got, tc.want)
		}
	}
}

// The prompt facts of relay events: the text of schema 2, a description of
// blocks alone, and version 1's summaries marked legacy.
func TestPromptFacts(t *testing.T) {
	for _, tc := range []struct {
		typ, data string
		prompt    string
		legacy    bool
	}{
		{wire.TypeMessageSent, mustJSON(t, wire.MessageSent{RunID: "r", PromptRecord: wire.RecordPrompt("hello", nil)}), "hello", false},
		{wire.TypeMessageSent, mustJSON(t, wire.MessageSent{RunID: "r", PromptRecord: wire.RecordPrompt(" ", []wire.PromptBlock{{Type: "image", Path: "x.png", MediaType: "image/png", Size: 3}})}), "x.png (PNG, 3 B)", false},
		{store.EventRunStarted, mustJSON(t, wire.RunStarted{RunID: "r", Idle: true, Mode: wire.ModeACP}), "", false},
		{wire.TypeMessageSent, `{"run_id":"r","prompt":"[text, 30 B]","blocks":1}`, "[text, 30 B]", true},
		{store.EventRunStarted, `{"run_id":"r","prompt":"prompt text + [image x.png, 2.0 KiB] + 3 more blocks"}`, "prompt text + [image x.png, 2.0 KiB] + 3 more blocks", true},
		{store.EventRunStarted, `{"run_id":"r","prompt":"[draft] fix the bug"}`, "[draft] fix the bug", false},
		{wire.TypeMessageSent, `{"v":2,"prompt":"[text, 30 B]"}`, "[text, 30 B]", false},
		{wire.TypeMessageSent, `{"v":2,"blocks":"not a list"}`, "", false},
	} {
		f := store.FactsOf(store.Event{EventType: tc.typ, EventData: json.RawMessage(tc.data)})
		if f.Prompt != tc.prompt || f.LegacyPrompt != tc.legacy {
			t.Errorf("%s %s: prompt %q (legacy %v), want %q (%v)", tc.typ, tc.data, f.Prompt, f.LegacyPrompt, tc.prompt, tc.legacy)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
