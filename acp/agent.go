package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/claude-relay/claude-relay/internal/relay"
)

// Options configure the agent.
type Options struct {
	Core    *relay.Core
	Home    string // the user's home, where the CLI keeps its transcripts (session/load, session/list)
	Version string
	Logger  *slog.Logger
	// Root: the CLI refuses bypassPermissions to root, so the mode is not
	// offered.
	Root bool
	// HasCredentials reports whether the CLI can log in (an API key in the
	// environment, or a login): authenticate's answer.
	HasCredentials func() bool
}

// Agent serves one ACP client over stdio.
type Agent struct {
	opts Options
	log  *slog.Logger
	conn *acpsdk.AgentSideConnection
	out  *lineWriter
	ctx  context.Context // ends when the client goes
	stop context.CancelFunc

	mu       sync.Mutex
	sessions map[string]*session
}

var (
	_ acpsdk.Agent       = (*Agent)(nil)
	_ acpsdk.AgentLoader = (*Agent)(nil)
)

// Serve speaks ACP on in and out until the client closes in (or ctx ends),
// then ends every session's run and returns; the caller closes the core
// and drains the forwarder.
func Serve(ctx context.Context, opts Options, in io.Reader, out io.Writer) error {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	a := &Agent{opts: opts, log: opts.Logger, sessions: map[string]*session{}}
	a.ctx, a.stop = context.WithCancel(ctx)
	defer a.stop()
	pr, pw := io.Pipe()
	w := &lineWriter{w: out}
	a.out = w
	a.conn = acpsdk.NewAgentSideConnection(a, w, pr)
	a.conn.SetLogger(a.log)
	go filter(in, pw, w)
	select {
	case <-a.conn.Done():
	case <-ctx.Done():
	}
	a.stop()
	a.closeSessions()
	return nil
}

func (a *Agent) closeSessions() {
	a.mu.Lock()
	ss := make([]*session, 0, len(a.sessions))
	for _, s := range a.sessions {
		ss = append(ss, s)
	}
	a.mu.Unlock()
	for _, s := range ss {
		s.close()
	}
}

// session finds a live ACP session.
func (a *Agent) session(id acpsdk.SessionId) (*session, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[string(id)]
	if !ok {
		return nil, acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown session %q: create it with session/new or session/load first", id)})
	}
	return s, nil
}

// Initialize implements acpsdk.Agent: capabilities say only what works.
func (a *Agent) Initialize(_ context.Context, p acpsdk.InitializeRequest) (acpsdk.InitializeResponse, error) {
	title := "Claude Code (claude-relay)"
	loginDesc := "Run `claude` in a terminal and type /login, then start the session again."
	keyDesc := "Set ANTHROPIC_API_KEY in the environment the editor starts claude-relay with."
	return acpsdk.InitializeResponse{
		ProtocolVersion: acpsdk.ProtocolVersionNumber,
		AgentInfo:       &acpsdk.Implementation{Name: "claude-relay", Title: &title, Version: a.opts.Version},
		AgentCapabilities: acpsdk.AgentCapabilities{
			LoadSession:        true,
			PromptCapabilities: acpsdk.PromptCapabilities{Image: true, EmbeddedContext: true},
			McpCapabilities:    acpsdk.McpCapabilities{Http: true, Sse: true},
			SessionCapabilities: acpsdk.SessionCapabilities{
				List: &acpsdk.SessionListCapabilities{}, Resume: &acpsdk.SessionResumeCapabilities{},
				Close: &acpsdk.SessionCloseCapabilities{}, Fork: &acpsdk.SessionForkCapabilities{},
			},
			// As claude-agent-acp advertises it: a session/prompt sent while a
			// turn runs is queued behind it and answered in order.
			Meta: map[string]any{"claudeCode": map[string]any{"promptQueueing": true}},
		},
		AuthMethods: []acpsdk.AuthMethod{
			{Agent: &acpsdk.AuthMethodAgent{Id: authLogin, Name: "Log in with Claude Code", Description: &loginDesc}},
			{Agent: &acpsdk.AuthMethodAgent{Id: authAPIKey, Name: "Anthropic API key", Description: &keyDesc}},
		},
	}, nil
}

