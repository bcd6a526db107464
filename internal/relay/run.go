package relay

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/tooltitle"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// Run is one live background run.
type Run struct {
	c       *Core
	id      string
	session string
	lc      *Lifecycle // its events, interaction and end
	started time.Time
	ctx     context.Context // ends when the run does
	cancel  context.CancelCauseFunc
	sink    Sink
	in      chan executor.Input // the executor's Inputs
	live    *live               // keep_alive runs only
	waiters sync.WaitGroup      // waits for inputs' outcomes
	sendMu  sync.Mutex          // orders a live Send's queueing against CancelTurns

	mu      sync.Mutex
	pending map[string]pendingApproval // approvals by ID
	// inputsClosed is set when the executor returned: input takes nothing
	// more, so waiters.Add never races its Wait.
	inputsClosed bool
}

// pendingApproval waits for its decision.
type pendingApproval struct {
	a  *Approval
	ch chan answer
}

type answer struct {
	d   executor.Decision
	rep Reply
}

func (r *Run) inputs() chan<- executor.Input { return r.in }

// interaction is the interaction events are spooled under now.
func (r *Run) interaction() string { return r.lc.Interaction() }

// ID is the run's ID.
func (r *Run) ID() string { return r.id }

// SessionID is the run's session.
func (r *Run) SessionID() string { return r.session }

func (r *Run) info() RunInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return RunInfo{RunID: r.id, SessionID: r.session, InteractionID: r.lc.Interaction(), StartedAt: r.started, PendingApprovals: len(r.pending)}
}

// answer decides a pending approval; found says whether this run has it. A
// reply that does not fit leaves it pending.
func (r *Run) answer(approvalID string, rep Reply) (found bool, err error) {
	r.mu.Lock()
	p, ok := r.pending[approvalID]
	if !ok {
		r.mu.Unlock()
		return false, nil
	}
	d, err := rep.decision(p.a)
	if err != nil {
		r.mu.Unlock()
		return true, err
	}
	delete(r.pending, approvalID)
	// Settled while the approval is taken: a later reply hears who won.
	r.c.approvalSettled(approvalID, Decided{By: rep.By, ByDetail: rep.ByDetail, Decision: rep.Decision})
	r.mu.Unlock()
	p.ch <- answer{d: d, rep: rep}
	return true, nil
}

func (r *Run) event(e Event) {
	e.RunID, e.SessionID, e.InteractionID = r.id, r.session, r.interaction()
	r.sink.Event(e)
}

// Event implements executor.Observer. This is where every CLI line is
// spooled: a front end sees it (KindStream) only once the spool has it.
func (r *Run) Event(e executor.Event) {
	switch e.Kind {
	case executor.EventLine:
		typ := e.Message.Type
		if typ == "" {
			typ = "unknown"
		}
		if typ == "stream_event" {
			// Token deltas are live only: the complete message that follows
			// is what the backend keeps (CONTRACT §7).
			r.event(Event{Kind: KindPartial, Line: e.Line, Message: e.Message})
			return
		}
		// Decoded: streamjson already parsed the line as a JSON object.
		if r.enqueue(forwarder.Event{SessionID: r.session, InteractionID: r.interaction(), Type: typ, Data: e.Line,
			Source: wire.SourceAgent, Decoded: true}) {
			r.event(Event{Kind: KindStream, Line: e.Line, Message: e.Message})
		}
	case executor.EventTurnCompleted:
		if r.live != nil {
			r.turnCompleted(e)
		}
	case executor.EventTurnStarted:
		if r.live != nil {
			r.turnStarted(e.Interaction)
		}
	case executor.EventTurnDropped:
		if r.live != nil {
			r.turnDropped(e.Interaction)
		}
	case executor.EventPolicyDecision:
		r.forward(wire.TypePolicyDecision, *e.Policy)
		r.event(Event{Kind: KindPolicyDecision, Policy: e.Policy})
	case executor.EventStalled:
		r.event(Event{Kind: KindStalled, Text: e.Text, Seconds: e.Seconds})
	case executor.EventSessionInfo:
		r.event(Event{Kind: KindSessionInfo, Info: e.SessionInfo, Modes: e.Modes, Mode: string(e.Mode)})
	case executor.EventBilling:
		r.billing(e)
	case executor.EventModeChanged:
		r.forward(wire.TypeModeChanged, wire.ModeChanged{RunID: r.id, PermissionMode: string(e.Mode)})
		r.event(Event{Kind: KindModeChanged, Mode: string(e.Mode)})
	case executor.EventMalformed:
		text := string(e.Line)
		if len(text) > 4096 {
			text = text[:4096] + "…"
		}
		r.forward(wire.TypeMalformedLine, wire.MalformedLine{RunID: r.id, Raw: text, Error: e.Err.Error(), Bytes: len(e.Line)})
		r.event(Event{Kind: KindMalformed, Text: strings.ToValidUTF8(text, "?")})
	case executor.EventStderr:
		r.forward(wire.TypeStderr, wire.Stderr{RunID: r.id, Line: e.Text})
	case executor.EventLimitNotice:
		r.forward(wire.TypeLimitNotice, wire.LimitNotice{RunID: r.id, Message: e.Text})
		r.event(Event{Kind: KindLimitNotice, Text: e.Text})
	}
}

