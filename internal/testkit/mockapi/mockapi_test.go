package mockapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
)

type event struct {
	name string
	data map[string]any
}

// readSSE parses a Server-Sent-Events body into events, checking the
// framing: "event:" then "data:" then a blank line.
func readSSE(t *testing.T, body io.Reader) []event {
	t.Helper()
	br := bufio.NewReader(body)
	var out []event
	for {
		line, err := br.ReadString('\n')
		if errors.Is(err, io.EOF) && line == "" {
			return out
		}
		if err != nil {
			t.Fatalf("read event line: %v", err)
		}
		name, ok := strings.CutPrefix(line, "event: ")
		if !ok {
			t.Fatalf("want an event line, got %q", line)
		}
		dataLine, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("read data line: %v", err)
		}
		data, ok := strings.CutPrefix(dataLine, "data: ")
		if !ok {
			t.Fatalf("want a data line, got %q", dataLine)
		}
		if blank, err := br.ReadString('\n'); err != nil || blank != "\n" {
			t.Fatalf("want a blank line after data, got %q (%v)", blank, err)
		}
		ev := event{name: strings.TrimSuffix(name, "\n")}
		if err := json.Unmarshal([]byte(data), &ev.data); err != nil {
			t.Fatalf("event %s: data is not JSON: %v", ev.name, err)
		}
		if ev.data["type"] != ev.name {
			t.Fatalf("event %s: data type is %v", ev.name, ev.data["type"])
		}
		out = append(out, ev)
	}
}

// body builds a main-conversation request body whose messages hold the
// given number of assistant turns.
func body(assistants int, stream bool) map[string]any {
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}
	for i := range assistants {
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "x"}}},
			map[string]any{"role": "user", "content": []any{map[string]any{
				"type": "tool_result", "tool_use_id": "toolu_" + string(rune('a'+i)), "content": "out", "is_error": i%2 == 1,
			}}},
		)
	}
	return map[string]any{
		"model":    "claude-test",
		"stream":   stream,
		"messages": msgs,
		"tools":    []any{map[string]any{"name": "Bash", "input_schema": map[string]any{"type": "object"}}},
	}
}

func post(t *testing.T, url string, v any) *http.Response {
	t.Helper()
	js, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode body: %v", err)
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(js))
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", "test-key")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// streamed posts a streaming request and returns its events.
func streamed(t *testing.T, srv *mockapi.Server, v any) []event {
	t.Helper()
	resp := post(t, srv.URL()+"/v1/messages?beta=true", v)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type %q, want text/event-stream", ct)
	}
	return readSSE(t, resp.Body)
}

func names(evs []event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.name
	}
	return out
}

// assembled rebuilds the message from the events the way a client does.
type assembled struct {
	text, toolJSON, toolName, toolID, stopReason string
	outputTokens                                 float64
}

func assemble(evs []event) assembled {
	var a assembled
	for _, e := range evs {
		switch e.name {
		case "content_block_start":
			if cb := e.data["content_block"].(map[string]any); cb["type"] == "tool_use" {
				a.toolName, a.toolID = cb["name"].(string), cb["id"].(string)
			}
		case "content_block_delta":
			d := e.data["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				a.text += d["text"].(string)
			case "input_json_delta":
				a.toolJSON += d["partial_json"].(string)
			}
		case "message_delta":
			a.stopReason = e.data["delta"].(map[string]any)["stop_reason"].(string)
			a.outputTokens = e.data["usage"].(map[string]any)["output_tokens"].(float64)
		}
	}
	return a
}

func TestTextTurnFraming(t *testing.T) {
	long := strings.Repeat("héllo wörld ", 5)
	srv := mockapi.New(t, mockapi.Script{{
		Blocks: []mockapi.Block{mockapi.Text(long)},
		Usage:  mockapi.Usage{InputTokens: 100, OutputTokens: 42, CacheReadInputTokens: 7},
	}})
	evs := streamed(t, srv, body(0, true))
	got := names(evs)
	head := []string{"message_start", "ping", "content_block_start", "content_block_delta"}
	tail := []string{"content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if !reflect.DeepEqual(got[:4], head) || !reflect.DeepEqual(got[len(got)-4:], tail) {
		t.Fatalf("events %v", got)
	}
	a := assemble(evs)
	if a.text != long || a.stopReason != "end_turn" || a.outputTokens != 42 {
		t.Errorf("got %+v", a)
	}
	if n := strings.Count(strings.Join(got, " "), "content_block_delta"); n < 2 {
		t.Errorf("text came in %d deltas, want several", n)
	}
	usage := evs[0].data["message"].(map[string]any)["usage"].(map[string]any)
	if usage["input_tokens"] != 100.0 || usage["cache_read_input_tokens"] != 7.0 {
		t.Errorf("message_start usage %v", usage)
	}
}