// Auth method IDs.
const (
	authLogin  = "claude-login"
	authAPIKey = "anthropic-api-key"
)

// Authenticate implements acpsdk.Agent. The CLI does its own login; this
// says whether it can, and how to when it cannot.
func (a *Agent) Authenticate(_ context.Context, p acpsdk.AuthenticateRequest) (acpsdk.AuthenticateResponse, error) {
	switch p.MethodId {
	case authLogin, authAPIKey:
	default:
		return acpsdk.AuthenticateResponse{}, acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown auth method %q (known: %s, %s)", p.MethodId, authLogin, authAPIKey)})
	}
	if a.opts.HasCredentials != nil && a.opts.HasCredentials() {
		return acpsdk.AuthenticateResponse{}, nil
	}
	return acpsdk.AuthenticateResponse{}, errAuthRequired()
}

func errAuthRequired() error {
	return acpsdk.NewAuthRequired(map[string]any{"error": "the Claude CLI is not logged in: run `claude` in a terminal and type /login, " +
		"or set ANTHROPIC_API_KEY in the environment the editor starts claude-relay with"})
}

// NewSession implements acpsdk.Agent: the session's CLI starts now, so the
// first prompt does not wait for it.
func (a *Agent) NewSession(ctx context.Context, p acpsdk.NewSessionRequest) (acpsdk.NewSessionResponse, error) {
	spec, err := a.specOf(p.Cwd, p.McpServers, p.Meta, p.AdditionalDirectories)
	if err != nil {
		return acpsdk.NewSessionResponse{}, err
	}
	s, err := a.open(ctx, spec)
	if err != nil {
		return acpsdk.NewSessionResponse{}, err
	}
	a.releaseAfterAnswer(s)
	return acpsdk.NewSessionResponse{SessionId: acpsdk.SessionId(s.id), Modes: s.modes(), Models: s.models(), ConfigOptions: s.configOptions()}, nil
}

// LoadSession implements acpsdk.AgentLoader: the conversation is replayed
// from the CLI's transcript, then continues in a new run.
func (a *Agent) LoadSession(ctx context.Context, p acpsdk.LoadSessionRequest) (acpsdk.LoadSessionResponse, error) {
	s, err := a.resume(ctx, p.SessionId, p.Cwd, p.McpServers, p.Meta, p.AdditionalDirectories, true)
	if err != nil {
		return acpsdk.LoadSessionResponse{}, err
	}
	return acpsdk.LoadSessionResponse{Modes: s.modes(), Models: s.models(), ConfigOptions: s.configOptions()}, nil
}

// ResumeSession implements acpsdk.Agent: LoadSession without the replay.
func (a *Agent) ResumeSession(ctx context.Context, p acpsdk.ResumeSessionRequest) (acpsdk.ResumeSessionResponse, error) {
	s, err := a.resume(ctx, p.SessionId, p.Cwd, p.McpServers, p.Meta, p.AdditionalDirectories, false)
	if err != nil {
		return acpsdk.ResumeSessionResponse{}, err
	}
	return acpsdk.ResumeSessionResponse{Modes: s.modes(), Models: s.models(), ConfigOptions: s.configOptions()}, nil
}

