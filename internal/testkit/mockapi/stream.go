package mockapi

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"
)

// errGone means the stream stopped because the client left or the server
// is closing.
var errGone = errors.New("mockapi: stream cut short")

// chunkSize is the most bytes per delta, so that clients see a text or a
// tool input arrive in several pieces, as from the real API.
const chunkSize = 24

// reply is one assistant message ready to serve.
type reply struct {
	blocks       []Block // tool_use blocks carry their ids
	stopReason   string
	stopSequence string
	usage        Usage
	delay        time.Duration
}

func turnReply(t Turn) reply {
	r := reply{stopReason: t.StopReason, usage: t.Usage, delay: t.DeltaDelay}
	hasTool := false
	for _, b := range t.Blocks {
		if b.Type == BlockToolUse {
			hasTool = true
			if b.ID == "" {
				b.ID = newID("toolu_")
			}
		}
		r.blocks = append(r.blocks, b)
	}
	if r.stopReason == "" {
		r.stopReason = "end_turn"
		if hasTool {
			r.stopReason = "tool_use"
		}
	}
	if r.usage == (Usage{}) {
		r.usage = DefaultUsage
	}
	return r
}

func textReply(s string) reply { return turnReply(TextTurn(s)) }

// message is the non-streaming form of the reply.
func (r reply) message(model string) map[string]any {
	content := make([]map[string]any, 0, len(r.blocks))
	for _, b := range r.blocks {
		content = append(content, b.full())
	}
	return map[string]any{
		"id":            newID("msg_"),
		"type":          "message",
		"role":          "assistant",
		"model":         model,
		"content":       content,
		"stop_reason":   r.stopReason,
		"stop_sequence": nullable(r.stopSequence),
		"usage":         r.usage,
	}
}

// full is the block as it appears in a complete message.
func (b Block) full() map[string]any {
	switch b.Type {
	case BlockToolUse:
		return map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": b.input()}
	case BlockThinking:
		return map[string]any{"type": "thinking", "thinking": b.Text, "signature": "mock-signature"}
	default:
		return map[string]any{"type": "text", "text": b.Text}
	}
}

// start is the block as content_block_start announces it: empty.
func (b Block) start() map[string]any {
	switch b.Type {
	case BlockToolUse:
		return map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}}
	case BlockThinking:
		return map[string]any{"type": "thinking", "thinking": "", "signature": ""}
	default:
		return map[string]any{"type": "text", "text": ""}
	}
}

// deltas are the content_block_delta payloads that fill the block.
func (b Block) deltas() []map[string]any {
	var out []map[string]any
	switch b.Type {
	case BlockToolUse:
		js, err := json.Marshal(b.input())
		if err != nil {
			js = []byte("{}")
		}
		for _, c := range chunks(string(js)) {
			out = append(out, map[string]any{"type": "input_json_delta", "partial_json": c})
		}
	case BlockThinking:
		for _, c := range chunks(b.Text) {
			out = append(out, map[string]any{"type": "thinking_delta", "thinking": c})
		}
		out = append(out, map[string]any{"type": "signature_delta", "signature": "mock-signature"})
	default:
		for _, c := range chunks(b.Text) {
			out = append(out, map[string]any{"type": "text_delta", "text": c})
		}
	}
	return out
}

func (b Block) input() map[string]any {
	if b.Input == nil {
		return map[string]any{}
	}
	return b.Input
}

// stream writes the reply as Server-Sent Events. It returns errGone when
// gone or done closes mid-stream, or the write error.
func (r reply) stream(w http.ResponseWriter, model string, gone, done <-chan struct{}) error {
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Request-Id", newID("req_"))
	w.WriteHeader(http.StatusOK)
	send := func(event string, data map[string]any) error {
		data["type"] = event
		js, err := json.Marshal(data)
		if err != nil {
			return fmt.Errorf("encode %s event: %w", event, err)
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, js); err != nil {
			return fmt.Errorf("write %s event: %w", event, err)
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	start := r.usage
	start.OutputTokens = 1 // the real API reports a token or so at the start
	msg := r.message(model)
	msg["content"] = []any{}
	msg["stop_reason"] = nil
	msg["stop_sequence"] = nil
	msg["usage"] = start
	if err := send("message_start", map[string]any{"message": msg}); err != nil {
		return err
	}
	if err := send("ping", map[string]any{}); err != nil {
		return err
	}
	for i, b := range r.blocks {
		if err := send("content_block_start", map[string]any{"index": i, "content_block": b.start()}); err != nil {
			return err
		}
		for _, d := range b.deltas() {
			if err := sleep(r.delay, gone, done); err != nil {
				return err
			}
			if err := send("content_block_delta", map[string]any{"index": i, "delta": d}); err != nil {
				return err
			}
		}
		if err := send("content_block_stop", map[string]any{"index": i}); err != nil {
			return err
		}
	}
	if err := send("message_delta", map[string]any{
		"delta": map[string]any{"stop_reason": r.stopReason, "stop_sequence": nullable(r.stopSequence)},
		"usage": r.usage,
	}); err != nil {
		return err
	}
	return send("message_stop", map[string]any{})
}

func sleep(d time.Duration, gone, done <-chan struct{}) error {
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-gone:
		return errGone
	case <-done:
		return errGone
	}
}

// chunks splits s into pieces of at most chunkSize bytes without cutting a
// UTF-8 sequence. An empty s gives one empty piece, so that every block gets
// at least one delta.
func chunks(s string) []string {
	if s == "" {
		return []string{""}
	}
	var out []string
	for len(s) > 0 {
		n := min(chunkSize, len(s))
		for n < len(s) && n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		if n == 0 { // a rune longer than chunkSize cannot happen; be safe
			n = len(s)
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// newID returns prefix + "01" + 22 random characters, the shape of real
// message and tool-use ids.
func newID(prefix string) string {
	return prefix + "01" + rand.Text()[:22]
}
