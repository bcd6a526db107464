package extension

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/host"
	"github.com/claude-relay/claude-relay/internal/ndjson"
	"github.com/claude-relay/claude-relay/internal/relay"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// Options configure a Server.
type Options struct {
	// Host runs the runs and carries their events; Serve starts it and
	// closes it when it stops.
	Host         *host.Host
	Version      string
	CLIPath      string
	CLIVersion   string
	CLIError     string // why no CLI was found
	BackendURL   string
	DashboardURL string
	MaxLine      int // longest command line (1 MiB)
	// Terminal builds the terminal_command for a terminal action.
	Terminal func(cmd Command) (argv []string, cwd string, env map[string]string, err error)
	Logger   *slog.Logger
}

// Server serves one extension connection.
type Server struct {
	opts Options
	log  *slog.Logger

	wmu     sync.Mutex // one writer: lines never interleave
	w       *bufio.Writer
	serving bool    // the ready event is out: forwarder errors go straight out
	early   []Event // forwarder errors reported before that

	core     *relay.Core
	mu       sync.Mutex
	exitWith map[string]bool // runs with exit_on_complete
	shutdown chan string     // a reason: shutdown command, EOF, auto_shutdown, signal
}

// New returns a Server.
func New(opts Options) *Server {
	if opts.MaxLine <= 0 {
		opts.MaxLine = 1 << 20
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{opts: opts, log: opts.Logger, core: opts.Host.Core(), exitWith: map[string]bool{}, shutdown: make(chan string, 4)}
}

// Serve reads commands from in and writes events to out until a shutdown
// command, EOF on in, or a signal on signals. It closes the host (live runs
// cancelled, the forwarder drained), writes the shutdown event last and returns.
// A second signal returns ErrForced at once.
func (s *Server) Serve(in io.Reader, out io.Writer, signals <-chan os.Signal) error {
	s.w = bufio.NewWriterSize(out, 64<<10)
	s.emit(Event{Event: EventReady, Version: s.opts.Version, Protocol: ProtocolVersion, PID: os.Getpid(),
		CLIPath: s.opts.CLIPath, CLIVersion: s.opts.CLIVersion, CLIError: s.opts.CLIError,
		Backend: s.opts.BackendURL, Dashboard: s.opts.DashboardURL})
	s.emitEarly()
	// Delivery problems from here on, what the spool held at start among
	// them, are the extension's to show.
	s.opts.Host.Start(s.ReportForwarderError)
	// The reader goroutine ends at EOF; a blocked read of a terminal stdin
	// cannot be interrupted, so on shutdown we return without waiting for it.
	go s.readCommands(in)

	var reason string
	stop := relay.StopClosed
	select {
	case reason = <-s.shutdown:
	case sig := <-signals:
		reason = "signal " + sig.String()
		stop.Why = "the helper was stopped (" + reason + ")"
		s.emit(Event{Event: EventSignal, Signal: sig.String()})
	}
	done := make(chan error, 1)
	go func() { done <- s.stop(reason, stop) }()
	select {
	case err := <-done:
		return err
	case sig := <-signals:
		s.emit(Event{Event: EventSignal, Signal: sig.String(), Message: "second signal: exiting now"})
		return ErrForced
	}
}

// ErrForced reports a second signal during shutdown.
var ErrForced = errors.New("forced exit on a second signal")

// stop closes the host (runs cancelled, their final events spooled, the
// forwarder drained) and writes the shutdown event.
func (s *Server) stop(reason string, why relay.Stop) error {
	closed := s.opts.Host.Close(why)
	s.emit(ShutdownEvent(reason, closed.Err, closed.Stats))
	if errors.Is(closed.Err, forwarder.ErrUndelivered) {
		return nil // said in the event; the spool keeps them
	}
	return closed.Err
}

func (s *Server) readCommands(in io.Reader) {
	lr := ndjson.NewReader(in, s.opts.MaxLine)
	for {
		line, err := lr.Next()
		if line == nil && err != nil {
			if !errors.Is(err, io.EOF) {
				s.log.Warn("reading commands failed", "err", err)
			}
			s.requestShutdown("stdin closed")
			return
		}
		if err != nil {
			s.emitError("", CodeLineTooLong, fmt.Sprintf("command line over %d bytes ignored (its request_id is unread); "+
				`send long text or big files as content blocks that name a path, such as {"type":"file","path":"…"}, which the helper reads from disk`, s.opts.MaxLine))
			continue
		}
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		s.handleLine(line)
	}
}

func (s *Server) requestShutdown(reason string) {
	select {
	case s.shutdown <- reason:
	default:
	}
}

// handleLine decodes and dispatches one command; nothing it does can panic
// the helper out of serving.
func (s *Server) handleLine(line []byte) {
	var cmd Command
	if err := json.Unmarshal(line, &cmd); err != nil {
		s.emitError(requestIDOf(line), CodeBadJSON, "bad JSON: "+err.Error())
		return
	}
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("command handler panicked", "action", cmd.Action, "panic", p)
			s.emitError(cmd.RequestID, CodeInternal, fmt.Sprintf("internal error handling %q", cmd.Action))
		}
	}()
	switch cmd.Action {
	case ActionPrompt:
		s.prompt(cmd)
	case ActionCancel:
		s.cancel(cmd)
	case ActionApprove:
		s.approve(cmd)
	case ActionStatus:
		s.status(cmd)
	case ActionTerminal:
		s.terminal(cmd)
	case ActionShutdown:
		s.requestShutdown("shutdown requested")
	case ActionSend, ActionInterrupt, ActionSetMode, ActionSetModel, ActionEnd:
		s.live(cmd)
	case "":
		s.emitError(cmd.RequestID, CodeMissingField, "missing field: action")
	default:
		s.emitError(cmd.RequestID, CodeUnknownAction, fmt.Sprintf("unknown action %q (known: prompt, send, interrupt, set_mode, set_model, end, cancel, approve, status, terminal, shutdown)", cmd.Action))
	}
}

