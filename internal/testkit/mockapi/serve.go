package mockapi

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Serve starts a server for script on 127.0.0.1 outside a Go test, for
// programs such as cmd/mockapi that let tests in other languages reuse this
// scripted API. The caller must Close it. Requests are not logged.
func Serve(script Script) (*Server, error) {
	return ServeLog(script, nil)
}

// ServeLog is Serve with every request reported to logf (nil: silent).
//
// Besides the Messages API, the server answers GET /_mockapi/tool_results
// with the [Server.ToolResults] recorded so far, so that a test that cannot
// call Go methods can still check what a tool returned to the model.
func ServeLog(script Script, logf func(format string, args ...any)) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("mockapi: listen on loopback: %w", err)
	}
	s := &Server{
		t:      logTB{logf: logf},
		script: script,
		done:   make(chan struct{}),
		failed: make(map[int]int),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /_mockapi/tool_results", s.serveToolResults)
	mux.HandleFunc("/", s.handle)
	s.srv = httptest.NewUnstartedServer(mux)
	s.srv.Listener = ln
	s.srv.Start()
	return s, nil
}

// toolResultJSON is a ToolResult as /_mockapi/tool_results reports it.
type toolResultJSON struct {
	ToolUseID string `json:"tool_use_id"`
	Content   string `json:"content"`
	IsError   bool   `json:"is_error"`
}

func (s *Server) serveToolResults(w http.ResponseWriter, _ *http.Request) {
	out := []toolResultJSON{}
	for _, tr := range s.ToolResults() {
		out = append(out, toolResultJSON(tr))
	}
	writeJSON(w, http.StatusOK, out)
}

// logTB stands in for the testing.TB that Server logs through when there is
// no test. Server only calls Logf once it runs; the embedded nil TB makes
// any other call panic, which would be a bug in Serve.
type logTB struct {
	testing.TB
	logf func(format string, args ...any)
}

func (l logTB) Helper() {}

func (l logTB) Logf(format string, args ...any) {
	if l.logf != nil {
		l.logf(format, args...)
	}
}

// ScriptJSON is the JSON form of a Script that DecodeScript reads: a list of
// turns, each a text, a tool call, or explicit blocks.
//
//	[{"text":"hello"},
//	 {"tool_use":{"name":"Bash","input":{"command":"echo hi"}}},
//	 {"blocks":[{"type":"text","text":"Let me look."},{"type":"tool_use","name":"Read","input":{"file_path":"a.go"}}],
//	  "stop_reason":"tool_use","delta_delay_ms":20}]
type ScriptJSON []TurnJSON

// TurnJSON is one turn of a ScriptJSON. Text and ToolUse, when set, come
// first, in that order, before Blocks.
type TurnJSON struct {
	Text         string      `json:"text,omitempty"`
	ToolUse      *BlockJSON  `json:"tool_use,omitempty"`
	Blocks       []BlockJSON `json:"blocks,omitempty"`
	StopReason   string      `json:"stop_reason,omitempty"`
	DeltaDelayMS int         `json:"delta_delay_ms,omitempty"`
	Usage        *Usage      `json:"usage,omitempty"`
}

// BlockJSON is one content block of a TurnJSON; Type defaults to tool_use
// when Name is set and to text otherwise.
type BlockJSON struct {
	Type  BlockType      `json:"type,omitempty"`
	Text  string         `json:"text,omitempty"`
	Name  string         `json:"name,omitempty"`
	Input map[string]any `json:"input,omitempty"`
	ID    string         `json:"id,omitempty"`
}

// DecodeScript parses a ScriptJSON document into a Script.
func DecodeScript(data []byte) (Script, error) {
	var turns ScriptJSON
	if err := json.Unmarshal(data, &turns); err != nil {
		return nil, fmt.Errorf("mockapi: script is not a JSON list of turns: %w", err)
	}
	script := make(Script, 0, len(turns))
	for i, tj := range turns {
		var blocks []BlockJSON
		if tj.Text != "" {
			blocks = append(blocks, BlockJSON{Type: BlockText, Text: tj.Text})
		}
		if tj.ToolUse != nil {
			tu := *tj.ToolUse
			tu.Type = BlockToolUse
			blocks = append(blocks, tu)
		}
		blocks = append(blocks, tj.Blocks...)
		if len(blocks) == 0 {
			return nil, fmt.Errorf("mockapi: script turn %d has no text, tool_use or blocks", i)
		}
		turn := Turn{StopReason: tj.StopReason, DeltaDelay: time.Duration(tj.DeltaDelayMS) * time.Millisecond}
		if tj.Usage != nil {
			turn.Usage = *tj.Usage
		}
		for j, bj := range blocks {
			b, err := bj.block()
			if err != nil {
				return nil, fmt.Errorf("mockapi: script turn %d block %d: %w", i, j, err)
			}
			turn.Blocks = append(turn.Blocks, b)
		}
		script = append(script, turn)
	}
	return script, nil
}

func (bj BlockJSON) block() (Block, error) {
	typ := bj.Type
	if typ == "" {
		typ = BlockText
		if bj.Name != "" {
			typ = BlockToolUse
		}
	}
	switch typ {
	case BlockText, BlockThinking:
		return Block{Type: typ, Text: bj.Text}, nil
	case BlockToolUse:
		if bj.Name == "" {
			return Block{}, fmt.Errorf("tool_use needs a name (a tool such as \"Bash\")")
		}
		input := bj.Input
		if input == nil {
			input = map[string]any{}
		}
		return Block{Type: BlockToolUse, Name: bj.Name, Input: input, ID: bj.ID}, nil
	default:
		return Block{}, fmt.Errorf("unknown block type %q; use text, tool_use or thinking", typ)
	}
}
