package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/google/uuid"

	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// Hook callback IDs we register in initialize.
const (
	callbackApproval = "tool_approval"
	callbackStopGit  = "stop_git_check"
)

// DenyPrefix starts the message a denied tool returns to the model (seed 000 §8).
const DenyPrefix = "The user doesn't want to proceed with this tool use. " +
	"The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). " +
	"To tell you how to proceed, the user said: "

// TimeoutDenial is what the model hears when nobody answered in time.
const TimeoutDenial = "The user did not answer the approval request in time, so this tool use was denied."

// Tools whose call is a question to the user, not an action: they go to the
// Approver whatever Request.Approvals says (CONTRACT §7).
const (
	toolExitPlanMode    = "ExitPlanMode"
	toolAskUserQuestion = "AskUserQuestion"
)

func asksUser(tool string) bool { return tool == toolExitPlanMode || tool == toolAskUserQuestion }

// hooks is the initialize hooks configuration of a run. A PreToolUse hook
// makes sure the plan and the user's questions reach can_use_tool. Other
// tools are left to the CLI's own permission rules, which ask can_use_tool
// for every call that is not read-only and not allowed by a rule or the
// mode; with approvals the Approver decides those, and its allow_always can
// apply the CLI's suggestions (a hook that says "ask" makes the CLI send
// none).
func hooks(req Request) map[string][]streamjson.HookMatcher {
	h := map[string][]streamjson.HookMatcher{
		"PreToolUse": {{Matcher: "^(" + toolExitPlanMode + "|" + toolAskUserQuestion + ")$", HookCallbackIDs: []string{callbackApproval}}},
	}
	if req.StopGitCheck {
		h["Stop"] = []streamjson.HookMatcher{{Matcher: ".*", HookCallbackIDs: []string{callbackStopGit}}}
	}
	return h
}

// hookAnswer answers a hook_callback. The approval hook says "ask" so that
// the CLI follows with can_use_tool, where the decision is made.
func (r *run) hookAnswer(ctx context.Context, cb *streamjson.HookCallbackRequest) any {
	switch cb.CallbackID {
	case callbackApproval:
		return streamjson.PreToolUseDecision(streamjson.HookDecisionAsk, "claude-relay asks the user")
	case callbackPolicy:
		return r.policyAnswer(ctx, cb)
	case callbackStopGit:
		in := cb.HookInput()
		if in.StopHookActive || !r.uncommitted(ctx) {
			return map[string]any{"decision": "approve"}
		}
		return map[string]any{"decision": "block", "reason": "There are uncommitted changes. Please commit them first."}
	default:
		return map[string]any{}
	}
}

// uncommitted reports whether the run's git tree has changes; outside a git
// tree, or when git fails, it says no rather than blocking the stop forever.
func (r *run) uncommitted(ctx context.Context) bool {
	cmd := exec.CommandContext(ctx, "git", "status", "--porcelain")
	cmd.Dir = r.req.Cwd
	out, err := cmd.Output()
	return err == nil && len(strings.TrimSpace(string(out))) > 0
}

// decide answers a can_use_tool request. With nobody to ask, everything is
// allowed (a plan into acceptEdits); otherwise the Approver decides tools
// when approvals are on, and always decides plans and questions.
func (r *run) decide(ctx context.Context, requestID string, c *streamjson.CanUseToolRequest) streamjson.PermissionResult {
	pa, policyAsks := r.takePolicyAsk(c.ToolUseID)
	if policyAsks {
		// The policy's ask outranks the mode (bypass is emulated by
		// allowing here) and approvals being off.
		if r.approver == nil {
			r.policyResolved(pa, c, "", false, wire.ByCancelled)
			return streamjson.PermissionDeny(PolicyDenial(pa.match)+" (nobody can be asked in this run)", false)
		}
		res := r.ask(ctx, requestID, c, &pa)
		return res
	}
	if r.approver == nil || !(r.asking.Load() || asksUser(c.ToolName)) {
		res := allowed(c, Decision{Allow: true})
		for _, u := range res.UpdatedPermissions {
			r.observeMode(u.Mode)
		}
		return res
	}
	return r.ask(ctx, requestID, c, nil)
}

