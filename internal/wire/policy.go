package wire

import "encoding/json"

// TypePolicyDecision is relay.policy_decision: the central policy (serve.policy)
// decided a tool call (docs/events.md).
const TypePolicyDecision = "relay.policy_decision"

// VPolicyDecision is relay.policy_decision's schema version.
const VPolicyDecision = 1

// ByPolicy is a decision the central policy made by itself (allow, deny).
const ByPolicy By = "policy"

// PolicyDecision is relay.policy_decision's data. For an ask it is written
// when the ask is decided: Outcome and DecidedBy say how.
type PolicyDecision struct {
	V           int    `json:"v"` // VPolicyDecision, set when written
	RunID       string `json:"run_id"`
	Rule        string `json:"rule"`       // the matching rule, as configured
	RuleIndex   int    `json:"rule_index"` // its 0-based position in serve.policy
	Effect      string `json:"effect"`     // allow | ask | deny
	Approver    string `json:"approver,omitempty"`
	Reason      string `json:"reason,omitempty"`
	ToolName    string `json:"tool_name"`
	ToolUseID   string `json:"tool_use_id,omitempty"`
	InputSHA256 string `json:"input_sha256"` // InputDigest of the tool input
	Outcome     string `json:"outcome"`      // allow | deny: what happened to the call
	DecidedBy   By     `json:"decided_by"`   // policy, or for an ask who answered (dashboard, timeout, …)
	ApprovalID  string `json:"approval_id,omitempty"`
	Source      string `json:"source,omitempty"` // backend | cache: where the helper had the policy from
}

// MarshalJSON writes the data with "v" = VPolicyDecision.
func (e PolicyDecision) MarshalJSON() ([]byte, error) {
	type data PolicyDecision
	e.V = VPolicyDecision
	return json.Marshal(data(e))
}
