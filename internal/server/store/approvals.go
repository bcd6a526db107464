package store

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/claude-relay/claude-relay/internal/wire"
)

// Event types of approvals (CONTRACT §10).
const (
	EventApprovalRequested = wire.TypeApprovalRequested
	EventApprovalResolved  = wire.TypeApprovalResolved
)

// Who resolved an approval whose run ended while it was pending.
const (
	ByRunEnd     = string(wire.ByCancelled)
	ReasonRunEnd = "the run ended"
)

// How an approval was closed (ApprovalRecord.Closure). An explicit
// relay.approval_resolved outranks the end of the run: a helper's answer
// that arrives after its run's end event still says what happened.
const (
	ClosedByRun   = 1
	ClosedByEvent = 2
)

// approvalFacts reads approval requests and resolutions, and the run_id of
// relay lifecycle events. Requests and resolutions without an approval_id
// are ignored.
func approvalFacts(f *Facts, ev Event, obj map[string]json.RawMessage) {
	switch ev.EventType {
	case EventApprovalRequested:
		var req wire.ApprovalRequested
		if json.Unmarshal(ev.EventData, &req) == nil && req.ApprovalID != "" {
			req.ApprovalID, req.RunID = clean(req.ApprovalID), clean(req.RunID)
			f.ApprovalRequest = &req
		}
	case EventApprovalResolved:
		var res wire.ApprovalResolved
		if json.Unmarshal(ev.EventData, &res) == nil && res.ApprovalID != "" {
			res.ApprovalID, res.RunID = clean(res.ApprovalID), clean(res.RunID)
			f.ApprovalResolve = &res
		}
	}
	if f.Lifecycle != "" {
		f.RunID = clean(jsonString(obj["run_id"]))
	}
}

// RunEnd reports the run_id whose end the event is (relay.run_completed,
// run_failed or run_cancelled), "" when it is none.
func (f Facts) RunEnd() string {
	if f.Lifecycle == "" || f.Lifecycle == StatusRunning {
		return ""
	}
	return f.RunID
}

// ApprovalRecord is an approval as its events make it (Approval without
// Remote, which only Decide sets). What defines it is decided by arrival
// order at this backend, never by a field the client sets (the envelope
// timestamp is the poster's word, and any ingest token can post):
//
//   - the request: the first relay.approval_requested to arrive gives the
//     approval's fields for good; a later one with another event_id is
//     ignored (Request reports it as a conflict, which ingest logs), so a
//     second request cannot rewrite what the approver sees;
//   - the outcome: the first relay.approval_resolved to arrive, whatever
//     arrived before it; else the first end of its run (By "cancelled",
//     Reason "the run ended", at that event's timestamp) when it ended
//     with the approval pending. A resolution may arrive before its
//     request: the approval then stays resolved when the request comes.
type ApprovalRecord struct {
	Approval
	Requested    bool   // a relay.approval_requested was seen
	RequestEvent string // the event_id of the request that gave the fields
	Closure      int    // ClosedByRun or ClosedByEvent; 0 while pending
	ClosureEvent string // the event_id of the closing event
}

// NewApprovalRecord returns the pending record of an approval not seen before.
func NewApprovalRecord(id, sessionID string) ApprovalRecord {
	return ApprovalRecord{Approval: Approval{ApprovalID: id, SessionID: sessionID,
		State: ApprovalPending, Options: []string{}}}
}

// Request folds a relay.approval_requested in and reports whether the
// record changed. A record that already has its request keeps it; conflict
// reports whether the ignored request differs from the kept one's event.
func (r *ApprovalRecord) Request(ev Event, req *wire.ApprovalRequested) (changed, conflict bool) {
	if r.Requested {
		return false, ev.EventID != r.RequestEvent
	}
	r.Requested, r.RequestEvent = true, ev.EventID
	r.RunID, r.ToolName, r.Title, r.Kind = req.RunID, clean(req.ToolName), clean(req.Title), clean(string(req.Kind))
	r.Input = append(json.RawMessage(nil), req.Input...)
	r.Options = make([]string, len(req.Options))
	for i, o := range req.Options {
		r.Options[i] = clean(string(o))
	}
	r.Approver, r.PolicyRule, r.PolicyReason = clean(req.Approver), clean(req.PolicyRule), clean(req.PolicyReason)
	r.RequestedAt = ev.Timestamp.UTC()
	return true, false
}

