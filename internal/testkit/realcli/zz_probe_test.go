//go:build unix

package realcli_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
)

func runProbe(t *testing.T, script mockapi.Script, extraEnv []string, init bool) *mockapi.Server {
	cli := realcli.RealCLI(t)
	srv := mockapi.New(t, script)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	began := time.Now()
	p := start(t, ctx, cli, dir, append(cli.Env(t, srv.URL()), extraEnv...),
		"-p", "--verbose", "--output-format", "stream-json", "--input-format", "stream-json",
		"--permission-prompt-tool", "stdio", "--max-turns=5")
	if init {
		p.send(t, map[string]any{"type": "control_request", "request_id": "r1", "request": map[string]any{"subtype": "initialize"}})
	}
	p.send(t, map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": "run it"}})
	for {
		var raw []byte
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("ended: %v %s", p.wait(), p.stderr.String())
			}
			raw = l
		case <-ctx.Done():
			t.Fatalf("timeout")
		}
		t.Logf("%6dms stdout: %.400s", time.Since(began).Milliseconds(), raw)
		var l line
		json.Unmarshal(raw, &l)
		if l.Type == "control_request" {
			answerControl(t, p, l)
		}
		if l.Type == "result" {
			break
		}
	}
	p.stdin.Close()
	t.Logf("exit %v after %v", p.wait(), time.Since(began))
	for _, r := range srv.Requests() {
		t.Logf("%s req %s %s main=%v turn=%d status=%d model=%s stream=%v tools=%d msgs=%d retry=%s sys=%.120q", r.Time.Sub(began), r.Method, r.Path, r.Main, r.Turn, r.Status, r.Model, r.Stream, len(r.Tools), len(r.Messages), r.Header.Get("X-Stainless-Retry-Count"), r.System)
	}
	return srv
}

func TestProbeRetry(t *testing.T) {
	t1 := mockapi.TextTurn("after retries")
	t1.Fail = &mockapi.Failure{Status: 429, Times: 2, RetryAfter: time.Second}
	runProbe(t, mockapi.Script{t1}, nil, true)
}

func TestProbe529(t *testing.T) {
	t1 := mockapi.TextTurn("after retries")
	t1.Fail = &mockapi.Failure{Status: 529, Times: 2}
	runProbe(t, mockapi.Script{t1}, nil, false)
}

func TestProbe500Forever(t *testing.T) {
	t1 := mockapi.TextTurn("never")
	t1.Fail = &mockapi.Failure{Status: 500, Times: -1}
	runProbe(t, mockapi.Script{t1}, nil, false)
}

func TestProbeAgent(t *testing.T) {
	runProbe(t, mockapi.Script{
		mockapi.ToolTurn("Agent", map[string]any{"description": "sub task", "prompt": "say hi", "subagent_type": "general-purpose"}),
		mockapi.TextTurn("all done"),
	}, nil, false)
}

func TestProbeNonessential(t *testing.T) {
	runProbe(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo hi", "description": "x"}),
		mockapi.TextTurn("all done"),
	}, []string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=0"}, true)
}
