package mockapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Request is one recorded HTTP request.
type Request struct {
	Method string
	Path   string
	Query  string
	Header http.Header
	Body   []byte
	// JSON is the body parsed generically; nil when the body is not a JSON
	// object.
	JSON map[string]any
	// Messages is the parsed "messages" array of a Messages API request.
	Messages []Message
	// Model, Stream, System and Tools are parsed from a Messages API body;
	// System is the text of all system blocks joined by newlines and Tools
	// the tool names.
	Model  string
	Stream bool
	System string
	Tools  []string
	// Main reports whether the request was classified as the main
	// conversation rather than a side task (title, safety classifier,
	// subagent, ...).
	Main bool
	// Subagent reports a request made by a subagent (the Agent tool).
	Subagent bool
	// Turn is the script index the request selected, or -1 for requests
	// that are not the main conversation. It may be len(script) or more,
	// which means the final "done" reply.
	Turn int
	// Status is the HTTP status the server answered with.
	Status int
	// Time is when the request arrived.
	Time time.Time
}

// Message is one entry of a request's messages array.
type Message struct {
	Role    string    `json:"role"`
	Content []Content `json:"content"`
}

// UnmarshalJSON accepts both content forms of the API: a plain string or
// an array of blocks.
func (m *Message) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("decode message: %w", err)
	}
	m.Role = raw.Role
	m.Content = nil
	c := bytes.TrimSpace(raw.Content)
	if len(c) == 0 || bytes.Equal(c, []byte("null")) {
		return nil
	}
	if c[0] == '"' {
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return fmt.Errorf("decode message content: %w", err)
		}
		m.Content = []Content{{Type: "text", Text: s}}
		return nil
	}
	if err := json.Unmarshal(c, &m.Content); err != nil {
		return fmt.Errorf("decode message content: %w", err)
	}
	return nil
}

// Content is one content block of a request message; only the fields of
// its Type are set.
type Content struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	// Source is an image block's source.
	Source *ImageSource `json:"source,omitempty"`
}

// ImageSource is the source of an image block.
type ImageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

// Image is an image block of a request message.
type Image struct {
	// Message is the index in Request.Messages of the message holding it.
	Message int
	Role    string
	// SourceType is the source's type ("base64", "url", ...).
	SourceType string
	MediaType  string
	// Data is a base64 source's decoded bytes; nil for other sources.
	Data []byte
}

// Images returns the image blocks of the request's messages in order, with
// base64 data decoded, so a test can compare the bytes it sent. Images
// nested inside tool results are not included.
func (r *Request) Images() ([]Image, error) {
	var out []Image
	for i, m := range r.Messages {
		for _, c := range m.Content {
			if c.Type != "image" {
				continue
			}
			img := Image{Message: i, Role: m.Role}
			if c.Source != nil {
				img.SourceType, img.MediaType = c.Source.Type, c.Source.MediaType
				if c.Source.Type == "base64" {
					b, err := base64.StdEncoding.DecodeString(c.Source.Data)
					if err != nil {
						return nil, fmt.Errorf("message %d: decode image data: %w", i, err)
					}
					img.Data = b
				}
			}
			out = append(out, img)
		}
	}
	return out, nil
}

// ToolResult is a tool_result block the client sent back.
type ToolResult struct {
	ToolUseID string
	// Content is the result's text; text blocks of an array content are
	// joined by newlines and other blocks shown as "[type]".
	Content string
	IsError bool
}

// ToolResults returns the tool_result blocks of the request's messages, in
// order.
func (r *Request) ToolResults() []ToolResult {
	var out []ToolResult
	for _, m := range r.Messages {
		for _, c := range m.Content {
			if c.Type == "tool_result" {
				out = append(out, ToolResult{ToolUseID: c.ToolUseID, Content: flatten(c.Content), IsError: c.IsError})
			}
		}
	}
	return out
}

// AssistantMessages counts the assistant messages, which is what selects
// the script turn.
func (r *Request) AssistantMessages() int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// flatten turns a tool_result content (string or array of blocks) into text.
func flatten(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s
	}
	var blocks []Content
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return string(raw)
	}
	parts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		} else {
			parts = append(parts, "["+b.Type+"]")
		}
	}
	return strings.Join(parts, "\n")
}

// messagesBody is the part of a Messages API body the server interprets.
type messagesBody struct {
	Model         string                  `json:"model"`
	Stream        bool                    `json:"stream"`
	System        json.RawMessage         `json:"system"`
	Messages      []Message               `json:"messages"`
	Tools         []struct{ Name string } `json:"tools"`
	StopSequences []string                `json:"stop_sequences"`
	OutputConfig  struct {
		Format *struct {
			Type   string         `json:"type"`
			Schema map[string]any `json:"schema"`
		} `json:"format"`
	} `json:"output_config"`
}

// parseBody fills the Messages API fields of r from its body; the server
// answers 400 to a body it cannot decode. An empty body fills nothing.
func (r *Request) parseBody() (messagesBody, error) {
	var b messagesBody
	if len(bytes.TrimSpace(r.Body)) == 0 {
		return b, nil
	}
	if err := json.Unmarshal(r.Body, &r.JSON); err != nil {
		return b, fmt.Errorf("decode request body: %w", err)
	}
	if err := json.Unmarshal(r.Body, &b); err != nil {
		return b, fmt.Errorf("decode messages request: %w", err)
	}
	r.Model, r.Stream, r.Messages = b.Model, b.Stream, b.Messages
	r.System = flatten(b.System)
	r.Subagent = strings.Contains(r.System, subagentMark)
	for _, t := range b.Tools {
		r.Tools = append(r.Tools, t.Name)
	}
	return b, nil
}

// subagentMark is in the billing-header system block of every request a
// subagent (the Agent tool) makes.
const subagentMark = "cc_is_subagent=true"

// isMain reports whether a Messages API request belongs to the main
// conversation rather than to a side task.
//
// What CLI 2.1.330 was seen sending: the main conversation always carries
// its tool definitions (13 in -p mode); the session-title request carries
// "tools": [] and output_config.format (a JSON schema); the auto-mode
// safety classifier carries no tools, stop_sequences ["</block>"] and
// stream false; subagents carry tools but mark their system prompt with
// "cc_is_subagent=true". Subagents are kept out of the script: they start
// from zero assistant messages, so a script that opens with an Agent call
// would otherwise make every subagent spawn another one.
func isMain(b messagesBody, system string) bool {
	return len(b.Tools) > 0 && b.OutputConfig.Format == nil && len(b.StopSequences) == 0 &&
		len(b.Messages) > 0 && !strings.Contains(system, subagentMark)
}