func TestToolUseTurnFraming(t *testing.T) {
	input := map[string]any{"command": "echo hello-from-tool", "description": "Say hello"}
	srv := mockapi.New(t, mockapi.Script{mockapi.ToolTurn("Bash", input)})
	a := assemble(streamed(t, srv, body(0, true)))
	var gotInput map[string]any
	if err := json.Unmarshal([]byte(a.toolJSON), &gotInput); err != nil {
		t.Fatalf("tool input %q: %v", a.toolJSON, err)
	}
	if !reflect.DeepEqual(gotInput, input) || a.toolName != "Bash" || a.stopReason != "tool_use" {
		t.Errorf("got %+v input %v", a, gotInput)
	}
	if !strings.HasPrefix(a.toolID, "toolu_") {
		t.Errorf("tool id %q, want toolu_ prefix", a.toolID)
	}
}

func TestTurnFromConversationState(t *testing.T) {
	srv := mockapi.New(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "true"}),
		mockapi.TextTurn("second"),
	})
	tests := []struct {
		name       string
		assistants int
		wantTool   string
		wantText   string
	}{
		{"first turn", 0, "Bash", ""},
		{"same state again gives the same turn", 0, "Bash", ""},
		{"second turn", 1, "", "second"},
		{"past the script", 2, "", "done"},
		{"far past the script", 9, "", "done"},
		{"back to the first state", 0, "Bash", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := assemble(streamed(t, srv, body(tt.assistants, true)))
			if a.toolName != tt.wantTool || a.text != tt.wantText {
				t.Errorf("got tool %q text %q, want %q %q", a.toolName, a.text, tt.wantTool, tt.wantText)
			}
		})
	}
	// A side request between main ones selects no turn.
	side := body(0, true)
	side["tools"] = []any{}
	if a := assemble(streamed(t, srv, side)); a.text != "ok" {
		t.Errorf("side reply %q, want ok", a.text)
	}
	last := srv.Requests()[len(srv.Requests())-1]
	if last.Main || last.Turn != -1 {
		t.Errorf("side request recorded as main=%v turn=%d", last.Main, last.Turn)
	}
}

func TestFailuresThenSuccess(t *testing.T) {
	tests := []struct {
		name       string
		fail       mockapi.Failure
		wantFails  int
		wantType   string
		wantRetry  string
		wantRetryM string
	}{
		{"429 with retry-after", mockapi.Failure{Status: 429, Times: 2, RetryAfter: 1500 * time.Millisecond}, 2, "rate_limit_error", "2", "1500"},
		{"529 overloaded once", mockapi.Failure{Status: 529}, 1, "overloaded_error", "", ""},
		{"500", mockapi.Failure{Status: 500, Times: 1}, 1, "api_error", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			turn := mockapi.TextTurn("finally")
			turn.Fail = &tt.fail
			srv := mockapi.New(t, mockapi.Script{turn})
			for i := range tt.wantFails {
				resp := post(t, srv.URL()+"/v1/messages", body(0, true))
				if resp.StatusCode != tt.fail.Status {
					t.Fatalf("attempt %d: status %d, want %d", i, resp.StatusCode, tt.fail.Status)
				}
				if got := resp.Header.Get("Retry-After"); got != tt.wantRetry {
					t.Errorf("retry-after %q, want %q", got, tt.wantRetry)
				}
				if got := resp.Header.Get("Retry-After-Ms"); got != tt.wantRetryM {
					t.Errorf("retry-after-ms %q, want %q", got, tt.wantRetryM)
				}
				var e struct {
					Type  string
					Error struct{ Type, Message string }
				}
				if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
					t.Fatalf("error body: %v", err)
				}
				if e.Type != "error" || e.Error.Type != tt.wantType || e.Error.Message == "" {
					t.Errorf("error body %+v", e)
				}
			}
			// Side requests neither fail nor use up the failures.
			side := body(0, false)
			delete(side, "tools")
			if resp := post(t, srv.URL()+"/v1/messages", side); resp.StatusCode != http.StatusOK {
				t.Errorf("side request status %d", resp.StatusCode)
			}
			if a := assemble(streamed(t, srv, body(0, true))); a.text != "finally" {
				t.Errorf("after failures got %q", a.text)
			}
		})
	}
}

