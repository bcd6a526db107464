package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/relay"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
)

// spool keeps what the core would forward to the backend.
type spool struct {
	mu  sync.Mutex
	evs []forwarder.Event
}

func (s *spool) Enqueue(ev forwarder.Event) (forwarder.Accepted, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = append(s.evs, ev)
	return forwarder.Accepted{}, nil
}

func (s *spool) types(session string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.evs {
		if e.SessionID == session {
			out = append(out, e.Type)
		}
	}
	return out
}

// runMode is the mode of a session's first relay.run_started.
func (s *spool) runMode(session string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.evs {
		if e.SessionID == session && e.Type == "relay.run_started" {
			var rs struct {
				Mode string `json:"mode"`
			}
			json.Unmarshal(e.Data, &rs) //nolint:errcheck // an empty mode fails the test
			return rs.Mode
		}
	}
	return ""
}

// client is an ACP client in the test: it records every update and answers
// permission requests with answer.
type client struct {
	mu      sync.Mutex
	updates []json.RawMessage
	asked   []acpsdk.RequestPermissionRequest
	answer  func(acpsdk.RequestPermissionRequest) acpsdk.RequestPermissionResponse
}

func (c *client) SessionUpdate(_ context.Context, n acpsdk.SessionNotification) error {
	b, _ := json.Marshal(n.Update)
	c.mu.Lock()
	c.updates = append(c.updates, b)
	c.mu.Unlock()
	return nil
}

func (c *client) RequestPermission(_ context.Context, p acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.asked = append(c.asked, p)
	answer := c.answer
	c.mu.Unlock()
	if answer == nil {
		return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeSelected("allow")}, nil
	}
	return answer(p), nil
}

func (c *client) ReadTextFile(context.Context, acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	return acpsdk.ReadTextFileResponse{}, acpsdk.NewMethodNotFound("fs/read_text_file")
}
func (c *client) WriteTextFile(context.Context, acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error) {
	return acpsdk.WriteTextFileResponse{}, acpsdk.NewMethodNotFound("fs/write_text_file")
}
func (c *client) CreateTerminal(context.Context, acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error) {
	return acpsdk.CreateTerminalResponse{}, acpsdk.NewMethodNotFound("terminal/create")
}
func (c *client) KillTerminal(context.Context, acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error) {
	return acpsdk.KillTerminalResponse{}, acpsdk.NewMethodNotFound("terminal/kill")
}
func (c *client) TerminalOutput(context.Context, acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error) {
	return acpsdk.TerminalOutputResponse{}, acpsdk.NewMethodNotFound("terminal/output")
}
func (c *client) ReleaseTerminal(context.Context, acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	return acpsdk.ReleaseTerminalResponse{}, acpsdk.NewMethodNotFound("terminal/release")
}
func (c *client) WaitForTerminalExit(context.Context, acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error) {
	return acpsdk.WaitForTerminalExitResponse{}, acpsdk.NewMethodNotFound("terminal/wait_for_exit")
}

func (c *client) all() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, u := range c.updates {
		b.Write(u)
		b.WriteByte('\n')
	}
	return b.String()
}

// agentEnv is our agent served in-process to a client over pipes, with the
// real CLI on the scripted API.
type agentEnv struct {
	t     *testing.T
	cli   *realcli.CLI
	api   *mockapi.Server
	cwd   string
	spool *spool
	c     *client
	conn  *acpsdk.ClientSideConnection
	toAg  *io.PipeWriter
	done  chan struct{}
}

func startAgent(t *testing.T, script mockapi.Script) *agentEnv {
	t.Helper()
	cli := realcli.RealCLI(t)
	api := mockapi.New(t, script)
	cwd := t.TempDir()
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = real
	}
	cli.TrustDir(cwd)
	return startAgentWith(t, cli, api, cwd)
}

func startAgentWith(t *testing.T, cli *realcli.CLI, api *mockapi.Server, cwd string) *agentEnv {
	t.Helper()
	return startAgentExec(t, cli, api, cwd, nil)
}

