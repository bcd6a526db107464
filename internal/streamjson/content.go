package streamjson

import (
	"encoding/json"
	"strings"
)

// Content block types.
const (
	BlockText             = "text"
	BlockThinking         = "thinking"
	BlockRedactedThinking = "redacted_thinking"
	BlockToolUse          = "tool_use"
	BlockToolResult       = "tool_result"
	BlockImage            = "image"
)

// ContentBlock is one block of a message's content. Type says which fields
// apply; a block of any other type (server tools, documents, ...) has only
// Type and Raw.
type ContentBlock struct {
	Type string `json:"type"`

	Text string `json:"text,omitempty"` // text

	Thinking  string `json:"thinking,omitempty"` // thinking
	Signature string `json:"signature,omitempty"`

	ID    string          `json:"id,omitempty"` // tool_use
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`

	ToolUseID string          `json:"tool_use_id,omitempty"` // tool_result
	Content   json.RawMessage `json:"content,omitempty"`     // see ParseToolResultContent
	IsError   bool            `json:"is_error,omitempty"`

	Source *ImageSource `json:"source,omitempty"` // image

	// Raw is the block exactly as it appeared; nil for a block synthesised
	// from string content.
	Raw json.RawMessage `json:"-"`
}

// ImageSource is an image block's source; Data is base64 when Type is
// "base64".
type ImageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

// UnmarshalJSON keeps the block's raw bytes and decodes what fits, so that a
// block of an odd shape (or not an object at all) survives as Raw instead of
// failing the whole content array.
func (b *ContentBlock) UnmarshalJSON(data []byte) error {
	type plain ContentBlock // drops the method, avoiding recursion
	var p plain
	unmarshalLoose(data, &p)
	*b = ContentBlock(p)
	b.Raw = append(json.RawMessage(nil), data...)
	return nil
}

// MarshalJSON writes Raw when the block was decoded, so that a block goes
// back out exactly as it came in; a block built in Go is encoded from its
// fields.
func (b ContentBlock) MarshalJSON() ([]byte, error) {
	if len(b.Raw) > 0 {
		return b.Raw, nil
	}
	type plain ContentBlock
	return marshalCompact(plain(b))
}

// ToolUse is a tool call the model made.
type ToolUse struct {
	ID    string
	Name  string
	Input json.RawMessage
}

// ToolResult is the outcome of a tool call as sent back to the model.
type ToolResult struct {
	ToolUseID string
	Content   json.RawMessage
	IsError   bool
}

// Parse interprets Content; see ParseToolResultContent.
func (r ToolResult) Parse() ToolResultContent { return ParseToolResultContent(r.Content) }

// Blocks decodes Content. String content (how prompts are usually sent) gives
// one text block; an array gives one block per element; null, a missing
// content field or any other JSON value gives none.
func (m APIMessage) Blocks() []ContentBlock {
	return decodeBlocks(m.Content)
}

func decodeBlocks(raw json.RawMessage) []ContentBlock {
	switch firstByte(raw) {
	case '"':
		var s string
		if !unmarshalLoose(raw, &s) {
			return nil
		}
		return []ContentBlock{{Type: BlockText, Text: s}}
	case '[':
		var blocks []ContentBlock
		unmarshalLoose(raw, &blocks)
		return blocks
	}
	return nil
}

// firstByte returns the first non-whitespace byte of raw, or 0.
func firstByte(raw []byte) byte {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c
	}
	return 0
}

// Text returns the text blocks joined with "\n".
func (m APIMessage) Text() string {
	var texts []string
	for _, b := range m.Blocks() {
		if b.Type == BlockText {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// ToolUses returns the tool_use blocks in order.
func (m APIMessage) ToolUses() []ToolUse {
	var uses []ToolUse
	for _, b := range m.Blocks() {
		if b.Type == BlockToolUse {
			uses = append(uses, ToolUse{ID: b.ID, Name: b.Name, Input: b.Input})
		}
	}
	return uses
}

// ToolResults returns the tool_result blocks in order.
func (m APIMessage) ToolResults() []ToolResult {
	var results []ToolResult
	for _, b := range m.Blocks() {
		if b.Type == BlockToolResult {
			results = append(results, ToolResult{ToolUseID: b.ToolUseID, Content: b.Content, IsError: b.IsError})
		}
	}
	return results
}
