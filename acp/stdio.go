package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/claude-relay/claude-relay/internal/ndjson"
)

// maxLine caps one inbound message; the SDK's own reader gives up on the
// connection past 10 MiB, so bigger lines are refused here, one by one.
const maxLine = 8 << 20

// lineWriter serializes whole lines onto the client's stdin: the SDK writes
// one message per Write, and so does the filter below, so neither splits
// the other's line.
type lineWriter struct {
	mu       sync.Mutex
	w        io.Writer
	watchers []func(line []byte) bool // called after each write; true: done, drop it
}

func (l *lineWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.w.Write(b)
	kept := l.watchers[:0]
	for _, w := range l.watchers {
		if !w(b) {
			kept = append(kept, w)
		}
	}
	l.watchers = kept
	return n, err
}

// afterWrite calls w after each line written until it returns true.
func (l *lineWriter) afterWrite(w func(line []byte) bool) {
	l.mu.Lock()
	l.watchers = append(l.watchers, w)
	l.mu.Unlock()
}

// filter passes the client's well-formed JSON-RPC messages on to the SDK and
// answers the rest itself, as JSON-RPC 2.0 asks: a line that is not JSON
// gets a parse error (-32700), JSON that is not a message an invalid request
// (-32600). The SDK would only log them, leaving a client waiting for an
// answer that never comes. It returns when in ends, closing the SDK's side.
func filter(in io.Reader, toSDK *io.PipeWriter, out *lineWriter) {
	lr := ndjson.NewReader(in, maxLine)
	seen := arrivals{}
	for {
		line, err := lr.Next()
		switch {
		case errors.Is(err, ndjson.ErrLineTooLong):
			writeError(out, nil, -32600, "Invalid request", "message over 8 MiB ignored: refer to big files with resource links, which the CLI reads itself, rather than embedding them")
			continue
		case err != nil:
			toSDK.CloseWithError(err)
			return
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if code, why := check(line); code != 0 {
			writeError(out, idOf(line), code, map[int]string{-32700: "Parse error", -32600: "Invalid request"}[code], why)
			continue
		}
		if _, err := toSDK.Write(append(seen.stamp(bytes.Clone(line)), '\n')); err != nil {
			return
		}
	}
}

// check says why line is not a JSON-RPC 2.0 message (code 0: it is one).
func check(line []byte) (int, string) {
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		Method  *string         `json:"method"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		if json.Valid(line) {
			return -32600, "not a JSON-RPC message object"
		}
		return -32700, "not JSON: " + err.Error()
	}
	if m.JSONRPC != "2.0" {
		return -32600, `"jsonrpc" must be "2.0"`
	}
	if m.Method == nil && len(m.ID) == 0 {
		return -32600, "neither a method nor an id"
	}
	if m.Method == nil && m.Result == nil && m.Error == nil {
		return -32600, "a response needs a result or an error"
	}
	return 0, ""
}

// idOf is the message's id when it has a readable one, for the error.
func idOf(line []byte) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &m) == nil && len(m.ID) > 0 {
		return m.ID
	}
	return nil
}

func writeError(out *lineWriter, id json.RawMessage, code int, msg, data string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   any             `json:"error"`
	}{"2.0", id, map[string]any{"code": code, "message": msg, "data": data}})
	if err != nil {
		return
	}
	_, _ = out.Write(append(b, '\n'))
}

// arrivalKey is the params._meta key that stamp sets on a session/prompt:
// its place among its session's prompts as they arrived (0, 1, …). The SDK
// handles requests concurrently; the agent queues prompts in this order.
// A client's own value under the key is replaced.
const arrivalKey = "claudeRelayArrival"

// arrivals numbers each session's session/prompt requests as they arrive.
type arrivals map[string]int

// stamp returns line with its arrival set when it is a session/prompt;
// any other line, or one it cannot read (the SDK answers that), as it is.
func (a arrivals) stamp(line []byte) []byte {
	if !bytes.Contains(line, []byte(`"session/prompt"`)) {
		return line
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil || string(m["method"]) != `"session/prompt"` {
		return line
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(m["params"], &params) != nil {
		return line
	}
	var sid string
	if json.Unmarshal(params["sessionId"], &sid) != nil {
		return line
	}
	meta := map[string]any{}
	if raw, ok := params["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		meta = map[string]any{}
	}
	meta[arrivalKey] = a[sid]
	a[sid]++
	var err error
	if params["_meta"], err = json.Marshal(meta); err != nil {
		return line
	}
	if m["params"], err = json.Marshal(params); err != nil {
		return line
	}
	out, err := json.Marshal(m)
	if err != nil {
		return line
	}
	return out
}

// arrivalOf is a prompt's arrival (arrivals.stamp), -1 when it has none.
func arrivalOf(meta map[string]any) int {
	if f, ok := meta[arrivalKey].(float64); ok && f >= 0 && f == float64(int(f)) {
		return int(f)
	}
	return -1
}
