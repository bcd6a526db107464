package streamjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrBadContent is returned by UserMessageContent for content that is not a
// JSON string or a non-empty array of content blocks.
var ErrBadContent = errors.New("user message content must be a JSON string or a non-empty array of content blocks")

// UserMessageContent is UserMessage for content given as JSON: a string, or
// an array of Messages-API content blocks ([{"type":"text","text":…},
// {"type":"image","source":{…}}]). It returns the same line shape,
// {"type":"user","message":{"role":"user","content":CONTENT}}, compacted to
// one line. The blocks themselves are passed on unchecked: the CLI and the
// API judge them.
func UserMessageContent(content json.RawMessage) ([]byte, error) {
	c := bytes.TrimSpace(content)
	if len(c) == 0 || (c[0] != '"' && c[0] != '[') || !json.Valid(c) {
		return nil, fmt.Errorf("%w: got %s", ErrBadContent, contentSnippet(c))
	}
	if c[0] == '[' {
		var blocks []json.RawMessage
		if err := json.Unmarshal(c, &blocks); err != nil || len(blocks) == 0 {
			return nil, fmt.Errorf("%w: got %s", ErrBadContent, contentSnippet(c))
		}
		for i, b := range blocks {
			if b = bytes.TrimSpace(b); len(b) == 0 || b[0] != '{' {
				return nil, fmt.Errorf("%w: block %d is %s, not an object", ErrBadContent, i, contentSnippet(b))
			}
		}
	}
	type message struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	line, err := marshalCompact(struct {
		Type    string  `json:"type"`
		Message message `json:"message"`
	}{TypeUser, message{"user", c}})
	if err != nil {
		return nil, fmt.Errorf("encode user message: %w", err)
	}
	return line, nil
}

// contentSnippet quotes the start of bad content for an error message.
func contentSnippet(b []byte) string {
	if len(b) == 0 {
		return "nothing"
	}
	if len(b) > 60 {
		return fmt.Sprintf("%q…", strings.ToValidUTF8(string(b[:60]), "\uFFFD"))
	}
	return fmt.Sprintf("%q", strings.ToValidUTF8(string(b), "\uFFFD"))
}