func TestNonStreaming(t *testing.T) {
	srv := mockapi.New(t, mockapi.Script{{Blocks: []mockapi.Block{
		mockapi.Thinking("hmm"), mockapi.Text("a"), {Type: mockapi.BlockToolUse, Name: "Read", ID: "toolu_fixed"},
	}}})
	resp := post(t, srv.URL()+"/v1/messages", body(0, false))
	var msg struct {
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type, Text, Thinking, ID, Name string
			Input                          map[string]any
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if len(msg.Content) != 3 || msg.Content[0].Thinking != "hmm" || msg.Content[1].Text != "a" ||
		msg.Content[2].ID != "toolu_fixed" || msg.Content[2].Input == nil || msg.StopReason != "tool_use" {
		t.Errorf("message %+v", msg)
	}
}

func TestSideReplies(t *testing.T) {
	srv := mockapi.New(t, nil)
	title := map[string]any{
		"model": "m", "stream": true, "tools": []any{},
		"messages": []any{map[string]any{"role": "user", "content": "<session>x</session>"}},
		"output_config": map[string]any{"format": map[string]any{"type": "json_schema", "schema": map[string]any{
			"type": "object", "properties": map[string]any{"title": map[string]any{"type": "string"}}, "required": []any{"title"},
		}}},
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(assemble(streamed(t, srv, title)).text), &got); err != nil || got["title"] == "" {
		t.Errorf("title reply %v (%v)", got, err)
	}
	classifier := map[string]any{
		"model": "m", "max_tokens": 64, "stop_sequences": []any{"</block>"},
		"messages": []any{map[string]any{"role": "user", "content": "<transcript>"}},
	}
	resp := post(t, srv.URL()+"/v1/messages?beta=true", classifier)
	var msg struct {
		StopReason   string `json:"stop_reason"`
		StopSequence string `json:"stop_sequence"`
		Content      []struct{ Text string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if msg.Content[0].Text != "<block>no" || msg.StopReason != "stop_sequence" || msg.StopSequence != "</block>" {
		t.Errorf("classifier reply %+v", msg)
	}
	sub := body(0, true)
	sub["system"] = []any{
		map[string]any{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.330.440; cc_entrypoint=sdk-cli; cc_is_subagent=true;"},
		map[string]any{"type": "text", "text": "You are a Claude agent"},
	}
	if a := assemble(streamed(t, srv, sub)); a.text != "ok" {
		t.Errorf("subagent reply %q, want ok", a.text)
	}
	if reqs := srv.Requests(); !reqs[len(reqs)-1].Subagent {
		t.Errorf("subagent request not marked")
	}
	if len(srv.MainRequests()) != 0 {
		t.Errorf("side requests counted as main: %d", len(srv.MainRequests()))
	}
}

func TestRecording(t *testing.T) {
	srv := mockapi.New(t, mockapi.Script{mockapi.TextTurn("hi")})
	streamed(t, srv, body(0, true))
	withResults := body(2, true)
	streamed(t, srv, withResults)
	streamed(t, srv, withResults) // a repeat must not duplicate tool results
	post(t, srv.URL()+"/v1/messages/count_tokens", body(0, false))
	for _, path := range []string{"/v1/models", "/nope"} {
		resp, err := http.Get(srv.URL() + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		resp.Body.Close()
	}

	reqs := srv.Requests()
	if len(reqs) != 6 {
		t.Fatalf("recorded %d requests, want 6", len(reqs))
	}
	first := reqs[0]
	if first.Method != http.MethodPost || first.Path != "/v1/messages" || first.Query != "beta=true" ||
		first.Header.Get("X-Api-Key") != "test-key" || first.JSON["model"] != "claude-test" ||
		first.Model != "claude-test" || !first.Stream || !first.Main || first.Turn != 0 ||
		!reflect.DeepEqual(first.Tools, []string{"Bash"}) || first.Messages[0].Content[0].Text != "hi" {
		t.Errorf("first request %+v", first)
	}
	wantStatus := []int{200, 200, 200, 200, 200, 404}
	for i, r := range reqs {
		if r.Status != wantStatus[i] {
			t.Errorf("request %d %s: status %d, want %d", i, r.Path, r.Status, wantStatus[i])
		}
	}
	last, ok := srv.LastMainRequest()
	if !ok || last.Turn != 2 {
		t.Errorf("last main request turn %d ok %v, want 2", last.Turn, ok)
	}
	want := []mockapi.ToolResult{{ToolUseID: "toolu_a", Content: "out"}, {ToolUseID: "toolu_b", Content: "out", IsError: true}}
	if got := srv.ToolResults(); !reflect.DeepEqual(got, want) {
		t.Errorf("tool results %+v, want %+v", got, want)
	}
}

func TestToolResultArrayContent(t *testing.T) {
	srv := mockapi.New(t, nil)
	b := body(0, true)
	b["messages"] = append(b["messages"].([]any),
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_x", "name": "Read", "input": map[string]any{}}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_x", "content": []any{
			map[string]any{"type": "text", "text": "line1"}, map[string]any{"type": "image"}, map[string]any{"type": "text", "text": "line2"},
		}}}},
	)
	streamed(t, srv, b)
	want := []mockapi.ToolResult{{ToolUseID: "toolu_x", Content: "line1\n[image]\nline2"}}
	if got := srv.ToolResults(); !reflect.DeepEqual(got, want) {
		t.Errorf("tool results %+v, want %+v", got, want)
	}
}

// TestCloseCutsSlowStream checks that Close does not wait out a slow reply.
func TestCloseCutsSlowStream(t *testing.T) {
	turn := mockapi.TextTurn("slow text that would take an hour")
	turn.DeltaDelay = time.Hour
	srv := mockapi.New(t, mockapi.Script{turn})
	resp := post(t, srv.URL()+"/v1/messages", body(0, true))
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "event: message_start\n" {
		t.Fatalf("first line %q (%v)", line, err)
	}
	srv.Close()
	srv.Close() // idempotent
	if _, err := io.ReadAll(br); err != nil {
		t.Logf("stream cut: %v", err)
	}
}
