package backend

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/tokens"
	relaywire "github.com/claude-relay/claude-relay/internal/wire"
)

// Limits of the approvals API.
const (
	defaultApprovalsLimit = 100
	maxApprovalsLimit     = 500
	maxApprovalID         = 200     // bytes; the helper's are UUIDs
	maxReason             = 8 << 10 // bytes of a decision's reason
)

// Approval filters of ?state=.
const (
	stateAll = "all"
)

type whoamiResponse struct {
	Name   string         `json:"name"`
	Scopes []tokens.Scope `json:"scopes"` // effective: approve brings read, admin everything
	By     string         `json:"by"`     // what a decision by this caller records
}

type approvalsResponse struct {
	Approvals []store.Approval `json:"approvals"`
}

type approvalResponse struct {
	Approval store.Approval `json:"approval"`
}

// decidedResponse is a 409: who decided first and what, and the approval.
type decidedResponse struct {
	Error    string         `json:"error"`
	Approval store.Approval `json:"approval"`
}

// handleWhoami is GET /api/whoami: the caller's token name and scopes, so
// the dashboard shows them and hides what it may not use.
func (s *Server) handleWhoami(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r)
	writeJSON(w, http.StatusOK, whoamiResponse{Name: p.name, Scopes: p.scopes.List(), By: p.by()})
}

// handleApprovals is GET /api/approvals?state=pending|resolved|all&session_id=&limit=,
// newest request first. state defaults to pending: what waits is what
// people and scripts ask about.
func (s *Server) handleApprovals(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := store.ApprovalFilter{State: store.ApprovalPending, SessionID: q.Get("session_id")}
	switch st := q.Get("state"); st {
	case "", store.ApprovalPending:
	case store.ApprovalResolved:
		f.State = st
	case stateAll:
		f.State = ""
	default:
		writeError(w, http.StatusBadRequest, "state must be pending, resolved or all, got "+strconv.Quote(clip(st)))
		return
	}
	limit, ok := intParam(w, r, "limit", defaultApprovalsLimit, 1, maxApprovalsLimit)
	if !ok {
		return
	}
	f.Limit = limit
	list, err := s.store.Approvals(r.Context(), f)
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	if list == nil {
		list = []store.Approval{}
	}
	for i := range list {
		list[i] = shown(list[i])
	}
	writeJSON(w, http.StatusOK, approvalsResponse{Approvals: list})
}

// handleApproval is GET /api/approvals/{id}.
func (s *Server) handleApproval(w http.ResponseWriter, r *http.Request) {
	a, ok := s.loadApproval(w, r)
	if ok {
		writeJSON(w, http.StatusOK, a)
	}
}

// loadApproval reads the path's approval; on a problem it has answered
// (404 unknown, 400 a malformed ID) and ok is false.
func (s *Server) loadApproval(w http.ResponseWriter, r *http.Request) (store.Approval, bool) {
	id := r.PathValue("id")
	if id == "" || len(id) > maxApprovalID || !utf8.ValidString(id) {
		writeError(w, http.StatusBadRequest, "approval ID must be 1 to "+strconv.Itoa(maxApprovalID)+" bytes of UTF-8, got "+strconv.Quote(clip(id)))
		return store.Approval{}, false
	}
	a, err := s.store.Approval(r.Context(), id)
	a = shown(a)
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, "no approval "+strconv.Quote(clip(id))+" (GET /api/approvals?state=all lists them)")
		return store.Approval{}, false
	}
	if err != nil {
		s.storeError(w, r, err)
		return store.Approval{}, false
	}
	return a, true
}

// decisionBody is POST /api/approvals/{id}/decision's body.
type decisionBody struct {
	Decision     string          `json:"decision"`
	Reason       string          `json:"reason"`
	UpdatedInput json.RawMessage `json:"updated_input"`
	Answers      json.RawMessage `json:"answers"`
	// DecisionID makes a retry the same decision; default: a digest of the
	// caller's token and the request (decisionID).
	DecisionID string `json:"decision_id"`
	// InputSHA256 is the input_sha256 of the approval as the decider was
	// shown it (optional): a decision on another input is refused.
	InputSHA256 string `json:"input_sha256"`
}

