package extension

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/tooltitle"
)

// run is one live prompt.
type run struct {
	s         *Server
	id        string
	session   string
	inter     string
	started   time.Time
	cancel    context.CancelFunc
	exitAfter bool

	mu      sync.Mutex
	pending map[string]chan executor.Decision // approvals by approval_id
}

func (r *run) info() RunInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return RunInfo{RunID: r.id, SessionID: r.session, InteractionID: r.inter, StartedAt: r.started, Approvals: len(r.pending)}
}

func (r *run) answer(approvalID string, d executor.Decision) bool {
	r.mu.Lock()
	ch, ok := r.pending[approvalID]
	delete(r.pending, approvalID)
	r.mu.Unlock()
	if ok {
		ch <- d
	}
	return ok
}

var permissionModes = map[string]bool{"": true, "default": true, "acceptEdits": true, "plan": true, "bypassPermissions": true}

// prompt starts a run.
func (s *Server) prompt(cmd Command) {
	if cmd.Prompt == nil {
		s.emitError(cmd.RequestID, CodeMissingField, "missing field: prompt")
		return
	}
	if !permissionModes[cmd.Options.PermissionMode] {
		s.emitError(cmd.RequestID, CodeBadValue, fmt.Sprintf("permission_mode %q (allowed: default, acceptEdits, plan, bypassPermissions)", cmd.Options.PermissionMode))
		return
	}
	if cmd.RunID == "" {
		cmd.RunID = uuid.NewString()
	}
	if cmd.SessionID == "" {
		cmd.SessionID = uuid.NewString()
	}
	if cmd.InteractionID == "" {
		cmd.InteractionID = uuid.NewString()
	}
	o := cmd.Options
	if o.Cwd == "" {
		o.Cwd = s.opts.DefaultCwd
	}
	// Refused before run_started, so a run that cannot start spools nothing.
	if code, msg := s.checkPrompt(*cmd.Prompt, o); code != "" {
		s.emitError(cmd.RequestID, code, msg)
		return
	}
	if o.ResumeLastSession && o.Resume == "" && s.opts.State != nil {
		o.Resume = s.opts.State.Last(o.Cwd)
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		s.emitError(cmd.RequestID, CodeShuttingDown, "shutting down: no new runs")
		return
	}
	if _, dup := s.runs[cmd.RunID]; dup {
		s.mu.Unlock()
		s.emitError(cmd.RequestID, CodeRunConflict, fmt.Sprintf("run %q is already live", cmd.RunID))
		return
	}
	ctx, cancel := context.WithCancel(s.runsCtx)
	r := &run{s: s, id: cmd.RunID, session: cmd.SessionID, inter: cmd.InteractionID, started: time.Now(),
		cancel: cancel, exitAfter: o.ExitOnComplete, pending: map[string]chan executor.Decision{}}
	s.runs[r.id] = r
	s.runsWG.Add(1)
	// Emitted under s.mu, so state events follow the run count in order.
	s.emit(Event{Event: EventRunStarted, RequestID: cmd.RequestID, RunID: r.id, SessionID: r.session, InteractionID: r.inter, Cwd: o.Cwd})
	if len(s.runs) == 1 {
		s.emit(Event{Event: EventState, State: StateRunning})
	}
	s.mu.Unlock()

	req := executor.Request{RunID: r.id, Prompt: *cmd.Prompt, Cwd: o.Cwd, Model: o.Model,
		PermissionMode: streamjson.PermissionMode(o.PermissionMode), Approvals: o.Approvals, Resume: o.Resume,
		Fork: o.Fork, Continue: o.Continue, MaxTurns: o.MaxTurns, AppendSystemPrompt: o.SystemPromptAppend,
		Env: o.Env, AdditionalArgs: o.AdditionalArgs}
	r.forward("relay.run_started", "relay", map[string]any{"run_id": r.id, "prompt": req.Prompt, "cwd": o.Cwd,
		"model": o.Model, "permission_mode": o.PermissionMode, "resume": o.Resume, "fork": o.Fork, "approvals": o.Approvals})
	go func() {
		defer s.runsWG.Done()
		defer cancel()
		res, err := s.opts.Executor.Run(ctx, req, r, r)
		r.finish(req, res, err)
	}()
}

// checkPrompt says why a prompt cannot start, as an error code and a message
// a user can act on; an empty code means it can.
func (s *Server) checkPrompt(prompt string, o PromptOptions) (code, msg string) {
	if o.Fork && o.Resume == "" && !o.Continue && !o.ResumeLastSession {
		return CodeBadValue, "fork needs resume (the conversation to fork) or continue"
	}
	if o.Cwd != "" {
		fi, err := os.Stat(o.Cwd)
		switch {
		case err != nil:
			return CodeBadValue, fmt.Sprintf("cwd %q: %v", o.Cwd, errors.Unwrap(err))
		case !fi.IsDir():
			return CodeBadValue, fmt.Sprintf("cwd %q is not a directory", o.Cwd)
		}
	}
	// A blank prompt completes without the CLI (seed 002), so it needs none.
	if s.opts.CLIError != "" && strings.TrimSpace(prompt) != "" {
		return CodeCLINotFound, "cannot run the Claude CLI: " + s.opts.CLIError + " (`claude-relay doctor` says where it looked and how to fix it)"
	}
	return "", ""
}

