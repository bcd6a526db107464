package streamjson

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestUserMessageContent(t *testing.T) {
	tests := []struct {
		name, content, want string
	}{
		{"string", `"hello"`, `{"type":"user","message":{"role":"user","content":"hello"}}`},
		{"string like UserMessage", `"fix <div> & x"`, string(UserMessage("fix <div> & x"))},
		{"blocks, compacted to one line", "[\n {\"type\": \"text\", \"text\": \"a\\nb <c>\"},\n {\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":\"image/png\",\"data\":\"iVBO\"}}\n]",
			`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"a\nb <c>"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}}]}}`},
		{"surrounding space", "  \"x\"\n", `{"type":"user","message":{"role":"user","content":"x"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := UserMessageContent(json.RawMessage(tt.content))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got\n %s\nwant\n %s", got, tt.want)
			}
			if strings.Contains(string(got), "\n") {
				t.Error("the line holds a raw newline")
			}
		})
	}
}

func TestUserMessageContentRoundTrip(t *testing.T) {
	line, err := UserMessageContent(json.RawMessage(`[{"type":"text","text":"look at this"},{"type":"text","text":"and this"}]`))
	if err != nil {
		t.Fatal(err)
	}
	m := mustDecode(t, string(line))
	if m.User == nil || m.User.Text() != "look at this\nand this" {
		t.Errorf("decoded %+v", m.User)
	}
}

func TestUserMessageContentRejects(t *testing.T) {
	for _, c := range []string{``, `   `, `null`, `{"type":"text","text":"x"}`, `42`, `[]`, `["text"]`, `[{"type":"text"}`, `"unterminated`} {
		_, err := UserMessageContent(json.RawMessage(c))
		if !errors.Is(err, ErrBadContent) {
			t.Errorf("UserMessageContent(%q): err = %v, want ErrBadContent", c, err)
		}
	}
}
