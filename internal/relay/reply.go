package relay

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// optionsFor is what a decision may be, by approval kind.
func optionsFor(kind wire.Kind) []wire.Decision { return wire.OptionsFor(kind) }

// Reply answers a pending approval.
type Reply struct {
	Decision     wire.Decision   // one of the approval's Options
	Reason       string          // with deny or keep_planning: told to the model
	UpdatedInput json.RawMessage // with allow or allow_always: replaces the tool's input (an object)
	Answers      json.RawMessage // with allow, for a question: {"question text": "answer"}
	Interrupt    bool            // with deny or keep_planning: stop the turn too
	By           wire.By         // who decided, for the backend's record
	// With By dashboard (wire.ByDashboard): who decided there (the
	// decision's `by`, e.g. "dashboard:phone") and the backend's decision ID.
	ByDetail   string
	DecisionID string
	// InputSHA256, on a decision made through the backend, is the digest
	// (wire.InputDigest) of the input its approver was shown: the reply is
	// refused unless it is the digest of this approval's own input.
	InputSHA256 string
}

// ErrBadReply: the reply does not fit its approval, which stays pending.
var ErrBadReply = errors.New("approval answer refused")

// ErrDashboardOnly: the central policy says only the dashboard decides this
// approval (approver: dashboard); it stays pending. It is an ErrBadReply too.
var ErrDashboardOnly = fmt.Errorf("%w: the central policy lets only the dashboard decide this approval", ErrBadReply)

// decision checks rep against a and turns it into the executor's Decision.
func (rep Reply) decision(a *Approval) (executor.Decision, error) {
	bad := func(format string, args ...any) (executor.Decision, error) {
		return executor.Decision{}, fmt.Errorf("%w: %s; approval %s is still pending", ErrBadReply, fmt.Sprintf(format, args...), a.ID)
	}
	if a.DashboardOnly() && rep.By != wire.ByDashboard {
		// By is set by the helper for each front end, never by a client.
		return executor.Decision{}, fmt.Errorf("%w (rule %s); approval %s is still pending: decide it in the dashboard with an approve-scope token",
			ErrDashboardOnly, a.Policy.Rule, a.ID)
	}
	answers, err := wire.CheckReply(a.Kind, a.Options, rep.Decision, rep.UpdatedInput, rep.Answers)
	if err != nil {
		return bad("%s", err)
	}
	if rep.By == wire.ByDashboard {
		if own := wire.InputDigest(a.Input); rep.InputSHA256 != own {
			return bad("it was made on an input (%s) that is not the one this run asked about (%s): what the backend showed "+
				"was altered or forged, so nothing of it runs", orNone(rep.InputSHA256), own)
		}
	}
	allow := rep.Decision != wire.DecisionDeny && rep.Decision != wire.DecisionKeepPlanning
	d := executor.Decision{Answers: answers}
	if wire.Present(rep.UpdatedInput) {
		d.UpdatedInput = rep.UpdatedInput
	}
	if rep.Interrupt && allow {
		return bad("interrupt goes with %s, not %s", strings.Join(denials(a.Options), " or "), rep.Decision)
	}
	d.Allow, d.Reason, d.Interrupt, d.By = allow, rep.Reason, rep.Interrupt, rep.By
	switch rep.Decision {
	case wire.DecisionAllowAlways:
		d.Always = true
	case wire.DecisionAcceptEdits:
		d.Mode = streamjson.PermissionModeAcceptEdits
	case wire.DecisionDefault:
		d.Mode = streamjson.PermissionModeDefault
	}
	return d, nil
}

func denials(options []wire.Decision) []string {
	var out []string
	for _, o := range options {
		if !o.Allows() {
			out = append(out, string(o))
		}
	}
	return out
}

func orNone(digest string) string {
	if digest == "" {
		return "none: a backend older than this helper"
	}
	return digest
}