func (a *Agent) resume(ctx context.Context, id acpsdk.SessionId, cwd string, mcp []acpsdk.McpServer, meta map[string]any, dirs []string, replayIt bool) (*session, error) {
	if err := checkConversationID("sessionId", string(id)); err != nil {
		return nil, err
	}
	spec, err := a.specOf(cwd, mcp, meta, dirs)
	if err != nil {
		return nil, err
	}
	open, _ := a.session(id)
	path := transcriptPath(a.opts.Home, spec.cwd, string(id))
	if _, err := os.Stat(path); err != nil {
		return nil, acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("no conversation %q for %s: the CLI keeps none at %s", id, spec.cwd, path)})
	}
	spec.id, spec.resume = string(id), true
	var history []acpsdk.SessionUpdate
	if replayIt {
		if history, err = replay(path, spec.cwd); err != nil {
			return nil, acpsdk.NewInternalError(map[string]any{"error": fmt.Sprintf("read the conversation %s: %v", path, err)})
		}
	}
	s := open
	if s == nil {
		if s, err = a.open(ctx, spec); err != nil {
			return nil, err
		}
	}
	// A resumed conversation is titled by its own first prompt, not by the
	// next one.
	if _, title := transcriptHead(path); title != "" {
		s.mu.Lock()
		fresh := s.title == ""
		if fresh {
			s.title = title
		}
		s.mu.Unlock()
		if fresh {
			s.sendTitle(title)
		}
	}
	// Replayed before the response, in order, as session/load asks. A
	// session already open here goes on as it is.
	s.out.release()
	done := make(chan struct{})
	s.out.push(func() {
		for _, u := range history {
			s.send(u)
		}
		close(done)
	})
	select {
	case <-done:
	case <-a.ctx.Done():
	}
	return s, nil
}

// UnstableForkSession serves session/fork: a new session whose conversation
// starts as a copy of sessionId's.
func (a *Agent) UnstableForkSession(ctx context.Context, p acpsdk.UnstableForkSessionRequest) (acpsdk.UnstableForkSessionResponse, error) {
	if err := checkConversationID("sessionId", string(p.SessionId)); err != nil {
		return acpsdk.UnstableForkSessionResponse{}, err
	}
	var mcp []acpsdk.McpServer
	if err := convert(&mcp, p.McpServers); err != nil {
		return acpsdk.UnstableForkSessionResponse{}, acpsdk.NewInvalidParams(map[string]any{"error": "mcpServers: " + err.Error()})
	}
	spec, err := a.specOf(p.Cwd, mcp, p.Meta, p.AdditionalDirectories)
	if err != nil {
		return acpsdk.UnstableForkSessionResponse{}, err
	}
	path := transcriptPath(a.opts.Home, spec.cwd, string(p.SessionId))
	if _, err := os.Stat(path); err != nil {
		return acpsdk.UnstableForkSessionResponse{}, acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("no conversation %q for %s to fork: the CLI keeps none at %s", p.SessionId, spec.cwd, path)})
	}
	spec.forkFrom = string(p.SessionId)
	s, err := a.open(ctx, spec)
	if err != nil {
		return acpsdk.UnstableForkSessionResponse{}, err
	}
	a.releaseAfterAnswer(s)
	resp := acpsdk.UnstableForkSessionResponse{SessionId: acpsdk.SessionId(s.id), Modes: s.modes()}
	if err := errors.Join(convert(&resp.Models, s.models()), convert(&resp.ConfigOptions, s.configOptions())); err != nil {
		return resp, acpsdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	return resp, nil
}

// releaseAfterAnswer holds a new session's updates (its commands, first)
// until the client has the answer that names the session: a client drops
// updates for a session it does not know yet.
func (a *Agent) releaseAfterAnswer(s *session) {
	tag := []byte(`"sessionId":"` + s.id + `"`)
	a.out.afterWrite(func(line []byte) bool {
		if bytes.Contains(line, tag) && !bytes.Contains(line, []byte(`"method"`)) {
			s.out.release()
			return true
		}
		return false
	})
}

// convert copies between the SDK's stable and unstable twins of a type,
// which have the same JSON.
func convert(dst, src any) error {
	b, err := json.Marshal(src)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, dst)
}

// CloseSession implements acpsdk.Agent: the session's run ends after its
// turn.
func (a *Agent) CloseSession(_ context.Context, p acpsdk.CloseSessionRequest) (acpsdk.CloseSessionResponse, error) {
	s, err := a.session(p.SessionId)
	if err != nil {
		return acpsdk.CloseSessionResponse{}, err
	}
	a.mu.Lock()
	delete(a.sessions, s.id)
	a.mu.Unlock()
	s.close()
	return acpsdk.CloseSessionResponse{}, nil
}

