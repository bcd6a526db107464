package policy

import (
	"fmt"
	"strings"

	"github.com/claude-relay/claude-relay/internal/wire"
)

// Denial is what the model hears for a call the policy denied: the same
// text whichever mode enforced it (executor, terminal).
func (m Match) Denial() string {
	msg := fmt.Sprintf("Denied by the team's central policy (rule %s)", m.Rule.Rule)
	if r := strings.TrimSpace(m.Reason); r != "" {
		msg += ": " + r
	}
	return msg + ". Do not try to get around it; ask the user if this is needed."
}

// Event is the relay.policy_decision record of m deciding a tool call;
// the caller sets Outcome and DecidedBy (and ApprovalID for an ask).
func (m Match) Event(src Source, runID, tool, toolUseID string, input []byte) wire.PolicyDecision {
	return wire.PolicyDecision{RunID: runID, Rule: m.Rule.Rule, RuleIndex: m.Index, Effect: string(m.Effect),
		Approver: string(m.Approver), Reason: m.Reason, ToolName: tool, ToolUseID: toolUseID,
		InputSHA256: wire.InputDigest(input), Source: string(src)}
}