// Resolve folds a relay.approval_resolved in and reports whether the
// record changed: the first resolution to arrive stands.
func (r *ApprovalRecord) Resolve(ev Event, res *wire.ApprovalResolved) bool {
	if r.Closure == ClosedByEvent {
		return false
	}
	if !r.Requested {
		r.RunID = res.RunID
	}
	r.close(ClosedByEvent, ev.Timestamp, ev.EventID, clean(string(res.Decision)), clean(string(res.By)), clean(res.Reason))
	return true
}

// RunEnded folds the end of the approval's run in (the end event's
// timestamp and event_id) and reports whether the record changed.
func (r *ApprovalRecord) RunEnded(at time.Time, eventID string) bool {
	if r.Closure != 0 {
		return false
	}
	r.close(ClosedByRun, at, eventID, "", ByRunEnd, ReasonRunEnd)
	return true
}

func (r *ApprovalRecord) close(how int, at time.Time, eventID, decision, by, reason string) {
	t := at.UTC()
	r.Closure, r.ClosureEvent, r.State = how, eventID, ApprovalResolved
	r.Decision, r.By, r.Reason, r.ResolvedAt = decision, by, reason, &t
}

// RunEndRef is the first end event of a run to arrive.
type RunEndRef struct {
	At      time.Time
	EventID string
}

// ApprovalFold applies one session's new events to its approvals. Records
// holds the approvals the events name and those of runs that end in them
// (as stored, or new); Ended the stored ends of the runs of those
// approvals. Apply returns the IDs of the records that changed, and the
// runs whose end is new or earlier.
type ApprovalFold struct {
	SessionID string
	Records   map[string]*ApprovalRecord
	Ended     map[string]RunEndRef
	// Conflicts collects, by event_id, the approval whose request the
	// event tried to define again (ignored; ingest logs it).
	Conflicts map[string]string
}

// ApprovalRefs lists what folding events (their facts) must load: the
// approvals they name, the runs they end (whose pending approvals they
// close) and the runs of the approvals they request (a stored end of which
// closes them).
func ApprovalRefs(facts []Facts) (approvalIDs, endedRuns, requestRuns []string) {
	seenA, seenE, seenR := map[string]bool{}, map[string]bool{}, map[string]bool{}
	add := func(list *[]string, seen map[string]bool, id string) {
		if id != "" && !seen[id] {
			seen[id] = true
			*list = append(*list, id)
		}
	}
	for _, f := range facts {
		if f.ApprovalRequest != nil {
			add(&approvalIDs, seenA, f.ApprovalRequest.ApprovalID)
			add(&requestRuns, seenR, f.ApprovalRequest.RunID)
		}
		if f.ApprovalResolve != nil {
			add(&approvalIDs, seenA, f.ApprovalResolve.ApprovalID)
		}
		add(&endedRuns, seenE, f.RunEnd())
	}
	return approvalIDs, endedRuns, requestRuns
}

func (a *ApprovalFold) conflict(eventID, approvalID string) {
	if a.Conflicts == nil {
		a.Conflicts = map[string]string{}
	}
	a.Conflicts[eventID] = approvalID
}

