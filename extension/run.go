package extension

import (
	"errors"

	"github.com/google/uuid"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/internal/relay"
)

// prompt starts a run on the core; this file only translates between the
// protocol and the core.
func (s *Server) prompt(cmd Command) {
	if cmd.Prompt == nil {
		s.emitError(cmd.RequestID, CodeMissingField, "missing field: prompt")
		return
	}
	if cmd.RunID == "" {
		cmd.RunID = uuid.NewString()
	}
	o := cmd.Options
	req := relay.Request{RequestID: cmd.RequestID, RunID: cmd.RunID, SessionID: cmd.SessionID, InteractionID: cmd.InteractionID,
		Prompt: *cmd.Prompt, Cwd: o.Cwd, Model: o.Model, PermissionMode: o.PermissionMode, Approvals: o.Approvals,
		Resume: o.Resume, ResumeLastSession: o.ResumeLastSession, Fork: o.Fork, Continue: o.Continue, MaxTurns: o.MaxTurns,
		SystemPromptAppend: o.SystemPromptAppend, Env: o.Env, AdditionalArgs: o.AdditionalArgs}
	if o.ExitOnComplete {
		// Recorded before Start: the run may end before Start returns.
		s.mu.Lock()
		s.exitWith[req.RunID] = true
		s.mu.Unlock()
	}
	if _, err := s.core.Start(req, relay.SinkFunc(s.runEvent)); err != nil {
		s.mu.Lock()
		delete(s.exitWith, req.RunID)
		s.mu.Unlock()
		s.emitError(cmd.RequestID, refuseCode(err), err.Error())
	}
}

// refuseCode is the protocol's error code for a refused prompt.
func refuseCode(err error) string {
	var re *relay.RefusedError
	if !errors.As(err, &re) {
		return CodeInternal
	}
	switch re.Code {
	case relay.RefuseNoCLI:
		return CodeCLINotFound
	case relay.RefuseShuttingDown:
		return CodeShuttingDown
	case relay.RefuseRunExists:
		return CodeRunConflict
	}
	return CodeBadValue
}

// runEvent turns a run's event into protocol events.
func (s *Server) runEvent(e relay.Event) {
	for _, ev := range EventsOf(e) {
		s.emit(ev)
	}
	if e.Kind == relay.KindEnded {
		s.ended(e)
	}
}

// ended shuts down after an exit_on_complete run.
func (s *Server) ended(e relay.Event) {
	s.mu.Lock()
	exit := s.exitWith[e.RunID]
	delete(s.exitWith, e.RunID)
	s.mu.Unlock()
	// An editor may go on after cancelling an exit_on_complete run.
	if exit && e.End.Status != executor.StatusCancelled {
		s.emit(Event{Event: EventAutoShutdown, RunID: e.RunID, Reason: "exit_on_complete"})
		s.requestShutdown("exit_on_complete")
	}
}
