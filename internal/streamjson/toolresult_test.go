package streamjson

import (
	"encoding/json"
	"reflect"
	"testing"
)

// pngHeader is the 8-byte PNG signature; "iVBORw0KGgo=" is its base64.
var pngHeader = []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}

func TestParseToolResultContent(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want ToolResultContent
	}{
		{"string", `"hello\nworld"`, ToolResultContent{Text: "hello\nworld"}},
		{"empty string", `""`, ToolResultContent{}},
		{"missing", ``, ToolResultContent{}},
		{"null", ` null `, ToolResultContent{}},
		{"text blocks joined", `[{"type":"text","text":"a"},{"type":"text","text":"b"}]`, ToolResultContent{Text: "a\n\nb"}},
		{"one text block", `[{"type":"text","text":"only"}]`, ToolResultContent{Text: "only"}},
		{"empty array", `[]`, ToolResultContent{}},
		{"single image", `[{"type":"image","source":{"type":"base64","data":"iVBORw0KGgo=","media_type":"image/png"}}]`,
			ToolResultContent{Kind: ToolResultImage, Image: Image{Data: pngHeader, MediaType: "image/png"}}},
		{"single image unpadded", `[{"type":"image","source":{"type":"base64","data":"iVBORw0KGgo","media_type":"image/png"}}]`,
			ToolResultContent{Kind: ToolResultImage, Image: Image{Data: pngHeader, MediaType: "image/png"}}},
		{"object", `{"stdout": "x", "code": 0}`, ToolResultContent{Text: `{"stdout":"x","code":0}`}},
		{"number", `42`, ToolResultContent{Text: "42"}},
		{"array of strings", `["a", "b"]`, ToolResultContent{Text: `["a","b"]`}},
		{"array with unknown block", `[{"type":"text","text":"a"},{"type":"tool_reference","tool_name":"x"}]`,
			ToolResultContent{Text: `[{"type":"text","text":"a"},{"type":"tool_reference","tool_name":"x"}]`}},
		{"image without source", `[{"type":"image"}]`, ToolResultContent{Text: `[{"type":"image"}]`}},
		{"not json", `not json at all`, ToolResultContent{Text: "not json at all"}},
		{"truncated string", `"abc`, ToolResultContent{Text: `"abc`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseToolResultContent(json.RawMessage(tt.raw))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseToolResultContent(%s) = %+v, want %+v", tt.raw, got, tt.want)
			}
		})
	}
}

func TestParseToolResultContentMixed(t *testing.T) {
	tests := []struct {
		name      string
		raw       string
		wantTypes []string
	}{
		{"text and image", `[{"type":"text","text":"see"},{"type":"image","source":{"type":"base64","data":"iVBORw0KGgo=","media_type":"image/png"}}]`,
			[]string{BlockText, BlockImage}},
		{"two images", `[{"type":"image","source":{"type":"base64","data":"AAAA","media_type":"image/gif"}},{"type":"image","source":{"type":"base64","data":"AAAA","media_type":"image/gif"}}]`,
			[]string{BlockImage, BlockImage}},
		// Seed 000 §3.6: a lone image whose data is not base64 is not an
		// Image, and not all text either, so it is Mixed.
		{"single image with bad base64", `[{"type":"image","source":{"type":"base64","data":"!!!","media_type":"image/png"}}]`,
			[]string{BlockImage}},
		{"single url image", `[{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}]`,
			[]string{BlockImage}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseToolResultContent(json.RawMessage(tt.raw))
			if got.Kind != ToolResultMixed || len(got.Blocks) != len(tt.wantTypes) {
				t.Fatalf("got %+v, want %d mixed blocks", got, len(tt.wantTypes))
			}
			for i, b := range got.Blocks {
				if b.Type != tt.wantTypes[i] || len(b.Raw) == 0 {
					t.Errorf("block %d = %+v, want type %s with Raw", i, b, tt.wantTypes[i])
				}
			}
		})
	}
}

func TestToolResultContentJSON(t *testing.T) {
	tests := []struct {
		name   string
		c      ToolResultContent
		want   any
		wantOK bool
	}{
		{"object", ToolResultContent{Text: ` {"a": [1, 12345678901234567890]} `},
			map[string]any{"a": []any{json.Number("1"), json.Number("12345678901234567890")}}, true},
		{"array", ToolResultContent{Text: `["x"]`}, []any{"x"}, true},
		{"plain text", ToolResultContent{Text: "hello"}, nil, false},
		{"scalar", ToolResultContent{Text: "42"}, nil, false},
		{"invalid", ToolResultContent{Text: `{"a":`}, nil, false},
		{"trailing garbage", ToolResultContent{Text: `{} {}`}, nil, false},
		{"empty", ToolResultContent{}, nil, false},
		{"image", ToolResultContent{Kind: ToolResultImage, Text: `{}`}, nil, false},
		{"from object content", ParseToolResultContent(json.RawMessage(`{"ok":true}`)), map[string]any{"ok": true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.c.JSON()
			if ok != tt.wantOK || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("JSON() = %#v, %v; want %#v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestToolResultKindString(t *testing.T) {
	for k, want := range map[ToolResultKind]string{ToolResultText: "text", ToolResultImage: "image", ToolResultMixed: "mixed", 9: "unknown"} {
		if got := k.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", k, got, want)
		}
	}
}

func TestUsage(t *testing.T) {
	var total Usage
	if !total.IsZero() {
		t.Error("zero Usage is not IsZero")
	}
	m := mustDecode(t, lineResultSuccess)
	total.Add(m.Result.Usage)
	total.Add(mustDecode(t, lineResultMaxTurns).Result.Usage)
	want := Usage{InputTokens: 41, OutputTokens: 158, CacheReadInputTokens: 25588, CacheCreationInputTokens: 1520}
	if total != want {
		t.Errorf("sum = %+v, want %+v", total, want)
	}
	if got := total.Total(); got != 199 {
		t.Errorf("Total() = %d, want 199 (input + output)", got)
	}
	b, err := json.Marshal(total)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"input_tokens":41,"output_tokens":158,"cache_read_input_tokens":25588,"cache_creation_input_tokens":1520}` {
		t.Errorf("Marshal = %s", b)
	}
}
