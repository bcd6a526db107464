package relay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// Decisions an approval may offer in its Options (CONTRACT §7).
const (
	DecisionAllow        = "allow"
	DecisionAllowAlways  = "allow_always"
	DecisionDeny         = "deny"
	DecisionAcceptEdits  = "accept_edits"  // a plan: approve, edits run without asking
	DecisionDefault      = "default"       // a plan: approve, each edit asks
	DecisionKeepPlanning = "keep_planning" // a plan: send it back with Reason
)

// Decisions are every decision there is; an approval offers some.
var Decisions = []string{DecisionAllow, DecisionAllowAlways, DecisionDeny, DecisionAcceptEdits, DecisionDefault, DecisionKeepPlanning}

// optionsFor is what a decision may be, by approval kind.
func optionsFor(kind string) []string {
	switch kind {
	case wire.ApprovalPlan:
		return []string{DecisionAcceptEdits, DecisionDefault, DecisionKeepPlanning}
	case wire.ApprovalQuestion:
		return []string{DecisionAllow, DecisionDeny}
	default:
		return []string{DecisionAllow, DecisionAllowAlways, DecisionDeny}
	}
}

// Reply answers a pending approval.
type Reply struct {
	Decision     string          // one of the approval's Options
	Reason       string          // with deny or keep_planning: told to the model
	UpdatedInput json.RawMessage // with allow or allow_always: replaces the tool's input (an object)
	Answers      json.RawMessage // with allow, for a question: {"question text": "answer"}
	Interrupt    bool            // with deny or keep_planning: stop the turn too
	By           string          // who decided (a wire.By constant), for the backend's record
	// With By dashboard (wire.ByDashboard): who decided there (the
	// decision's `by`, e.g. "dashboard:phone") and the backend's decision ID.
	ByDetail   string
	DecisionID string
}

// ErrBadReply: the reply does not fit its approval, which stays pending.
var ErrBadReply = errors.New("approval answer refused")

// decision checks rep against a and turns it into the executor's Decision.
func (rep Reply) decision(a *Approval) (executor.Decision, error) {
	bad := func(format string, args ...any) (executor.Decision, error) {
		return executor.Decision{}, fmt.Errorf("%w: %s; approval %s is still pending", ErrBadReply, fmt.Sprintf(format, args...), a.ID)
	}
	if !slices.Contains(a.Options, rep.Decision) {
		return bad("decision %q is not one of this %s approval's options (%s)", rep.Decision, a.Kind, strings.Join(a.Options, ", "))
	}
	allow := rep.Decision != DecisionDeny && rep.Decision != DecisionKeepPlanning
	var d executor.Decision
	if len(rep.UpdatedInput) > 0 && !isNull(rep.UpdatedInput) {
		if !allow || a.Kind != wire.ApprovalTool {
			return bad("updated_input goes with allow or allow_always on a tool approval, not %s on a %s", rep.Decision, a.Kind)
		}
		if !isObject(rep.UpdatedInput) {
			return bad("updated_input must be a JSON object (the tool's whole input, e.g. {\"command\": \"…\"}), got %s", preview(rep.UpdatedInput))
		}
		d.UpdatedInput = rep.UpdatedInput
	}
	if len(rep.Answers) > 0 && !isNull(rep.Answers) {
		if a.Kind != wire.ApprovalQuestion {
			return bad("answers are for a question (kind question); this is a %s approval", a.Kind)
		}
		if err := json.Unmarshal(rep.Answers, &d.Answers); err != nil {
			return bad("answers must map each question's text to its answer, e.g. {\"Which color?\": \"Blue\"}, got %s", preview(rep.Answers))
		}
	}
	if a.Kind == wire.ApprovalQuestion && allow && len(d.Answers) == 0 {
		return bad("allow on a question needs answers: {\"<question text>\": \"<answer>\"}")
	}
	if rep.Interrupt && allow {
		return bad("interrupt goes with %s, not %s", strings.Join(denials(a.Options), " or "), rep.Decision)
	}
	d.Allow, d.Reason, d.Interrupt = allow, rep.Reason, rep.Interrupt
	switch rep.Decision {
	case DecisionAllowAlways:
		d.Always = true
	case DecisionAcceptEdits:
		d.Mode = streamjson.PermissionModeAcceptEdits
	case DecisionDefault:
		d.Mode = streamjson.PermissionModeDefault
	}
	return d, nil
}

func denials(options []string) []string {
	var out []string
	for _, o := range options {
		if o == DecisionDeny || o == DecisionKeepPlanning {
			out = append(out, o)
		}
	}
	return out
}

func isNull(b json.RawMessage) bool { return string(bytes.TrimSpace(b)) == "null" }

func isObject(b json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil && m != nil
}

// preview is a short quote of a bad value for an error message.
func preview(b json.RawMessage) string {
	s := string(bytes.TrimSpace(b))
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return s
}