// requestIDOf digs a request_id out of a line that is not valid JSON as a
// whole, so the error can still be matched to its request.
func requestIDOf(line []byte) string {
	var v struct {
		RequestID string `json:"request_id"`
	}
	if json.Unmarshal(line, &v) == nil {
		return v.RequestID
	}
	i := strings.Index(string(line), `"request_id"`)
	if i < 0 {
		return ""
	}
	rest := strings.TrimLeft(string(line[i+len(`"request_id"`):]), " \t:")
	if !strings.HasPrefix(rest, `"`) {
		return ""
	}
	// Find the closing quote, skipping escaped ones, and let JSON unquote it.
	for j := 1; j < len(rest) && j <= 201; j++ { // request IDs over 200 bytes are not echoed
		switch rest[j] {
		case '\\':
			j++
		case '"':
			var id string
			if json.Unmarshal([]byte(rest[:j+1]), &id) == nil {
				return id
			}
			return ""
		}
	}
	return ""
}

func (s *Server) status(cmd Command) {
	live := s.core.Runs()
	runs := make([]RunInfo, 0, len(live))
	for _, r := range live {
		runs = append(runs, RunInfo{RunID: r.RunID, SessionID: r.SessionID, InteractionID: r.InteractionID,
			StartedAt: r.StartedAt, Approvals: r.PendingApprovals})
	}
	s.emit(Event{Event: EventStatus, RequestID: cmd.RequestID, Runs: runs, State: stateOf(len(runs)),
		Forwarder: forwarderInfo(s.opts.Host.Stats())})
}

func stateOf(n int) string {
	if n > 0 {
		return StateRunning
	}
	return StateIdle
}

func forwarderInfo(st forwarder.Stats) *ForwarderInfo {
	return &ForwarderInfo{Pending: max(st.Pending, 0), InFlight: st.InFlight, Delivered: st.Delivered, Retried: st.Retried,
		DeadLettered: st.DeadLettered, SpoolBytes: st.SpoolBytes, LastError: st.LastError}
}

func (s *Server) cancel(cmd Command) {
	if err := s.core.Cancel(cmd.RunID, relay.Stop{By: wire.ByExtension, Why: "cancelled from the editor"}); err != nil {
		s.emitError(cmd.RequestID, CodeUnknownRun, fmt.Sprintf("no live run %q", cmd.RunID))
	}
}

