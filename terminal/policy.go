package terminal

import (
	"context"
	"encoding/json"
	"os"

	"github.com/claude-relay/claude-relay/internal/policy"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// PolicySource is the central policy to enforce now (policy.Client, as
// the executor's); a nil policy enforces nothing.
type PolicySource interface {
	Current(ctx context.Context) (*policy.Policy, policy.Source)
}

// terminalAsk is a call the policy handed to the person at the terminal:
// its relay.policy_decision is written once the CLI shows how it ended.
type terminalAsk struct {
	d wire.PolicyDecision
}

// DashboardOnly is the reason a terminal run gives for a call whose rule
// lets only the dashboard decide: the interactive CLI asks only the person
// at the terminal, and a hook that waited for the dashboard would hold the
// terminal with nothing on it saying why.
func DashboardOnly(m policy.Match) string {
	return m.Denial() + " Only the dashboard may approve this call, and a terminal run cannot wait for it; run it with `claude-relay run` or from the editor to have it approved there."
}

// hookToolInput is the part of a tool hook input the policy reads.
type hookToolInput struct {
	ToolName  string          `json:"tool_name"`
	ToolInput json.RawMessage `json:"tool_input"`
	ToolUseID string          `json:"tool_use_id"`
	CWD       string          `json:"cwd"`
}

// policyAnswer decides a PreToolUse hook by the central policy: no rule
// leaves the call to the CLI's own permissions (nil: no answer); deny and
// allow decide it here; ask makes the interactive CLI ask the person at
// the terminal, except for a dashboard-only rule, which is refused.
func (r *runner) policyAnswer(ctx context.Context, body []byte) any {
	if r.o.Policy == nil {
		return nil
	}
	var in hookToolInput
	if json.Unmarshal(body, &in) != nil || in.ToolName == "" {
		return nil
	}
	p, src := r.o.Policy.Current(ctx)
	home, _ := os.UserHomeDir()
	m, ok := p.Decide(policy.Call{Tool: in.ToolName, Input: in.ToolInput, Cwd: r.policyCwd(in.CWD), Home: home})
	if !ok {
		return nil
	}
	d := m.Event(src, r.o.RunID, in.ToolName, in.ToolUseID, in.ToolInput)
	switch {
	case m.Effect == policy.Deny:
		d.Outcome, d.DecidedBy = string(policy.Deny), wire.ByPolicy
		r.emit(wire.TypePolicyDecision, d)
		return streamjson.PreToolUseDecision(streamjson.HookDecisionDeny, m.Denial())
	case m.Effect == policy.Allow:
		d.Outcome, d.DecidedBy = string(policy.Allow), wire.ByPolicy
		r.emit(wire.TypePolicyDecision, d)
		return streamjson.PreToolUseDecision(streamjson.HookDecisionAllow, "allowed by the central policy rule "+m.Rule.Rule)
	case m.Approver == policy.Dashboard:
		d.Outcome, d.DecidedBy = string(policy.Deny), wire.ByPolicy
		r.emit(wire.TypePolicyDecision, d)
		return streamjson.PreToolUseDecision(streamjson.HookDecisionDeny, DashboardOnly(m))
	default:
		r.mu.Lock()
		if r.asks == nil {
			r.asks = map[string]terminalAsk{}
		}
		r.asks[in.ToolUseID] = terminalAsk{d: d}
		r.mu.Unlock()
		return streamjson.PreToolUseDecision(streamjson.HookDecisionAsk, "the central policy asks: "+m.Rule.Rule)
	}
}

// policyHook follows a policy ask to its end: a PostToolUse or
// PostToolUseFailure of the call means the person let it run; a turn
// boundary (the next prompt, Stop, SessionEnd) with the call still open
// means they refused it (the CLI then runs neither tool hook).
func (r *runner) policyHook(event string, body []byte) {
	switch event {
	case "PostToolUse", "PostToolUseFailure":
		var in hookToolInput
		_ = json.Unmarshal(body, &in)
		r.mu.Lock()
		a, ok := r.asks[in.ToolUseID]
		delete(r.asks, in.ToolUseID)
		r.mu.Unlock()
		if ok {
			a.d.Outcome, a.d.DecidedBy = string(policy.Allow), wire.ByTTY
			r.emit(wire.TypePolicyDecision, a.d)
		}
	case "UserPromptSubmit", "Stop", "SessionEnd":
		r.endAsks(wire.ByTTY)
	}
}

// endAsks records every open policy ask as refused by by.
func (r *runner) endAsks(by wire.By) {
	r.mu.Lock()
	open := r.asks
	r.asks = nil
	r.mu.Unlock()
	for _, a := range open {
		a.d.Outcome, a.d.DecidedBy = string(policy.Deny), by
		r.emit(wire.TypePolicyDecision, a.d)
	}
}

// policyCwd is where relative patterns start: the run's directory, else
// the CLI's.
func (r *runner) policyCwd(hookCwd string) string {
	if r.o.Cwd != "" {
		return r.o.Cwd
	}
	if hookCwd != "" {
		return hookCwd
	}
	wd, _ := os.Getwd()
	return wd
}