// startAgentExec is startAgentWith with the executor's options changed by
// change (nil: none).
func startAgentExec(t *testing.T, cli *realcli.CLI, api *mockapi.Server, cwd string, change func(*executor.Options)) *agentEnv {
	t.Helper()
	opts := executor.Options{CLIPath: cli.Path, BaseEnv: cli.Env(t, api.URL()), SignalGap: 500 * time.Millisecond,
		InterruptGrace: 2 * time.Second, ApprovalTimeout: time.Minute}
	if change != nil {
		change(&opts)
	}
	e := executor.New(opts)
	sp := &spool{}
	core := relay.New(relay.Options{Executor: e, Spool: sp})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	env := &agentEnv{t: t, cli: cli, api: api, cwd: cwd, spool: sp, c: &client{}, toAg: inW, done: make(chan struct{})}
	go func() {
		defer close(env.done)
		_ = Serve(context.Background(), Options{Core: core, Home: cli.Home, Version: "test", Root: os.Geteuid() == 0}, inR, outW)
		core.Close()
		outW.Close()
	}()
	env.conn = acpsdk.NewClientSideConnection(env.c, inW, outR)
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-env.done:
		case <-time.After(30 * time.Second):
			t.Error("the agent did not stop within 30s of stdin closing")
		}
	})
	return env
}

func (e *agentEnv) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	e.t.Cleanup(cancel)
	return ctx
}

func (e *agentEnv) newSession() acpsdk.SessionId {
	e.t.Helper()
	if _, err := e.conn.Initialize(e.ctx(), acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber}); err != nil {
		e.t.Fatalf("initialize: %v", err)
	}
	res, err := e.conn.NewSession(e.ctx(), acpsdk.NewSessionRequest{Cwd: e.cwd, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		e.t.Fatalf("session/new: %v", err)
	}
	return res.SessionId
}

func (e *agentEnv) prompt(id acpsdk.SessionId, text string) (acpsdk.PromptResponse, error) {
	return e.conn.Prompt(e.ctx(), acpsdk.PromptRequest{SessionId: id, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(text)}})
}

func TestACPBashPromptEndToEnd(t *testing.T) {
	e := startAgent(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo acp-$((40+2))", "description": "Compute"}),
		mockapi.TextTurn("The answer is 42."),
	})
	init, err := e.conn.Initialize(e.ctx(), acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber})
	if err != nil || !init.AgentCapabilities.LoadSession || !init.AgentCapabilities.PromptCapabilities.Image {
		t.Fatalf("initialize %+v, %v", init, err)
	}
	ns, err := e.conn.NewSession(e.ctx(), acpsdk.NewSessionRequest{Cwd: e.cwd, McpServers: []acpsdk.McpServer{}})
	if err != nil || ns.Modes == nil || ns.Modes.CurrentModeId != "default" {
		t.Fatalf("session/new %+v, %v", ns, err)
	}
	res, err := e.prompt(ns.SessionId, "compute it")
	if err != nil || res.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt %+v, %v", res, err)
	}
	all := e.c.all()
	for _, want := range []string{`"sessionUpdate":"tool_call"`, `"$ echo acp-$((40+2))`, `"kind":"execute"`,
		`"sessionUpdate":"tool_call_update"`, `"status":"completed"`, "acp-42", `"sessionUpdate":"agent_message_chunk"`,
		`"sessionUpdate":"available_commands_update"`} {
		if !strings.Contains(all, want) {
			t.Errorf("no %s in the updates:\n%s", want, all)
		}
	}
	if !strings.Contains(all, "The answer is 42.") && !strings.Contains(all, "42.") {
		t.Errorf("no answer text:\n%s", all)
	}
	// Forwarded like a background run: one session, the ACP sessionId.
	types := strings.Join(e.spool.types(string(ns.SessionId)), ",")
	for _, want := range []string{"relay.run_started", "assistant", "relay.turn_completed"} {
		if !strings.Contains(types, want) {
			t.Errorf("backend events %s lack %s", types, want)
		}
	}
	// The backend tells ACP sessions apart by the run's mode.
	if mode := e.spool.runMode(string(ns.SessionId)); mode != "acp" {
		t.Errorf("relay.run_started mode %q, want acp", mode)
	}
}

