package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
)

func TestDecodeScript(t *testing.T) {
	script, err := mockapi.DecodeScript([]byte(`[
		{"text":"hello"},
		{"tool_use":{"name":"Bash","input":{"command":"echo hi"}}},
		{"text":"Let me look.","blocks":[{"name":"Read","input":{"file_path":"a.go"}},{"type":"thinking","text":"hmm"}],
		 "stop_reason":"tool_use","delta_delay_ms":20,"usage":{"input_tokens":7,"output_tokens":3}}
	]`))
	if err != nil {
		t.Fatal(err)
	}
	if len(script) != 3 {
		t.Fatalf("got %d turns, want 3", len(script))
	}
	if b := script[0].Blocks; len(b) != 1 || b[0].Type != mockapi.BlockText || b[0].Text != "hello" {
		t.Errorf("turn 0: %+v", script[0])
	}
	if b := script[1].Blocks; len(b) != 1 || b[0].Type != mockapi.BlockToolUse || b[0].Name != "Bash" || b[0].Input["command"] != "echo hi" {
		t.Errorf("turn 1: %+v", script[1])
	}
	third := script[2]
	if len(third.Blocks) != 3 || third.Blocks[0].Text != "Let me look." || third.Blocks[1].Type != mockapi.BlockToolUse ||
		third.Blocks[2].Type != mockapi.BlockThinking || third.StopReason != "tool_use" ||
		third.DeltaDelay != 20*time.Millisecond || third.Usage.InputTokens != 7 {
		t.Errorf("turn 2: %+v", third)
	}
}

func TestDecodeScriptErrors(t *testing.T) {
	for _, tc := range []struct{ script, want string }{
		{`{"text":"hi"}`, "not a JSON list of turns"},
		{`[{}]`, "turn 0 has no text, tool_use or blocks"},
		{`[{"text":"a"},{"tool_use":{"input":{}}}]`, "turn 1 block 0: tool_use needs a name"},
		{`[{"blocks":[{"type":"image"}]}]`, `unknown block type "image"`},
	} {
		_, err := mockapi.DecodeScript([]byte(tc.script))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("DecodeScript(%s) = %v, want an error with %q", tc.script, err, tc.want)
		}
	}
}

// TestRun drives the command as the node tests do: the script on stdin, the
// URL and the environment on stdout, and EOF on stdin to stop.
func TestRun(t *testing.T) {
	home, trusted := t.TempDir(), t.TempDir()
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run([]string{"-home", home, "-trust", trusted, "-cli", "/no/such/claude"}, stdinR, stdoutW, io.Discard)
		stdoutW.Close()
	}()
	if _, err := io.WriteString(stdinW, `[{"text":"scripted hello"}]`+"\n"); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(stdoutR)
	url := readLine(t, out)
	var env map[string]string
	if err := json.Unmarshal([]byte(readLine(t, out)), &env); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") || env["ANTHROPIC_BASE_URL"] != url || env["HOME"] != home ||
		env["ANTHROPIC_API_KEY"] == "" || env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] != "1" {
		t.Errorf("url %q env %v", url, env)
	}
	if p, ok := env["CLAUDE_RELAY_CLAUDE_PATH"]; ok {
		t.Errorf("CLAUDE_RELAY_CLAUDE_PATH=%s for a CLI that does not exist", p)
	}
	b, err := os.ReadFile(filepath.Join(home, ".claude.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Onboarded bool `json:"hasCompletedOnboarding"`
		Projects  map[string]struct {
			Trusted bool `json:"hasTrustDialogAccepted"`
		} `json:"projects"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if !cfg.Onboarded || !cfg.Projects[trusted].Trusted {
		t.Errorf(".claude.json: %s", b)
	}

	// A main-conversation request (it carries tools) with a tool result.
	body := `{"model":"m","stream":false,"tools":[{"name":"Bash","input_schema":{"type":"object"}}],"messages":[
		{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"hi there","is_error":true}]}]}`
	resp, err := http.Post(url+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	reply, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(reply), "done") {
		// One assistant message: past the one-turn script, the final "done".
		t.Errorf("messages: %d %s", resp.StatusCode, reply)
	}
	resp, err = http.Get(url + "/_mockapi/tool_results")
	if err != nil {
		t.Fatal(err)
	}
	var results []map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&results); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(results) != 1 || results[0]["tool_use_id"] != "toolu_1" || results[0]["content"] != "hi there" || results[0]["is_error"] != true {
		t.Errorf("tool_results: %v", results)
	}

	stdinW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after stdin closed")
	}
	if _, err := http.Get(url + "/v1/models"); err == nil {
		t.Error("the server still answers after run returned")
	}
}

func TestRunRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		stdin string
		want  string
	}{
		{nil, "not json", "read the script from stdin"},
		{[]string{"-trust", "/tmp"}, "[]", "-trust needs -home"},
		{[]string{"-script", "/no/such/script.json"}, "", "read the script"},
	} {
		err := run(tc.args, strings.NewReader(tc.stdin), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) with stdin %q = %v, want an error with %q", tc.args, tc.stdin, err, tc.want)
		}
	}
}

func readLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("read stdout: %v", err)
	}
	return strings.TrimSuffix(line, "\n")
}
