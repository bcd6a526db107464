package streamjson

import (
	"encoding/json"
	"testing"
)

func BenchmarkDecode(b *testing.B) {
	cases := []struct {
		name string
		line string
	}{
		{"assistant", lineAssistantToolUse},
		{"result", lineResultSuccess},
		{"user", lineUserToolResult},
		{"stream_event", lineStreamEvent},
		{"can_use_tool", lineCanUseTool},
	}
	for _, c := range cases {
		line := []byte(c.line)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decode(line); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// The lazy part: what a consumer pays when it does look at the blocks.
	line := []byte(lineAssistantToolUse)
	b.Run("assistant+blocks", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		b.ReportAllocs()
		for b.Loop() {
			m, err := Decode(line)
			if err != nil {
				b.Fatal(err)
			}
			_ = m.Assistant.Message.Blocks()
		}
	})
}

// BenchmarkDecodeBaseline decodes the same lines into map[string]any, the
// obvious alternative, as a baseline for BenchmarkDecode in the same run.
func BenchmarkDecodeBaseline(b *testing.B) {
	for _, c := range []struct{ name, line string }{
		{"assistant", lineAssistantToolUse},
		{"result", lineResultSuccess},
	} {
		line := []byte(c.line)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			for b.Loop() {
				var m map[string]any
				if err := json.Unmarshal(line, &m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