// ask has the Approver decide a can_use_tool request; pa is the central
// policy's ask behind it, if any.
func (r *run) ask(ctx context.Context, requestID string, c *streamjson.CanUseToolRequest, pa *policyAsk) streamjson.PermissionResult {
	actx, cancel := context.WithTimeout(ctx, r.e.opts.ApprovalTimeout)
	defer cancel()
	r.trackApproval(requestID, cancel)
	defer r.untrackApproval(requestID)
	input := c.Input
	if c.ToolName == toolExitPlanMode {
		if plan := r.act.planInput(c.ToolUseID); plan != nil {
			input = plan
		}
	}
	areq := ApprovalRequest{
		RunID: r.req.RunID, ApprovalID: uuid.NewString(), ToolName: c.ToolName, DisplayName: c.DisplayName,
		Input: input, ToolUseID: c.ToolUseID, Description: c.Description, Suggestions: c.PermissionSuggestions,
	}
	if pa != nil {
		areq.Policy = &PolicyAskInfo{Rule: pa.match.Rule.Rule, Reason: pa.match.Reason, Approver: string(pa.match.Approver)}
	}
	d, err := r.approver.Approve(actx, areq)
	if pa != nil {
		by := d.By
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			by = wire.ByTimeout
		case err != nil:
			by = wire.ByCancelled
		}
		r.policyResolved(*pa, c, areq.ApprovalID, err == nil && d.Allow, by)
	}
	switch {
	case err == nil && d.Allow:
		res := allowed(c, d)
		if c.ToolName == toolExitPlanMode && d.Mode == streamjson.PermissionModeDefault {
			// "Ask for each edit": from now on the user decides.
			r.asking.Store(true)
		}
		for _, u := range res.UpdatedPermissions {
			// Known now, before the CLI reports it: the next hook must
			// see the plan's mode.
			r.observeMode(u.Mode)
		}
		if d.Always {
			res.UpdatedPermissions = append(res.UpdatedPermissions, r.grant(c)...)
		}
		return res
	case err == nil && c.ToolName == toolExitPlanMode:
		r.noteStop(d.Interrupt, d.By, "the plan was sent back and the turn stopped", false)
		return streamjson.PermissionDeny(KeepPlanningPrefix+orDefault(d.Reason, "revise the plan"), d.Interrupt)
	case err == nil:
		r.noteStop(d.Interrupt, d.By, fmt.Sprintf("%s was denied and the turn stopped", c.ToolName), false)
		return streamjson.PermissionDeny(denial(d.Reason), d.Interrupt)
	case errors.Is(err, context.DeadlineExceeded):
		// Interrupted too: denied alone, the model tends to ask again, and
		// nobody is there to answer (CONTRACT §7).
		r.noteStop(true, wire.ByTimeout, fmt.Sprintf("nobody answered the approval for %s within %s (approvals.timeout), so it was denied and the turn stopped",
			c.ToolName, r.e.opts.ApprovalTimeout), true)
		return streamjson.PermissionDeny(TimeoutDenial, true)
	default:
		return streamjson.PermissionDeny(DenyPrefix+"the approval request was cancelled", false)
	}
}

// DenyNoReason is what a denied tool returns to the model when the user
// gave no reason: the CLI's own words for a rejection, not DenyPrefix with
// nothing after "the user said:".
const DenyNoReason = "The user doesn't want to proceed with this tool use. " +
	"The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). " +
	"STOP what you are doing and wait for the user to tell you how to proceed."

// denial is a deny's message to the model: DenyPrefix and the user's
// reason, or DenyNoReason without one.
func denial(reason string) string {
	if strings.TrimSpace(reason) == "" {
		return DenyNoReason
	}
	return DenyPrefix + reason
}

