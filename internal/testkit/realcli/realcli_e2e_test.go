//go:build unix

package realcli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
)

// proc is the CLI under test with its stdout split into lines.
type proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *io.PipeWriter
	stderr bytes.Buffer // read only after wait
	lines  chan []byte
	// stop makes the reader discard lines nobody will receive any more.
	stop       chan struct{}
	stopOnce   sync.Once
	readerDone chan struct{}
	waitOnce   sync.Once
	waitErr    error
}

// start runs the CLI in its own process group; ctx ending kills the group.
// Cleanup stops it and waits for it and for the reader goroutine.
func start(t *testing.T, ctx context.Context, cli *realcli.CLI, dir string, env []string, args ...string) *proc {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	p := &proc{lines: make(chan []byte), stop: make(chan struct{}), readerDone: make(chan struct{})}
	p.cmd = exec.CommandContext(ctx, cli.Path, args...)
	p.cmd.Dir, p.cmd.Env = dir, env
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.cmd.Cancel = func() error { return syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) }
	// Bounds Wait when something the CLI started keeps its stdout open.
	p.cmd.WaitDelay = 5 * time.Second
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatalf("stdin pipe: %v", err)
	}
	// An io.Pipe (not an *os.File) makes exec copy stdout itself, so that
	// WaitDelay can end a Wait that a lingering grandchild would block.
	pr, pw := io.Pipe()
	p.stdout = pw
	p.cmd.Stdout, p.cmd.Stderr = pw, &p.stderr
	if err := p.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %s: %v", cli.Path, err)
	}
	go p.read(pr)
	t.Cleanup(func() {
		cancel()
		p.wait()
		<-p.readerDone
	})
	return p
}

// read sends stdout lines of any length to p.lines until EOF.
func (p *proc) read(r io.Reader) {
	defer close(p.readerDone)
	defer close(p.lines)
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			select {
			case p.lines <- line:
			case <-p.stop:
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *proc) send(t *testing.T, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode stdin line: %v", err)
	}
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		t.Fatalf("write stdin: %v", err)
	}
}

// wait stops line delivery, waits for the process and ends the reader.
func (p *proc) wait() error {
	p.stopOnce.Do(func() { close(p.stop) })
	p.waitOnce.Do(func() {
		p.waitErr = p.cmd.Wait()
		p.stdout.Close()
	})
	return p.waitErr
}

// line is the part of a stream-json stdout line the test looks at.
type line struct {
	Type      string          `json:"type"`
	Subtype   string          `json:"subtype"`
	IsError   bool            `json:"is_error"`
	SessionID string          `json:"session_id"`
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`
	Message   struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	Usage struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
}

func TestRealCLIToolRoundTrip(t *testing.T) {
	cli := realcli.RealCLI(t)
	srv := mockapi.New(t, mockapi.Script{
		{
			Blocks: []mockapi.Block{mockapi.ToolUse("Bash", map[string]any{"command": "echo hello-from-tool", "description": "Say hello"})},
			Usage:  mockapi.Usage{InputTokens: 100, OutputTokens: 20},
		},
		{Blocks: []mockapi.Block{mockapi.Text("all done")}, Usage: mockapi.Usage{InputTokens: 200, OutputTokens: 30}},
	})
	dir := t.TempDir()
	cli.TrustDir(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	began := time.Now()
	p := start(t, ctx, cli, dir, cli.Env(t, srv.URL()),
		"-p", "--verbose", "--output-format", "stream-json", "--input-format", "stream-json",
		"--permission-prompt-tool", "stdio", "--max-turns=3")
	p.send(t, map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": "run it"}})

	var sawToolResult bool
	var result line
	for result.Type == "" {
		var raw []byte
		select {
		case l, ok := <-p.lines:
			if !ok {
				err := p.wait()
				t.Fatalf("stdout ended before a result line (exit: %v); stderr:\n%s", err, p.stderr.String())
			}
			raw = l
		case <-ctx.Done():
			t.Fatalf("no result line within the timeout: %v", ctx.Err())
		}
		t.Logf("stdout: %.300s", raw)
		var l line
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatalf("stdout line is not JSON: %v: %.300s", err, raw)
		}
		switch l.Type {
		case "control_request":
			answerControl(t, p, l)
		case "user":
			if strings.Contains(string(l.Message.Content), "tool_result") &&
				strings.Contains(string(l.Message.Content), "hello-from-tool") {
				sawToolResult = true
			}
		case "result":
			result = l
		}
	}
	if err := p.stdin.Close(); err != nil {
		t.Errorf("close stdin: %v", err)
	}
	if err := p.wait(); err != nil {
		t.Errorf("CLI exit after stdin closed: %v; stderr:\n%s", err, p.stderr.String())
	}
	t.Logf("CLI run took %v", time.Since(began))

	if !sawToolResult {
		t.Errorf("no user line with a tool_result holding hello-from-tool")
	}
	if result.Subtype != "success" || result.IsError || result.SessionID == "" {
		t.Errorf("result line %+v, want subtype success with a session_id", result)
	}
	// The usage the script reported is what the CLI adds up.
	if result.Usage.InputTokens != 300 || result.Usage.OutputTokens != 50 {
		t.Errorf("result usage %+v, want 300 in / 50 out", result.Usage)
	}

	main := srv.MainRequests()
	if len(main) != 2 {
		t.Fatalf("mock got %d main requests, want 2", len(main))
	}
	if main[0].Turn != 0 || main[1].Turn != 1 {
		t.Errorf("main requests selected turns %d and %d, want 0 and 1", main[0].Turn, main[1].Turn)
	}
	results := main[1].ToolResults()
	if len(results) != 1 || strings.TrimSpace(results[0].Content) != "hello-from-tool" || results[0].IsError ||
		!strings.HasPrefix(results[0].ToolUseID, "toolu_") {
		t.Errorf("second main request tool results %+v, want one hello-from-tool", results)
	}
	if got := main[1].Header.Get("X-Api-Key"); got != realcli.APIKey {
		t.Errorf("x-api-key %q, want %q", got, realcli.APIKey)
	}
}

// answerControl allows every tool: the CLI in this mode was seen running
// Bash without asking, but a can_use_tool request must not stall the test.
func answerControl(t *testing.T, p *proc, l line) {
	t.Helper()
	var req struct {
		Subtype string          `json:"subtype"`
		Input   json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(l.Request, &req); err != nil {
		t.Fatalf("control_request %s: %v", l.RequestID, err)
	}
	resp := map[string]any{"subtype": "success", "request_id": l.RequestID}
	switch req.Subtype {
	case "can_use_tool":
		resp["response"] = map[string]any{"behavior": "allow", "updatedInput": req.Input}
	default:
		resp = map[string]any{"subtype": "error", "request_id": l.RequestID, "error": "unsupported in this test: " + req.Subtype}
	}
	p.send(t, map[string]any{"type": "control_response", "response": resp})
}