func TestACPRejectedWriteWritesNothing(t *testing.T) {
	cli := realcli.RealCLI(t)
	cwd := t.TempDir()
	cwd, _ = filepath.EvalSymlinks(cwd)
	cli.TrustDir(cwd)
	out := filepath.Join(cwd, "out.txt")
	api := mockapi.New(t, mockapi.Script{
		mockapi.ToolTurn("Write", map[string]any{"file_path": out, "content": "no\n"}),
		mockapi.TextTurn("I did not write it."),
	})
	e := startAgentWith(t, cli, api, cwd)
	e.c.answer = func(p acpsdk.RequestPermissionRequest) acpsdk.RequestPermissionResponse {
		return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeSelected("deny")}
	}
	id := e.newSession()
	res, err := e.prompt(id, "write it")
	if err != nil || res.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt %+v, %v", res, err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the rejected write happened: %v", err)
	}
	e.c.mu.Lock()
	asked := e.c.asked
	e.c.mu.Unlock()
	if len(asked) != 1 || len(asked[0].Options) != 3 || *asked[0].ToolCall.Title != "Write "+out {
		t.Errorf("permission requests %+v", asked)
	}
}

func TestACPCancelDuringSleep(t *testing.T) {
	e := startAgent(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo start && sleep 37", "description": "Wait"}),
		mockapi.TextTurn("after the cancel"),
		mockapi.TextTurn("next prompt's answer"),
	})
	id := e.newSession()
	got := make(chan acpsdk.PromptResponse, 1)
	go func() {
		r, err := e.prompt(id, "wait")
		if err != nil {
			t.Errorf("prompt: %v", err)
		}
		got <- r
	}()
	poll.Until(t, 60*time.Second, "the client to see sleep 37 and the tool to run it", func() bool {
		return strings.Contains(e.c.all(), "sleep 37") && sleeping("37")
	})
	if err := e.conn.Cancel(e.ctx(), acpsdk.CancelNotification{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r.StopReason != acpsdk.StopReasonCancelled {
			t.Errorf("stop reason %s", r.StopReason)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer within 10s of session/cancel")
	}
	// The next prompt gets its own answer, not the cancelled turn's.
	r, err := e.prompt(id, "go on")
	if err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("next prompt %+v, %v", r, err)
	}
	if !strings.Contains(e.c.all(), "after the cancel") && !strings.Contains(e.c.all(), "next prompt") {
		t.Errorf("the next prompt's answer is missing:\n%s", e.c.all())
	}
}