// noteStop remembers why an approval stopped the turn, so that the run's
// end says so instead of the CLI's "error during execution".
func (r *run) noteStop(interrupt bool, by wire.By, why string, timedOut bool) {
	if !interrupt {
		return
	}
	r.mu.Lock()
	r.approvalStop = approvalStop{why: why, by: by, timedOut: timedOut}
	r.mu.Unlock()
}

// approvalStop is why the running turn was stopped: an approval's deny, an
// interrupt, or the run's cancel.
type approvalStop struct {
	why      string
	by       wire.By // who stopped it, when known
	timedOut bool    // nobody answered; else someone chose to stop
}

// KeepPlanningPrefix starts what the model hears when the user sends a plan
// back.
const KeepPlanningPrefix = "The user did not approve the plan yet and wants you to keep planning. The user said: "

// allowed is the allow answer for d: the edited input or the answers when
// given, and for a plan the mode to leave plan mode into.
func allowed(c *streamjson.CanUseToolRequest, d Decision) streamjson.PermissionResult {
	input := orEmpty(c.Input)
	if len(d.UpdatedInput) > 0 {
		input = d.UpdatedInput
	}
	if len(d.Answers) > 0 {
		input = withAnswers(input, d.Answers)
	}
	var updates []streamjson.PermissionUpdate
	if c.ToolName == toolExitPlanMode {
		mode := d.Mode
		if mode == "" {
			mode = streamjson.PermissionModeAcceptEdits
		}
		updates = append(updates, streamjson.SetModeUpdate(mode))
	}
	return streamjson.PermissionAllow(input, updates...)
}

// withAnswers adds AskUserQuestion's answers to its input, where the CLI
// reads them (question text → answer).
func withAnswers(input json.RawMessage, answers map[string]string) json.RawMessage {
	fields := map[string]json.RawMessage{}
	_ = json.Unmarshal(input, &fields) // not an object: the answers alone
	b, err := json.Marshal(answers)
	if err != nil {
		return input
	}
	fields["answers"] = b
	out, err := json.Marshal(fields)
	if err != nil {
		return input
	}
	return out
}

// grant turns the CLI's suggestions into this run's permissions, each for
// the session only: a suggestion may name a settings file, and an answer in
// one run should not rewrite the user's settings. Without suggestions, the
// tool itself (or, for Bash, the exact command) is granted.
func (r *run) grant(c *streamjson.CanUseToolRequest) []streamjson.PermissionUpdate {
	updates := c.Suggestions()
	if len(updates) == 0 {
		rule := streamjson.PermissionRuleValue{ToolName: c.ToolName}
		var in struct {
			Command string `json:"command"`
		}
		if c.ToolName == "Bash" && json.Unmarshal(c.Input, &in) == nil && in.Command != "" {
			rule.RuleContent = in.Command
		}
		updates = []streamjson.PermissionUpdate{{Type: streamjson.UpdateAddRules, Rules: []streamjson.PermissionRuleValue{rule},
			Behavior: streamjson.BehaviorAllow}}
	}
	for i := range updates {
		updates[i].Destination = streamjson.DestinationSession
		r.observeMode(updates[i].Mode)
	}
	return updates
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

func orEmpty(in json.RawMessage) json.RawMessage {
	if len(in) == 0 {
		return json.RawMessage("{}")
	}
	return in
}

func (r *run) trackApproval(id string, cancel context.CancelFunc) {
	r.mu.Lock()
	r.approvals[id] = cancel
	r.mu.Unlock()
}

func (r *run) untrackApproval(id string) {
	r.mu.Lock()
	delete(r.approvals, id)
	r.mu.Unlock()
}

// cancelApproval ends one pending approval (control_cancel_request).
func (r *run) cancelApprovalByID(id string) {
	r.mu.Lock()
	cancel := r.approvals[id]
	r.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (r *run) stoppedBy() approvalStop {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.approvalStop
}

// takeStop is stoppedBy for one turn of a live run: the next turn starts
// clean.
func (r *run) takeStop() approvalStop {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.approvalStop
	r.approvalStop = approvalStop{}
	return s
}