func (s *Server) approve(cmd Command) {
	if cmd.ApprovalID == "" {
		s.emitError(cmd.RequestID, CodeMissingField, "missing field: approval_id")
		return
	}
	if cmd.Decision == "" {
		s.emitError(cmd.RequestID, CodeMissingField, "missing field: decision (one of the approval's options, e.g. allow or deny)")
		return
	}
	if !slices.Contains(wire.Decisions, cmd.Decision) {
		s.emitError(cmd.RequestID, CodeBadValue, fmt.Sprintf("decision %q (allowed: %s; each approval_requested lists its options)",
			cmd.Decision, wire.JoinDecisions(wire.Decisions)))
		return
	}
	err := s.core.Answer(cmd.RunID, cmd.ApprovalID, relay.Reply{Decision: cmd.Decision, Reason: cmd.Reason,
		UpdatedInput: cmd.UpdatedInput, Answers: cmd.Answers, Interrupt: cmd.Interrupt, By: wire.ByExtension})
	switch {
	case errors.Is(err, relay.ErrDashboardOnly):
		s.emitError(cmd.RequestID, CodePolicyDenied, err.Error())
	case errors.Is(err, relay.ErrBadReply):
		s.emitError(cmd.RequestID, CodeBadValue, err.Error())
	case err != nil:
		s.emitError(cmd.RequestID, CodeUnknownApprove, err.Error())
	}
}

func (s *Server) terminal(cmd Command) {
	if s.opts.Terminal == nil {
		s.emitError(cmd.RequestID, CodeInternal, "visible-terminal runs are not available")
		return
	}
	if cmd.Prompt == nil {
		s.emitError(cmd.RequestID, CodeMissingField, "missing field: prompt")
		return
	}
	// The defaults every run gets (relay.Frame); the terminal makes its own
	// run ID when it starts.
	f := s.core.Frame(relay.Frame{SessionID: cmd.SessionID, InteractionID: cmd.InteractionID, Cwd: cmd.Options.Cwd})
	cmd.SessionID, cmd.InteractionID, cmd.Options.Cwd = f.SessionID, f.InteractionID, f.Cwd
	if cmd.Options.ResumeLastSession && cmd.Options.Resume == "" {
		cmd.Options.Resume = s.core.LastConversation(cmd.Options.Cwd)
	}
	argv, cwd, env, err := s.opts.Terminal(cmd)
	if err != nil {
		s.emitError(cmd.RequestID, CodeBadValue, err.Error())
		return
	}
	s.emit(Event{Event: EventTerminalCommand, RequestID: cmd.RequestID, SessionID: cmd.SessionID,
		InteractionID: cmd.InteractionID, Argv: argv, Cwd: cwd, Env: env})
}

// ReportForwarderError turns a forwarder problem into an error event. One
// reported before Serve (what the forwarder found in the spool at start)
// waits for Serve and follows the ready event.
func (s *Server) ReportForwarderError(e forwarder.Error) {
	ev := ForwarderErrorEvent(e)
	s.wmu.Lock()
	if !s.serving {
		s.early = append(s.early, ev)
		s.wmu.Unlock()
		return
	}
	s.wmu.Unlock()
	s.emit(ev)
}

// ForwarderErrorEvent is the error event for a forwarder problem.
func ForwarderErrorEvent(e forwarder.Error) Event {
	return Event{Event: EventError, Code: forwarderCode(e.Code), SessionID: e.SessionID, Message: e.Message}
}

// forwarderCode maps a forwarder error code to the protocol's.
func forwarderCode(c forwarder.ErrorCode) string {
	switch c {
	case forwarder.CodeAuth:
		return CodeAuth
	case forwarder.CodeDeadLetter:
		return CodeDeadLetter
	case forwarder.CodeNotBackend:
		return CodeNotBackend
	default: // corrupt_spool, delivery and any later code: a spool problem
		return CodeSpool
	}
}

// emitEarly writes the forwarder errors reported before Serve, in order;
// ones reported meanwhile join the queue until it is empty, so none
// overtakes an older one.
func (s *Server) emitEarly() {
	for {
		s.wmu.Lock()
		early := s.early
		s.early = nil
		if len(early) == 0 {
			s.serving = true
			s.wmu.Unlock()
			return
		}
		s.wmu.Unlock()
		for _, ev := range early {
			s.emit(ev)
		}
	}
}

func (s *Server) emitError(requestID, code, msg string) {
	s.emit(Event{Event: EventError, RequestID: requestID, Code: code, Message: msg})
}

// emit writes one event line; the single writer keeps lines whole. HTML
// escaping is off so that a stream payload (the CLI's compact line) goes out
// byte for byte, "<" and all.
func (s *Server) emit(ev Event) {
	ev.Timestamp = time.Now().UTC()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev); err != nil { // Encode ends the line
		s.log.Error("cannot encode event", "event", ev.Event, "err", err)
		return
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.w == nil {
		return
	}
	s.w.Write(buf.Bytes())
	if err := s.w.Flush(); err != nil {
		s.log.Debug("extension stdout closed", "err", err)
	}
	if ev.Event == EventShutdown {
		s.w = nil // the last line: nothing is written after it
	}
}