func TestACPSetModeAndLoad(t *testing.T) {
	cli := realcli.RealCLI(t)
	cwd := t.TempDir()
	cwd, _ = filepath.EvalSymlinks(cwd)
	cli.TrustDir(cwd)
	api := mockapi.New(t, mockapi.Script{mockapi.TextTurn("first answer"), mockapi.TextTurn("after load")})
	e := startAgentWith(t, cli, api, cwd)
	id := e.newSession()
	if _, err := e.conn.SetSessionMode(e.ctx(), acpsdk.SetSessionModeRequest{SessionId: id, ModeId: "acceptEdits"}); err != nil {
		t.Fatalf("set_mode: %v", err)
	}
	if !strings.Contains(e.c.all(), `{"currentModeId":"acceptEdits","sessionUpdate":"current_mode_update"}`) {
		t.Errorf("no current_mode_update:\n%s", e.c.all())
	}
	if _, err := e.conn.SetSessionMode(e.ctx(), acpsdk.SetSessionModeRequest{SessionId: id, ModeId: "yolo"}); err == nil {
		t.Error("an unknown mode was accepted")
	}
	if r, err := e.prompt(id, "remember pelican"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt %+v, %v", r, err)
	}
	// A new agent process loads it: history first, then it goes on.
	e2 := startAgentWith(t, cli, api, cwd)
	if _, err := e2.conn.Initialize(e2.ctx(), acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	if _, err := e2.conn.LoadSession(e2.ctx(), acpsdk.LoadSessionRequest{SessionId: id, Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	hist := e2.c.all()
	if !strings.Contains(hist, `"sessionUpdate":"user_message_chunk"`) || !strings.Contains(hist, "remember pelican") || !strings.Contains(hist, "first answer") {
		t.Errorf("history not replayed:\n%s", hist)
	}
	if r, err := e2.prompt(id, "what was it?"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt after load %+v, %v", r, err)
	}
	last, _ := api.LastMainRequest()
	if !strings.Contains(string(last.Body), "remember pelican") {
		t.Error("the loaded session did not continue the conversation")
	}
}

func TestACPBadInput(t *testing.T) {
	e := startAgent(t, mockapi.Script{mockapi.TextTurn("unused")})
	if _, err := e.prompt("no-such-session", "x"); err == nil || !strings.Contains(fmt.Sprint(err), "unknown session") {
		t.Errorf("prompt for an unknown session: %v", err)
	}
	if _, err := e.conn.NewSession(e.ctx(), acpsdk.NewSessionRequest{Cwd: "relative/dir", McpServers: []acpsdk.McpServer{}}); err == nil ||
		!strings.Contains(fmt.Sprint(err), "absolute") {
		t.Errorf("relative cwd: %v", err)
	}
}

// sleeping reports whether a "sleep <seconds>" process runs; each test
// sleeps its own number of seconds, so tests running at once do not mix.
func sleeping(seconds string) bool {
	out, _ := exec.Command("pgrep", "-x", "-f", "sleep "+seconds).Output()
	return len(strings.TrimSpace(string(out))) > 0
}

// An image and an embedded text resource reach the model as an image block
// and as text naming the resource.
func TestACPImageAndResourcePrompt(t *testing.T) {
	e := startAgent(t, mockapi.Script{mockapi.TextTurn("A red pixel.")})
	id := e.newSession()
	// A 1x1 PNG.
	const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	res, err := e.conn.Prompt(e.ctx(), acpsdk.PromptRequest{SessionId: id, Prompt: []acpsdk.ContentBlock{
		acpsdk.TextBlock("what is this?"),
		acpsdk.ImageBlock(png, "image/png"),
		{Resource: &acpsdk.ContentBlockResource{Type: "resource", Resource: acpsdk.EmbeddedResourceResource{
			TextResourceContents: &acpsdk.TextResourceContents{Uri: "file:///w/notes.md", Text: "remember the pixel"}}}},
	}})
	if err != nil || res.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt %+v, %v", res, err)
	}
	last, ok := e.api.LastMainRequest()
	if !ok {
		t.Fatal("no request")
	}
	imgs, err := last.Images()
	if err != nil || len(imgs) != 1 || imgs[0].MediaType != "image/png" || len(imgs[0].Data) == 0 {
		t.Errorf("images %+v, %v", imgs, err)
	}
	if body := string(last.Body); !strings.Contains(body, "remember the pixel") || !strings.Contains(body, "@/w/notes.md") {
		t.Errorf("the resource did not reach the model: %.500s", body)
	}
	// The backend is told what was asked: the text and the mention, every
	// block described; the run's start at session/new is idle.
	sent := e.spool.messagesSent(t, string(id))
	if len(sent) != 1 || sent[0].Prompt != "what is this?\n\n@/w/notes.md" || len(sent[0].Blocks) != 3 ||
		sent[0].Blocks[1].Type != "image" || sent[0].Blocks[2].Type != "resource" || sent[0].Blocks[2].SHA256 == "" {
		t.Errorf("relay.message_sent %+v, want the prompt's text and its three blocks", sent)
	}
	if rs := e.spool.runStarted(t, string(id)); !rs.Idle || rs.Prompt != "" {
		t.Errorf("relay.run_started %+v, want an idle start without a prompt", rs)
	}
}

// set_model and the config options switch the model; fork starts a new
// session on a copy of the conversation.
func TestACPModelConfigAndFork(t *testing.T) {
	cli := realcli.RealCLI(t)
	cwd, _ := filepath.EvalSymlinks(t.TempDir())
	cli.TrustDir(cwd)
	api := mockapi.New(t, mockapi.Script{mockapi.TextTurn("first answer"), mockapi.TextTurn("forked answer")})
	e := startAgentWith(t, cli, api, cwd)
	if _, err := e.conn.Initialize(e.ctx(), acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	ns, err := e.conn.NewSession(e.ctx(), acpsdk.NewSessionRequest{Cwd: cwd, McpServers: []acpsdk.McpServer{}})
	if err != nil || ns.Models == nil || len(ns.ConfigOptions) != 2 {
		t.Fatalf("session/new %+v, %v", ns, err)
	}
	model := ns.Models.AvailableModels[len(ns.Models.AvailableModels)-1].ModelId
	if _, err := e.conn.UnstableSetSessionModel(e.ctx(), acpsdk.UnstableSetSessionModelRequest{SessionId: ns.SessionId, ModelId: acpsdk.UnstableModelId(model)}); err != nil {
		t.Fatalf("set_model %s: %v", model, err)
	}
	if _, err := e.conn.UnstableSetSessionModel(e.ctx(), acpsdk.UnstableSetSessionModelRequest{SessionId: ns.SessionId, ModelId: "no-such-model"}); err == nil {
		t.Error("an unknown model was accepted")
	}
	res, err := e.conn.SetSessionConfigOption(e.ctx(), acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{
		SessionId: ns.SessionId, ConfigId: "mode", Value: "plan"}})
	if err != nil || string(res.ConfigOptions[0].Select.CurrentValue) != "plan" {
		t.Fatalf("set_config_option %+v, %v", res, err)
	}
	if r, err := e.prompt(ns.SessionId, "remember pelican"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt %+v, %v", r, err)
	}
	fork, err := e.conn.UnstableForkSession(e.ctx(), acpsdk.UnstableForkSessionRequest{SessionId: ns.SessionId, Cwd: cwd})
	if err != nil || fork.SessionId == "" || fork.SessionId == ns.SessionId {
		t.Fatalf("fork %+v, %v", fork, err)
	}
	if r, err := e.prompt(fork.SessionId, "and now?"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt in the fork %+v, %v", r, err)
	}
	last, _ := api.LastMainRequest()
	if !strings.Contains(string(last.Body), "remember pelican") {
		t.Error("the fork lost the history")
	}
	if _, err := os.Stat(transcriptPath(cli.Home, cwd, string(fork.SessionId))); err != nil {
		t.Errorf("the fork's conversation is not the fork's session id: %v", err)
	}
}

// _meta.claudeCode.options.resume opens a new session on an existing
// conversation: the session is that conversation.
func TestACPNewSessionResumesByMeta(t *testing.T) {
	cli := realcli.RealCLI(t)
	cwd, _ := filepath.EvalSymlinks(t.TempDir())
	cli.TrustDir(cwd)
	api := mockapi.New(t, mockapi.Script{mockapi.TextTurn("first answer"), mockapi.TextTurn("second answer")})
	e := startAgentWith(t, cli, api, cwd)
	id := e.newSession()
	if r, err := e.prompt(id, "remember pelican"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt %+v, %v", r, err)
	}
	e2 := startAgentWith(t, cli, api, cwd)
	ns, err := e2.conn.NewSession(e2.ctx(), acpsdk.NewSessionRequest{Cwd: cwd, McpServers: []acpsdk.McpServer{},
		Meta: map[string]any{"claudeCode": map[string]any{"options": map[string]any{"resume": string(id)}}}})
	if err != nil || ns.SessionId != id {
		t.Fatalf("session/new with resume: %+v, %v", ns, err)
	}
	if r, err := e2.prompt(ns.SessionId, "what was it?"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt %+v, %v", r, err)
	}
	last, _ := api.LastMainRequest()
	if !strings.Contains(string(last.Body), "remember pelican") {
		t.Error("the resumed session lost the history")
	}
	if _, err := e2.conn.NewSession(e2.ctx(), acpsdk.NewSessionRequest{Cwd: cwd, McpServers: []acpsdk.McpServer{},
		Meta: map[string]any{"claudeCode": map[string]any{"options": map[string]any{"resume": "not-a-uuid"}}}}); err == nil {
		t.Error("a resume that is no conversation ID was accepted")
	}
}