// finish reports the run's end to the backend and the extension.
func (r *run) finish(req executor.Request, res *executor.Result, err error) {
	s := r.s
	cr := &Result{Stdout: res.Stdout, Stderr: res.Stderr, ExitCode: res.ExitCode, DurationMS: res.DurationMS}
	ev := Event{RunID: r.id, SessionID: r.session, InteractionID: r.inter, Result: cr, ConversationID: res.ConversationID}
	if res.HasUsage {
		u := Usage(res.Usage)
		cost := res.TotalCostUSD
		ev.Usage, ev.TotalCostUSD = &u, &cost
	}
	relayType := "relay.run_completed"
	switch res.Status {
	case executor.StatusCompleted:
		ev.Event = EventRunCompleted
	case executor.StatusCancelled:
		ev.Event, relayType = EventRunCancelled, "relay.run_cancelled"
	default:
		ev.Event, relayType = EventRunFailed, "relay.run_failed"
		ev.Reason = res.Reason
		if ev.Reason == "" && err != nil {
			ev.Reason = err.Error()
		}
	}
	data := map[string]any{"run_id": r.id, "status": string(res.Status), "result": cr, "conversation_id": res.ConversationID}
	if ev.Usage != nil {
		data["usage"], data["total_cost_usd"] = ev.Usage, *ev.TotalCostUSD
	}
	if ev.Reason != "" {
		data["reason"] = ev.Reason
	}
	r.forward(relayType, "relay", data)
	if res.ConversationID != "" && s.opts.State != nil {
		if err := s.opts.State.Set(req.Cwd, res.ConversationID); err != nil {
			s.log.Warn("cannot remember the last conversation", "err", err)
		}
	}
	s.mu.Lock()
	delete(s.runs, r.id)
	s.emit(ev)
	if len(s.runs) == 0 {
		s.emit(Event{Event: EventState, State: StateIdle})
	}
	s.mu.Unlock()
	if r.exitAfter && res.Status != executor.StatusCancelled {
		s.emit(Event{Event: EventAutoShutdown, RunID: r.id, Reason: "exit_on_complete"})
		s.requestShutdown("exit_on_complete")
	}
}

// forward enqueues a relay event; a failure becomes an error event.
func (r *run) forward(typ, source string, data any) bool {
	b, err := json.Marshal(data)
	if err != nil {
		r.s.emitError("", CodeInternal, "encode "+typ+": "+err.Error())
		return false
	}
	return r.enqueue(typ, source, b)
}

func (r *run) enqueue(typ, source string, data []byte) bool {
	return r.enqueueEvent(forwarder.Event{SessionID: r.session, InteractionID: r.inter, Type: typ, Data: data, Source: source})
}

func (r *run) enqueueEvent(ev forwarder.Event) bool {
	_, err := r.s.opts.Forwarder.Enqueue(ev)
	if err == nil {
		return true
	}
	code := CodeSpool
	if errors.Is(err, forwarder.ErrSpoolFull) {
		code = CodeSpoolFull
	}
	r.s.emit(Event{Event: EventError, Code: code, RunID: r.id, SessionID: r.session, Message: "event not spooled: " + err.Error()})
	return false
}

// Event implements executor.Observer: every CLI line goes to the spool
// first, and to the extension only once it is safe there.
func (r *run) Event(e executor.Event) {
	switch e.Kind {
	case executor.EventLine:
		typ := e.Message.Type
		if typ == "" {
			typ = "unknown"
		}
		// Decoded: streamjson already parsed the line as a JSON object.
		if r.enqueueEvent(forwarder.Event{SessionID: r.session, InteractionID: r.inter, Type: typ, Data: e.Line, Source: "agent", Decoded: true}) {
			r.s.emit(Event{Event: EventStream, RunID: r.id, SessionID: r.session, Payload: e.Line})
		}
	case executor.EventMalformed:
		text := string(e.Line)
		if len(text) > 4096 {
			text = text[:4096] + "…"
		}
		r.forward("relay.malformed_line", "relay", map[string]any{"run_id": r.id, "raw": text, "error": e.Err.Error(), "bytes": len(e.Line)})
		r.s.emit(Event{Event: EventError, Code: "malformed_output", RunID: r.id, SessionID: r.session,
			Message: "the CLI wrote a line that is not JSON: " + strings.ToValidUTF8(text, "?")})
	case executor.EventStderr:
		r.forward("relay.stderr", "relay", map[string]any{"run_id": r.id, "line": e.Text})
	case executor.EventLimitNotice:
		r.forward("relay.limit_notice", "relay", map[string]any{"run_id": r.id, "message": e.Text})
		r.s.emit(Event{Event: EventLimitNotice, RunID: r.id, SessionID: r.session, Message: e.Text})
	}
}

// Approve implements executor.Approver over approval_requested / approve.
func (r *run) Approve(ctx context.Context, req executor.ApprovalRequest) (executor.Decision, error) {
	ch := make(chan executor.Decision, 1)
	r.mu.Lock()
	r.pending[req.ApprovalID] = ch
	r.mu.Unlock()
	r.s.emit(Event{Event: EventApprovalRequested, RunID: r.id, SessionID: r.session, ApprovalID: req.ApprovalID,
		ToolName: req.ToolName, Input: req.Input, ToolUseID: req.ToolUseID, Title: tooltitle.Full(req.ToolName, req.Input),
		Message: req.Description})
	select {
	case d := <-ch:
		return d, nil
	case <-ctx.Done():
		r.mu.Lock()
		delete(r.pending, req.ApprovalID)
		r.mu.Unlock()
		reason := "cancelled"
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			reason = "timed out: denied"
		}
		r.s.emit(Event{Event: EventApprovalCancelled, RunID: r.id, SessionID: r.session, ApprovalID: req.ApprovalID, Reason: reason})
		return executor.Decision{}, ctx.Err()
	}
}
