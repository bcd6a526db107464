package executor

import (
	"context"
	"os"
	"time"

	"github.com/claude-relay/claude-relay/internal/policy"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// PolicySource is the central policy to enforce now (policy.Client); a nil
// policy enforces nothing.
type PolicySource interface {
	Current(ctx context.Context) (*policy.Policy, policy.Source)
}

// callbackPolicy is the PreToolUse hook that enforces the central policy.
// A hook, not can_use_tool: the CLI asks its hooks before its permission
// mode, so a deny holds in acceptEdits and bypassPermissions, and for tools
// the mode or an allow rule would run without asking.
const callbackPolicy = "central_policy"

// withPolicy adds the policy hook for every tool when a policy source is
// configured: the policy may change while the run is live, so the hook is
// registered even while the policy is empty.
func (r *run) hooks() map[string][]streamjson.HookMatcher {
	h := hooks(r.req)
	if r.e.opts.Policy != nil {
		h["PreToolUse"] = append(h["PreToolUse"], streamjson.HookMatcher{Matcher: ".*", HookCallbackIDs: []string{callbackPolicy}})
	}
	return h
}

// policyAsk is a tool call the policy sent to a person: its can_use_tool
// goes to the Approver whatever the mode, bound to this rule.
type policyAsk struct {
	match  policy.Match
	source policy.Source
}

// policyAnswer answers the policy hook: no matching rule leaves the call to
// the CLI's own permissions; allow and deny decide it here; ask makes the
// CLI send can_use_tool, which decide routes to the Approver.
func (r *run) policyAnswer(ctx context.Context, cb *streamjson.HookCallbackRequest) any {
	in := cb.HookInput()
	p, src := r.e.opts.Policy.Current(ctx)
	m, ok := p.Decide(policy.Call{Tool: in.ToolName, Input: in.ToolInput, Cwd: r.policyCwd(in.CWD), Home: home()})
	if !ok {
		return map[string]any{}
	}
	d := r.policyEvent(m, src, in.ToolName, in.ToolUseID, in.ToolInput)
	switch m.Effect {
	case policy.Deny:
		d.Outcome, d.DecidedBy = string(policy.Deny), wire.ByPolicy
		r.emitPolicy(d)
		return streamjson.PreToolUseDecision(streamjson.HookDecisionDeny, PolicyDenial(m))
	case policy.Allow:
		d.Outcome, d.DecidedBy = string(policy.Allow), wire.ByPolicy
		r.emitPolicy(d)
		return streamjson.PreToolUseDecision(streamjson.HookDecisionAllow, "allowed by the central policy rule "+m.Rule.Rule)
	default:
		r.mu.Lock()
		r.policyAsks[in.ToolUseID] = policyAsk{match: m, source: src}
		r.mu.Unlock()
		return streamjson.PreToolUseDecision(streamjson.HookDecisionAsk, "the central policy asks: "+m.Rule.Rule)
	}
}

// PolicyDenial is what the model hears for a call the policy denied.
func PolicyDenial(m policy.Match) string { return m.Denial() }

// takePolicyAsk returns and forgets the policy's ask for a tool call.
func (r *run) takePolicyAsk(toolUseID string) (policyAsk, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pa, ok := r.policyAsks[toolUseID]
	delete(r.policyAsks, toolUseID)
	return pa, ok
}

// policyResolved reports how a policy ask ended.
func (r *run) policyResolved(pa policyAsk, c *streamjson.CanUseToolRequest, approvalID string, allow bool, by wire.By) {
	d := r.policyEvent(pa.match, pa.source, c.ToolName, c.ToolUseID, c.Input)
	d.Outcome, d.DecidedBy, d.ApprovalID = string(policy.Deny), by, approvalID
	if allow {
		d.Outcome = string(policy.Allow)
	}
	r.emitPolicy(d)
}

func (r *run) policyEvent(m policy.Match, src policy.Source, tool, toolUseID string, input []byte) wire.PolicyDecision {
	return m.Event(src, r.req.RunID, tool, toolUseID, input)
}

func (r *run) emitPolicy(d wire.PolicyDecision) {
	r.obs.Event(Event{Kind: EventPolicyDecision, RunID: r.req.RunID, Time: time.Now(), Policy: &d})
}

// policyCwd is where relative patterns start: the run's directory, else
// the CLI's.
func (r *run) policyCwd(hookCwd string) string {
	if r.req.Cwd != "" {
		return r.req.Cwd
	}
	if hookCwd != "" {
		return hookCwd
	}
	wd, _ := os.Getwd()
	return wd
}

func home() string {
	h, _ := os.UserHomeDir()
	return h
}