// handleDecision is POST /api/approvals/{id}/decision: 200 decided (also
// for a repeat of the same decision), 409 decided before by someone else,
// 403 from an agent's own process (self-approval), 404 unknown, 400 a body
// that does not fit the approval. The approve scope was checked already.
func (s *Server) handleDecision(w http.ResponseWriter, r *http.Request) {
	if s.refuseSelfApproval(w, r) {
		return
	}
	raw, status, rerr := readBody(w, r, s.maxEvent)
	if rerr != nil {
		writeError(w, status, rerr.Msg)
		return
	}
	var body decisionBody
	if err := json.Unmarshal(raw, &body); err != nil {
		writeError(w, http.StatusBadRequest, `body must be {"decision": "allow|allow_always|deny|…", "reason": …, "updated_input": {…}, "answers": {…}}: `+err.Error())
		return
	}
	a, ok := s.loadApproval(w, r)
	if !ok {
		return
	}
	p := principalOf(r)
	id := body.DecisionID
	if id == "" {
		id = decisionID(p, a.ApprovalID, raw)
	} else if len(id) > maxApprovalID || !utf8.ValidString(id) {
		writeError(w, http.StatusBadRequest, "decision_id must be 1 to "+strconv.Itoa(maxApprovalID)+" bytes of UTF-8")
		return
	}
	if a.Remote != nil && a.Remote.DecisionID == id {
		writeJSON(w, http.StatusOK, approvalResponse{Approval: a}) // a retry of the decision that was stored
		return
	}
	if a.State != store.ApprovalPending || a.Remote != nil {
		s.conflict(w, a)
		return
	}
	if body.InputSHA256 != "" && body.InputSHA256 != a.InputSHA256 {
		writeJSON(w, http.StatusConflict, decidedResponse{Error: "this decision was made on an input (" + clip(body.InputSHA256) +
			") that is not the approval's (" + a.InputSHA256 + "): reload the approval, read what it will run, and decide again",
			Approval: a})
		return
	}
	if err := checkDecision(a, body); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	d := store.Decision{ApprovalID: a.ApprovalID, DecisionID: id, Decision: body.Decision, Reason: body.Reason,
		UpdatedInput: nonNull(body.UpdatedInput), Answers: nonNull(body.Answers), By: p.by()}
	got, err := s.store.Decide(r.Context(), d)
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, "no approval "+strconv.Quote(clip(a.ApprovalID)))
	case errors.Is(err, store.ErrDecided):
		s.conflict(w, shown(got))
	case err != nil:
		s.storeError(w, r, err)
	default:
		s.log.Info("backend: approval decided", "approval", a.ApprovalID, "session", a.SessionID, "decision", d.Decision,
			"by", d.By, "decision_id", id)
		writeJSON(w, http.StatusOK, approvalResponse{Approval: shown(got)})
	}
}

// shown is an approval as the API shows it: with the digest of its input,
// which a decision names and the helper checks.
func shown(a store.Approval) store.Approval {
	if a.ApprovalID != "" {
		a.InputSHA256 = relaywire.InputDigest(a.Input)
	}
	return a
}

// noteConflicts logs the events that asked for an approval again with
// another event_id: stored as posted, but the approval keeps the request
// that arrived first, so a later one (a forgery by anything holding an
// ingest token, or a bug) cannot change what the approver sees.
func (s *Server) noteConflicts(r *http.Request, events []store.Event, res []store.AppendResult) {
	for i, ar := range res {
		if ar.ApprovalConflict == "" || i >= len(events) {
			continue
		}
		s.log.Warn("backend: ignored a second request for an approval: the first to arrive defines it",
			"approval", ar.ApprovalConflict, "session", events[i].SessionID, "event_id", ar.EventID,
			"token", principalOf(r).name, "remote", r.RemoteAddr)
	}
}

// conflict answers 409 with who decided a first, and what.
func (s *Server) conflict(w http.ResponseWriter, a store.Approval) {
	writeJSON(w, http.StatusConflict, decidedResponse{Error: decidedMessage(a), Approval: a})
}

// decidedMessage says how an approval stopped waiting: "already decided by
// dashboard (phone): deny". Its resolution (from the helper's event) is the
// truth when there is one: a remote decision may have lost to the editor.
func decidedMessage(a store.Approval) string {
	by, decision := a.By, a.Decision
	if a.State == store.ApprovalPending && a.Remote != nil {
		by, decision = a.Remote.By, a.Remote.Decision
	}
	switch relaywire.By(by) {
	case relaywire.ByTimeout:
		return "already timed out (" + orDash(decision) + ")"
	case relaywire.ByCancelled:
		msg := "already cancelled"
		if a.Reason != "" {
			msg += ": " + a.Reason
		}
		return msg
	}
	return "already decided by " + whoFor(by) + ": " + orDash(decision)
}

// whoFor says a decider for people the way the helper does: a decision's
// "dashboard:phone" reads "dashboard (phone)".
func whoFor(by string) string {
	if kind, name, ok := strings.Cut(by, ":"); ok && kind != "" && name != "" {
		return kind + " (" + name + ")"
	}
	return orDash(by)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// decisionID is the default idempotency key: the same caller posting the
// same body for the same approval is the same decision, so a retried POST
// is a 200, not a 409 against itself.
func decisionID(p *principal, approvalID string, body []byte) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(p.id), []byte(approvalID), body} {
		h.Write([]byte(strconv.Itoa(len(part)) + ":"))
		h.Write(part)
	}
	return "d-" + hex.EncodeToString(h.Sum(nil))[:32]
}

// optionsFor is what a decision may be, by approval kind, when its
// request named no options.
func optionsFor(kind string) []relaywire.Decision { return relaywire.OptionsFor(relaywire.Kind(kind)) }

// checkDecision holds a decision to the rules the helper applies to any
// reply (relaywire.CheckReply), and to the API's own limit on its reason.
// Checking here turns a reply the helper would refuse into a 400 now,
// instead of a decision stored that can never apply.
func checkDecision(a store.Approval, b decisionBody) error {
	options := relaywire.AsDecisions(a.Options)
	if len(options) == 0 {
		options = optionsFor(a.Kind)
	}
	if _, err := relaywire.CheckReply(relaywire.Kind(a.Kind), options, relaywire.Decision(b.Decision), b.UpdatedInput, b.Answers); err != nil {
		return err
	}
	if len(b.Reason) > maxReason {
		return fmt.Errorf("reason is %d bytes; at most %d", len(b.Reason), maxReason)
	}
	return nil
}

func nonNull(b json.RawMessage) json.RawMessage {
	if !relaywire.Present(b) {
		return nil
	}
	return b
}
