package extension

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/billing"
	"github.com/claude-relay/claude-relay/internal/relay"
	"github.com/claude-relay/claude-relay/internal/streamjson"
)

// EventsOf is the protocol events a run's event becomes, in order: the one
// translation from the run core to the protocol, shared by the server and
// `claude-relay run --json`.
func EventsOf(e relay.Event) []Event {
	ev := Event{RunID: e.RunID, SessionID: e.SessionID}
	switch e.Kind {
	case relay.KindStarted:
		ev.Event, ev.RequestID, ev.InteractionID, ev.Cwd = EventRunStarted, e.RequestID, e.InteractionID, e.Cwd
		if e.Live == 1 {
			return []Event{ev, {Event: EventState, State: StateRunning}}
		}
	case relay.KindStream:
		ev.Event, ev.Payload = EventStream, e.Line
	case relay.KindApprovalRequested:
		a := e.Approval
		ev.Event, ev.ApprovalID, ev.ToolName, ev.Input, ev.ToolUseID, ev.Title, ev.Message =
			EventApprovalRequested, a.ID, a.ToolName, a.Input, a.ToolUseID, a.Title, a.Description
		ev.Kind, ev.Options, ev.Suggestions, ev.Questions = a.Kind, a.Options, a.Suggestions, a.Questions
		if a.Policy != nil {
			ev.Approver, ev.PolicyRule, ev.PolicyReason = a.Policy.Approver, a.Policy.Rule, a.Policy.Reason
		}
	case relay.KindApprovalCancelled:
		ev.Event, ev.ApprovalID, ev.Reason = EventApprovalCancelled, e.Approval.ID, e.Reason
	case relay.KindLimitNotice:
		ev.Event, ev.Message = EventLimitNotice, e.Text
	case relay.KindMalformed:
		ev.Event, ev.Code, ev.Message = EventError, CodeMalformedOutput, "the CLI wrote a line that is not JSON: "+e.Text
	case relay.KindSpoolError:
		ev.Event, ev.Code, ev.Message = EventError, CodeSpool, "event not spooled: "+e.Err.Error()
		if errors.Is(e.Err, forwarder.ErrSpoolFull) {
			ev.Code = CodeSpoolFull
		}
	case relay.KindPartial:
		ev.Event, ev.Payload = EventPartial, e.Line
	case relay.KindTurnCompleted:
		end := e.End
		res := end.Result
		ev.Event, ev.InteractionID, ev.Turn, ev.Result, ev.ConversationID, ev.Usage, ev.TotalCostUSD =
			EventTurnCompleted, e.InteractionID, e.Turn, &res, end.ConversationID, end.Usage, end.TotalCostUSD
		ev.Status, ev.StoppedBy, ev.Reason = end.Status, end.StoppedBy, end.Reason
	case relay.KindSessionInfo:
		return []Event{sessionInfo(ev, e.Info, e.Modes, e.Mode)}
	case relay.KindModeChanged:
		ev.Event, ev.PermissionMode = EventModeChanged, e.Mode
	case relay.KindStalled:
		ev.Event, ev.Reason, ev.Seconds = EventStalled, e.Text, e.Seconds
	case relay.KindError:
		ev.Event, ev.RequestID, ev.Code, ev.Message = EventError, e.RequestID, CodeCLIRefused, e.Err.Error()
	case relay.KindEnded:
		end := e.End
		res := end.Result
		ev.InteractionID, ev.Result, ev.ConversationID, ev.Usage, ev.TotalCostUSD, ev.Reason =
			e.InteractionID, &res, end.ConversationID, end.Usage, end.TotalCostUSD, end.Reason
		switch end.Status {
		case executor.StatusCompleted:
			ev.Event = EventRunCompleted
		case executor.StatusCancelled:
			ev.Event = EventRunCancelled
		default:
			ev.Event = EventRunFailed
		}
		out := []Event{ev}
		if errors.Is(end.Cause, billing.ErrRefused) {
			// Told as an error first, so a client that shows errors but
			// not failed runs' reasons says why nothing ran.
			out = []Event{{Event: EventError, RunID: e.RunID, SessionID: e.SessionID, Code: CodeBillingRefused, Message: end.Reason}, ev}
		}
		if e.Live == 0 {
			return append(out, Event{Event: EventState, State: StateIdle})
		}
		return out
	default:
		return nil
	}
	return []Event{ev}
}

// sessionInfo picks session_info's fields from the CLI's initialize
// response; what the CLI does not send stays out.
func sessionInfo(ev Event, info json.RawMessage, modes []streamjson.PermissionMode, mode string) Event {
	var r map[string]json.RawMessage
	_ = json.Unmarshal(info, &r)
	ev.Event = EventSessionInfo
	ev.Commands, ev.Models, ev.Account = r["commands"], r["models"], r["account"]
	for _, k := range []string{"output_styles", "available_output_styles", "output_style"} {
		if v, ok := r[k]; ok {
			ev.OutputStyles = v
			break
		}
	}
	ev.PermissionModes = modes
	ev.PermissionMode = mode
	return ev
}

// ShutdownEvent is the last event: why, and what the forwarder's drain
// (drainErr, from Forwarder.Stop) left behind.
func ShutdownEvent(reason string, drainErr error, st forwarder.Stats) Event {
	ev := Event{Event: EventShutdown, Reason: reason, Forwarder: forwarderInfo(st)}
	if errors.Is(drainErr, forwarder.ErrUndelivered) {
		ev.Message = "left in the spool for later delivery: " + drainErr.Error()
	} else if drainErr != nil {
		ev.Message = drainErr.Error()
	}
	return ev
}

// Writer writes events as protocol lines: one JSON object per line, never
// interleaved, nothing after the shutdown event.
type Writer struct {
	mu sync.Mutex
	w  *bufio.Writer
}

// NewWriter writes events to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriterSize(w, 64<<10)} }

// Emit stamps ev and writes it. HTML escaping is off so that a stream
// payload (the CLI's compact line) goes out byte for byte, "<" and all.
func (w *Writer) Emit(ev Event) error {
	ev.Timestamp = time.Now().UTC()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev); err != nil { // Encode ends the line
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.w == nil {
		return nil
	}
	w.w.Write(buf.Bytes()) //nolint:errcheck // Flush reports it
	err := w.w.Flush()
	if ev.Event == EventShutdown {
		w.w = nil
	}
	return err
}