// ListSessions implements acpsdk.Agent from the CLI's transcripts.
func (a *Agent) ListSessions(_ context.Context, p acpsdk.ListSessionsRequest) (acpsdk.ListSessionsResponse, error) {
	cwd := ""
	if p.Cwd != nil {
		cwd = *p.Cwd
	}
	infos, err := listSessions(a.opts.Home, cwd)
	if err != nil {
		return acpsdk.ListSessionsResponse{}, acpsdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	return acpsdk.ListSessionsResponse{Sessions: infos}, nil
}

// Prompt implements acpsdk.Agent.
func (a *Agent) Prompt(_ context.Context, p acpsdk.PromptRequest) (acpsdk.PromptResponse, error) {
	s, err := a.session(p.SessionId)
	if err != nil {
		return acpsdk.PromptResponse{}, err
	}
	// Not the request's context: the SDK cancels it on session/cancel,
	// which Cancel answers, and the turn's own end answers the rest.
	return s.prompt(a.ctx, p.Prompt, arrivalOf(p.Meta))
}

// Cancel implements acpsdk.Agent.
func (a *Agent) Cancel(_ context.Context, p acpsdk.CancelNotification) error {
	s, err := a.session(p.SessionId)
	if err != nil {
		return nil // a notification: nobody to tell
	}
	s.cancel()
	return nil
}

// SetSessionMode implements acpsdk.Agent.
func (a *Agent) SetSessionMode(ctx context.Context, p acpsdk.SetSessionModeRequest) (acpsdk.SetSessionModeResponse, error) {
	s, err := a.session(p.SessionId)
	if err != nil {
		return acpsdk.SetSessionModeResponse{}, err
	}
	return acpsdk.SetSessionModeResponse{}, s.setMode(ctx, string(p.ModeId))
}

// UnstableSetSessionModel serves session/set_model.
func (a *Agent) UnstableSetSessionModel(ctx context.Context, p acpsdk.UnstableSetSessionModelRequest) (acpsdk.UnstableSetSessionModelResponse, error) {
	s, err := a.session(p.SessionId)
	if err != nil {
		return acpsdk.UnstableSetSessionModelResponse{}, err
	}
	return acpsdk.UnstableSetSessionModelResponse{}, s.setModel(ctx, string(p.ModelId))
}

// SetSessionConfigOption implements acpsdk.Agent: the mode and the model
// are selects.
func (a *Agent) SetSessionConfigOption(ctx context.Context, p acpsdk.SetSessionConfigOptionRequest) (acpsdk.SetSessionConfigOptionResponse, error) {
	if p.ValueId == nil {
		return acpsdk.SetSessionConfigOptionResponse{}, acpsdk.NewInvalidParams(map[string]any{"error": "the mode and model options take a value id, not a boolean"})
	}
	s, err := a.session(p.ValueId.SessionId)
	if err != nil {
		return acpsdk.SetSessionConfigOptionResponse{}, err
	}
	opts, err := s.setConfig(ctx, string(p.ValueId.ConfigId), string(p.ValueId.Value))
	if err != nil {
		return acpsdk.SetSessionConfigOptionResponse{}, err
	}
	return acpsdk.SetSessionConfigOptionResponse{ConfigOptions: opts}, nil
}

// BudgetExhaustedCode is the JSON-RPC error code (in the range left to
// servers) of a prompt refused by a budget (issue 26).
const BudgetExhaustedCode = -32001

// errOf turns a core refusal into a JSON-RPC error a client can show.
func errOf(err error) error {
	var re *relay.RefusedError
	if errors.As(err, &re) && re.Code == relay.RefuseBadValue {
		return acpsdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	if errors.As(err, &re) && re.Code == relay.RefuseBudget {
		// The message names the cap, the spend and when it resets; a
		// client shows it as the prompt's error.
		return &acpsdk.RequestError{Code: BudgetExhaustedCode, Message: err.Error(),
			Data: map[string]any{"code": "budget_exhausted", "error": err.Error()}}
	}
	return acpsdk.NewInternalError(map[string]any{"error": err.Error()})
}