// Apply folds events (with their facts) in.
func (a *ApprovalFold) Apply(events []Event, facts []Facts) (changed []string, newEnds map[string]RunEndRef) {
	dirty := map[string]bool{}
	newEnds = map[string]RunEndRef{}
	record := func(id string) *ApprovalRecord {
		r := a.Records[id]
		if r == nil {
			nr := NewApprovalRecord(id, a.SessionID)
			r = &nr
			a.Records[id] = r
		}
		return r
	}
	for i, ev := range events {
		f := facts[i]
		if req := f.ApprovalRequest; req != nil {
			r := record(req.ApprovalID)
			if r.SessionID != a.SessionID {
				a.conflict(ev.EventID, req.ApprovalID)
				continue
			}
			changed, conflict := r.Request(ev, req)
			if changed {
				dirty[req.ApprovalID] = true
			}
			if conflict {
				a.conflict(ev.EventID, req.ApprovalID)
			}
		}
		if res := f.ApprovalResolve; res != nil {
			if r := record(res.ApprovalID); r.SessionID == a.SessionID && r.Resolve(ev, res) {
				dirty[res.ApprovalID] = true
			}
		}
		if run := f.RunEnd(); run != "" {
			end := RunEndRef{At: ev.Timestamp.UTC(), EventID: ev.EventID}
			if _, seen := a.Ended[run]; !seen {
				if a.Ended == nil {
					a.Ended = map[string]RunEndRef{}
				}
				a.Ended[run], newEnds[run] = end, end
			}
		}
	}
	// Ends last: whichever order the request and the end of its run arrived
	// in, a pending approval of an ended run is closed.
	for id, r := range a.Records {
		if end, ok := a.Ended[r.RunID]; ok && r.RunID != "" && r.SessionID == a.SessionID && r.RunEnded(end.At, end.EventID) {
			dirty[id] = true
		}
	}
	for id := range dirty {
		changed = append(changed, id)
	}
	sort.Strings(changed)
	return changed, newEnds
}

// CheckDecision rejects a decision no store can keep: without a
// decision_id (it makes repeats idempotent) or a decision, with text that
// is not UTF-8 without NUL, or JSON fields that are not JSON. The error
// wraps ErrInvalid.
func CheckDecision(d Decision) error {
	var reason string
	switch {
	case d.ApprovalID == "":
		reason = "empty approval_id"
	case d.DecisionID == "":
		reason = "empty decision_id"
	case d.Decision == "":
		reason = "empty decision"
	case len(d.UpdatedInput) > 0 && !json.Valid(d.UpdatedInput):
		reason = "updated_input is not JSON"
	case len(d.Answers) > 0 && !json.Valid(d.Answers):
		reason = "answers is not JSON"
	default:
		for _, s := range []string{d.ApprovalID, d.DecisionID, d.Decision, d.Reason, d.By,
			string(d.UpdatedInput), string(d.Answers)} {
			if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
				reason = fmt.Sprintf("%q is not UTF-8 text without NUL", s)
			}
		}
	}
	if reason != "" {
		return fmt.Errorf("%w: decision %q on approval %q: %s", ErrInvalid, d.DecisionID, d.ApprovalID, reason)
	}
	return nil
}

// PrepareDecision is the decision Decide stores: d checked with
// CheckDecision, and stamped now when it has no DecidedAt.
func PrepareDecision(d Decision) (Decision, error) {
	if err := CheckDecision(d); err != nil {
		return Decision{}, err
	}
	if d.DecidedAt.IsZero() {
		d.DecidedAt = time.Now().UTC()
	}
	return d, nil
}

// DecideRefused is Decide's answer when its conditional write changed
// nothing: rec is the approval as stored then (nil when there is none).
// A repeat of the stored decision (same DecisionID) is a success.
func DecideRefused(d Decision, rec *ApprovalRecord) (Approval, error) {
	switch {
	case rec == nil:
		return Approval{}, fmt.Errorf("approval %q: %w", d.ApprovalID, ErrNotFound)
	case rec.Remote != nil && rec.Remote.DecisionID == d.DecisionID:
		return rec.Approval, nil
	case rec.Remote != nil:
		return rec.Approval, fmt.Errorf("approval %q: %w: %s by %s at %s", d.ApprovalID, ErrDecided,
			rec.Remote.Decision, rec.Remote.By, rec.Remote.DecidedAt.Format(time.RFC3339))
	}
	outcome := rec.Decision
	if outcome == "" {
		outcome = "resolved"
	}
	return rec.Approval, fmt.Errorf("approval %q: %w: %s by %s (%s)", d.ApprovalID, ErrDecided,
		outcome, rec.By, rec.Reason)
}

// Decidable reports whether Decide may store a decision on the approval:
// pending, without a remote decision. The SQL stores apply the same
// condition in their conditional UPDATE.
func (r *ApprovalRecord) Decidable() bool {
	return r.State == ApprovalPending && r.Remote == nil
}
