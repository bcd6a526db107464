package extension

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/internal/relay"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// prompt starts a run on the core; this file only translates between the
// protocol and the core.
func (s *Server) prompt(cmd Command) {
	if cmd.Prompt == nil && len(cmd.Options.Content) == 0 && len(cmd.Content) == 0 {
		s.emitError(cmd.RequestID, CodeMissingField, "missing field: prompt")
		return
	}
	var idle time.Duration
	if t := cmd.Options.IdleTimeout; t != "" {
		d, err := time.ParseDuration(t)
		if err != nil || d <= 0 {
			s.emitError(cmd.RequestID, CodeBadValue, fmt.Sprintf("idle_timeout %q: give a positive duration such as 30m or 90s", t))
			return
		}
		idle = d
	}
	var prompt string
	if cmd.Prompt != nil {
		prompt = *cmd.Prompt
	}
	if cmd.RunID == "" {
		cmd.RunID = uuid.NewString()
	}
	o := cmd.Options
	req := relay.Request{RunOptions: o.RunOptions, RequestID: cmd.RequestID, RunID: cmd.RunID, SessionID: cmd.SessionID,
		InteractionID: cmd.InteractionID, Prompt: prompt, ResumeLastSession: o.ResumeLastSession,
		Content: append(slices.Clone(o.Content), cmd.Content...), IdleTimeout: idle}
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

// live handles the commands on a live run: send, interrupt, set_mode,
// set_model, end. Their failures come back as error events naming the
// request.
func (s *Server) live(cmd Command) {
	if cmd.RunID == "" {
		s.emitError(cmd.RequestID, CodeMissingField, "missing field: run_id")
		return
	}
	var err error
	switch cmd.Action {
	case ActionSend:
		prompt := ""
		if cmd.Prompt != nil {
			prompt = *cmd.Prompt
		}
		if prompt == "" && len(cmd.Content) == 0 {
			s.emitError(cmd.RequestID, CodeMissingField, "missing field: prompt (or content)")
			return
		}
		err = s.core.Send(cmd.RequestID, cmd.RunID, cmd.InteractionID, relay.Message{Prompt: prompt, Content: cmd.Content})
	case ActionInterrupt:
		err = s.core.Interrupt(cmd.RequestID, cmd.RunID, wire.ByExtension)
	case ActionSetMode:
		if cmd.PermissionMode == "" {
			s.emitError(cmd.RequestID, CodeMissingField, "missing field: permission_mode")
			return
		}
		err = s.core.SetMode(cmd.RequestID, cmd.RunID, cmd.PermissionMode)
	case ActionSetModel:
		if cmd.Model == nil {
			s.emitError(cmd.RequestID, CodeMissingField, "missing field: model (\"\" for the default model)")
			return
		}
		err = s.core.SetModel(cmd.RequestID, cmd.RunID, *cmd.Model)
	case ActionEnd:
		err = s.core.End(cmd.RequestID, cmd.RunID)
	}
	if err != nil {
		s.emitError(cmd.RequestID, refuseCode(err), err.Error())
	}
}

// refuseCode is the protocol's error code for a refused command.
func refuseCode(err error) string {
	switch {
	case errors.Is(err, relay.ErrUnknownRun):
		return CodeUnknownRun
	case errors.Is(err, relay.ErrNotLive), errors.Is(err, relay.ErrEnded):
		return CodeNotLive
	}
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
	case relay.RefuseBudget:
		return CodeBudgetExhausted
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