// Approve implements executor.Approver: the sink gets the request, and
// Core.Answer (or the executor's timeout) decides it.
func (r *Run) Approve(ctx context.Context, req executor.ApprovalRequest) (executor.Decision, error) {
	ch := make(chan answer, 1)
	a := approvalOf(req)
	// Spooled first, like every event: the backend knows what is pending
	// before anyone (the dashboard among them) can decide it.
	r.forward(wire.TypeApprovalRequested, wire.ApprovalRequested{RunID: r.id, ApprovalID: a.ID, Kind: a.Kind,
		ToolName: a.ToolName, Title: a.Title, Input: a.Input, ToolUseID: a.ToolUseID, Options: a.Options,
		Suggestions: a.Suggestions, Approver: a.approver(), PolicyRule: a.policyRule(), PolicyReason: a.policyReason()})
	r.mu.Lock()
	r.pending[req.ApprovalID] = pendingApproval{a: a, ch: ch}
	r.c.approvalAsked(r.id, req.ApprovalID)
	r.mu.Unlock()
	r.event(Event{Kind: KindApprovalRequested, Approval: a})
	select {
	case ans := <-ch:
		return r.resolved(a, ans), nil
	case <-ctx.Done():
		by, reason, interrupt := wire.ByCancelled, "cancelled", false
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			by, reason, interrupt = wire.ByTimeout, "timed out: denied and the turn stopped", true
		}
		d := Decided{By: by, Decision: wire.DecisionDeny}
		r.mu.Lock()
		_, still := r.pending[req.ApprovalID]
		if still {
			delete(r.pending, req.ApprovalID)
			r.c.approvalSettled(req.ApprovalID, d)
		}
		r.mu.Unlock()
		if !still {
			// An answer took it first (it is on its way): it wins.
			return r.resolved(a, <-ch), nil
		}
		r.forward(wire.TypeApprovalResolved, wire.ApprovalResolved{RunID: r.id, ApprovalID: a.ID, Decision: wire.DecisionDeny,
			By: by, Reason: reason, Interrupt: interrupt})
		r.event(Event{Kind: KindApprovalCancelled, Approval: a, Reason: reason, Decided: &d})
		return executor.Decision{}, ctx.Err()
	}
}

// resolved records an answered approval for the backend and, when the
// answer came from the dashboard, tells the front end, whose own question
// about it is now moot.
func (r *Run) resolved(a *Approval, ans answer) executor.Decision {
	rep := ans.rep
	r.forward(wire.TypeApprovalResolved, wire.ApprovalResolved{RunID: r.id, ApprovalID: a.ID, Decision: rep.Decision,
		By: rep.By, DecidedBy: rep.ByDetail, DecisionID: rep.DecisionID, Reason: rep.Reason, UpdatedInput: ans.d.UpdatedInput,
		Answers: rep.Answers, Interrupt: ans.d.Interrupt})
	if rep.By == wire.ByDashboard {
		d := Decided{By: rep.By, ByDetail: rep.ByDetail, Decision: rep.Decision}
		r.event(Event{Kind: KindApprovalCancelled, Approval: a, Reason: d.String(), Decided: &d})
	}
	return ans.d
}

// approvalOf describes a request for people: its kind, what will run in
// full, and what the decision may be.
func approvalOf(req executor.ApprovalRequest) *Approval {
	a := &Approval{ID: req.ApprovalID, Kind: wire.ApprovalTool, ToolName: req.ToolName, Input: req.Input,
		ToolUseID: req.ToolUseID, Title: tooltitle.Full(req.ToolName, req.Input), Description: req.Description,
		Suggestions: req.Suggestions, Policy: req.Policy}
	switch req.ToolName {
	case "ExitPlanMode":
		a.Kind = wire.ApprovalPlan
	case "AskUserQuestion":
		a.Kind = wire.ApprovalQuestion
		var in struct {
			Questions json.RawMessage `json:"questions"`
		}
		if json.Unmarshal(req.Input, &in) == nil {
			a.Questions = in.Questions
		}
	}
	a.Options = optionsFor(a.Kind)
	return a
}

// finish spools the run's end, remembers its conversation and tells the
// sink.
func (r *Run) finish(res *executor.Result, err error) {
	end := endOf(res, err)
	r.spooled(r.lc.Ended(wire.RunEnded{Status: res.Status, Result: end.Result, ConversationID: end.ConversationID,
		Usage: end.Usage, TotalCostUSD: end.TotalCostUSD, Reason: end.Reason}))
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.runs, r.id)
	r.sink.Event(Event{Kind: KindEnded, RunID: r.id, SessionID: r.session, InteractionID: r.interaction(), End: end, Live: len(c.runs)})
}

// forward spools one of the relay's own events; a failure is a
// KindSpoolError.
func (r *Run) forward(typ string, data any) bool {
	return r.spooled(r.lc.Post(r.interaction(), typ, data))
}

func (r *Run) enqueue(ev forwarder.Event) bool { return r.spooled(r.lc.Enqueue(ev)) }

// spooled reports a spool failure as a KindSpoolError.
func (r *Run) spooled(err error) bool {
	if err != nil {
		r.event(Event{Kind: KindSpoolError, Err: err})
		return false
	}
	return true
}
