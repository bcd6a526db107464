package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/internal/relay"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
)

// rawAgent is the agent on pipes a test writes raw lines to.
type rawAgent struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan struct{}
}

func startRaw(t *testing.T, core *relay.Core, home string) *rawAgent {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	r := &rawAgent{t: t, in: inW, out: bufio.NewReader(outR), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		_ = Serve(context.Background(), Options{Core: core, Home: home, Version: "test"}, inR, outW)
		core.Close()
		outW.Close()
	}()
	t.Cleanup(func() {
		inW.Close()
		<-r.done
	})
	return r
}

func (r *rawAgent) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		r.t.Fatal(err)
	}
}

// next reads the next message the agent writes, skipping notifications.
func (r *rawAgent) next() map[string]any {
	r.t.Helper()
	type res struct {
		m   map[string]any
		err error
	}
	ch := make(chan res, 1)
	go func() {
		for {
			line, err := r.out.ReadBytes('\n')
			if err != nil {
				ch <- res{err: err}
				return
			}
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				ch <- res{err: err}
				return
			}
			if _, isNote := m["method"]; isNote && m["id"] == nil {
				continue
			}
			ch <- res{m: m}
			return
		}
	}()
	select {
	case x := <-ch:
		if x.err != nil {
			r.t.Fatalf("read: %v", x.err)
		}
		return x.m
	case <-time.After(60 * time.Second):
		r.t.Fatal("no answer within 60s")
		return nil
	}
}

func code(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	f, _ := e["code"].(float64)
	return int(f)
}

// Malformed JSON-RPC gets JSON-RPC's errors, and the agent goes on serving.
func TestACPMalformedInput(t *testing.T) {
	core := relay.New(relay.Options{Executor: executor.New(executor.Options{CLIPath: "/nonexistent/claude"}), Spool: &spool{}})
	r := startRaw(t, core, t.TempDir())
	for _, tt := range []struct {
		line string
		code int
		id   any
	}{
		{`{not json`, -32700, nil},
		{`[1,2]`, -32600, nil},
		{`{"jsonrpc":"1.0","id":3,"method":"initialize"}`, -32600, float64(3)},
		{`{"jsonrpc":"2.0","id":4}`, -32600, float64(4)},
		{`{"jsonrpc":"2.0","id":5,"method":"no/such_method","params":{}}`, -32601, float64(5)},
		{`{"jsonrpc":"2.0","id":6,"method":"session/new","params":{"cwd":42}}`, -32602, float64(6)},
		{`{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"ghost","prompt":[{"type":"text","text":"x"}]}}`, -32602, float64(7)},
	} {
		r.send(tt.line)
		m := r.next()
		if code(m) != tt.code || m["id"] != tt.id {
			t.Errorf("%s: got %v, want code %d id %v", tt.line, m, tt.code, tt.id)
		}
	}
	r.send(`{"jsonrpc":"2.0","id":8,"method":"initialize","params":{"protocolVersion":1}}`)
	if m := r.next(); m["result"] == nil {
		t.Errorf("initialize after bad input: %v", m)
	}
}

// A second prompt while one runs is queued behind it (promptQueueing);
// closing stdin mid-turn stops the run, the queued prompt never runs, and
// no process is left.
func TestACPSecondPromptAndStdinClosedMidTurn(t *testing.T) {
	cli := realcli.RealCLI(t)
	api := mockapi.New(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo start && sleep 38", "description": "Wait"}),
		mockapi.TextTurn("never"),
	})
	cwd, _ := filepath.EvalSymlinks(t.TempDir())
	cli.TrustDir(cwd)
	e := startAgentWith(t, cli, api, cwd)
	id := e.newSession()
	go func() { _, _ = e.prompt(id, "wait") }()
	poll.Until(t, 60*time.Second, "the tool to run sleep 38", func() bool { return sleeping("38") })
	queued := make(chan error, 1)
	go func() { _, err := e.prompt(id, "another"); queued <- err }()
	e.toAg.Close()
	select {
	case <-e.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the agent did not stop after stdin closed")
	}
	if !poll.Within(10*time.Second, func() bool { return !sleeping("38") }) {
		t.Error("sleep 38 outlived the agent")
	}
	select {
	case <-queued: // answered cancelled, or the connection ended under it
	case <-time.After(30 * time.Second):
		t.Error("the queued prompt was never answered")
	}
	if n := len(api.MainRequests()); n != 1 {
		t.Errorf("%d requests to the model, want the first prompt's only: the queued prompt ran after its run was closed", n)
	}
	if _, err := os.Stat(cwd); err != nil {
		t.Fatal(err)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// session/new's answer comes before any update of the session it names:
// a client drops updates for a session it does not know yet.
func TestACPNewSessionAnswerComesFirst(t *testing.T) {
	cli := realcli.RealCLI(t)
	api := mockapi.New(t, mockapi.Script{mockapi.TextTurn("unused")})
	cwd, _ := filepath.EvalSymlinks(t.TempDir())
	cli.TrustDir(cwd)
	e := executor.New(executor.Options{CLIPath: cli.Path, BaseEnv: cli.Env(t, api.URL())})
	r := startRaw(t, relay.New(relay.Options{Executor: e, Spool: &spool{}}), cli.Home)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	r.next()
	r.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":` + toJSON(cwd) + `,"mcpServers":[]}}`)
	line, err := r.out.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil || m["id"] != float64(2) || m["result"] == nil {
		t.Fatalf("first line after session/new: %s", line)
	}
	line, err = r.out.ReadBytes('\n')
	if err != nil || !strings.Contains(string(line), "available_commands_update") {
		t.Errorf("then: %.200s, %v", line, err)
	}
}
