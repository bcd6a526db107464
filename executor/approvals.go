package executor

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"

	"github.com/google/uuid"

	"github.com/claude-relay/claude-relay/internal/streamjson"
)

// Hook callback IDs we register in initialize.
const (
	callbackApproval = "tool_approval"
	callbackStopGit  = "stop_git_check"
)

// readOnlyMatcher matches every tool but the read-only ones, which never
// need approval (seed 000 §9).
const readOnlyMatcher = "^(?!(Glob|Grep|NotebookRead|Read|Task|TodoWrite)$).*"

// DenyPrefix starts the message a denied tool returns to the model (seed 000 §8).
const DenyPrefix = "The user doesn't want to proceed with this tool use. " +
	"The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). " +
	"To tell you how to proceed, the user said: "

// TimeoutDenial is what the model hears when nobody answered in time.
const TimeoutDenial = "The user did not answer the approval request in time, so this tool use was denied."

// hooks is the initialize hooks configuration of a run. Without approvals we
// register no PreToolUse hook: the CLI then asks can_use_tool only where its
// own rules say so, and we allow everything.
func hooks(req Request) map[string][]streamjson.HookMatcher {
	h := map[string][]streamjson.HookMatcher{}
	switch {
	case req.PermissionMode == streamjson.PermissionModePlan:
		// Plan mode: only leaving the plan needs a decision.
		h["PreToolUse"] = []streamjson.HookMatcher{
			{Matcher: "^ExitPlanMode$", HookCallbackIDs: []string{callbackApproval}},
		}
	case req.Approvals:
		h["PreToolUse"] = []streamjson.HookMatcher{
			{Matcher: readOnlyMatcher, HookCallbackIDs: []string{callbackApproval}},
		}
	}
	if req.StopGitCheck {
		h["Stop"] = []streamjson.HookMatcher{{Matcher: ".*", HookCallbackIDs: []string{callbackStopGit}}}
	}
	if len(h) == 0 {
		return nil
	}
	return h
}

// hookAnswer answers a hook_callback. Approval hooks say "ask" so that the CLI
// follows with can_use_tool, where the decision is made.
func (r *run) hookAnswer(ctx context.Context, cb *streamjson.HookCallbackRequest) any {
	switch cb.CallbackID {
	case callbackApproval:
		return streamjson.PreToolUseDecision(streamjson.HookDecisionAsk, "claude-relay asks for approval")
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

// decide answers a can_use_tool request.
func (r *run) decide(ctx context.Context, requestID string, c *streamjson.CanUseToolRequest) streamjson.PermissionResult {
	var updates []streamjson.PermissionUpdate
	if c.ToolName == "ExitPlanMode" {
		// An approved plan switches the session out of plan mode (seed 000 §8).
		updates = append(updates, streamjson.SetModeUpdate(streamjson.PermissionModeBypassPermissions))
	}
	if !r.req.Approvals || r.approver == nil {
		return streamjson.PermissionAllow(c.Input, updates...)
	}
	actx, cancel := context.WithTimeout(ctx, r.e.opts.ApprovalTimeout)
	defer cancel()
	r.trackApproval(requestID, cancel)
	defer r.untrackApproval(requestID)
	d, err := r.approver.Approve(actx, ApprovalRequest{
		RunID: r.req.RunID, ApprovalID: uuid.NewString(), ToolName: c.ToolName, DisplayName: c.DisplayName,
		Input: c.Input, ToolUseID: c.ToolUseID, Description: c.Description, Suggestions: c.PermissionSuggestions,
	})
	switch {
	case err == nil && d.Allow:
		return streamjson.PermissionAllow(orEmpty(c.Input), updates...)
	case err == nil:
		return streamjson.PermissionDeny(DenyPrefix+d.Reason, false)
	case errors.Is(err, context.DeadlineExceeded):
		return streamjson.PermissionDeny(TimeoutDenial, false)
	default:
		return streamjson.PermissionDeny(DenyPrefix+"the approval request was cancelled", false)
	}
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
