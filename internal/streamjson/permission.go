package streamjson

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// PermissionMode is the CLI's permission mode (--permission-mode,
// set_permission_mode, system init's permissionMode).
type PermissionMode string

// Permission modes. Newer CLIs may report others; PermissionMode is a plain
// string so they pass through.
const (
	PermissionModeDefault           PermissionMode = "default"
	PermissionModeAcceptEdits       PermissionMode = "acceptEdits"
	PermissionModePlan              PermissionMode = "plan"
	PermissionModeBypassPermissions PermissionMode = "bypassPermissions"
)

// Permission behaviours of a PermissionResult.
const (
	BehaviorAllow = "allow"
	BehaviorDeny  = "deny"
)

// PermissionResult answers a can_use_tool request; send it with
// ControlResponseSuccess. Build it with PermissionAllow or PermissionDeny.
type PermissionResult struct {
	Behavior string `json:"behavior"`

	// allow
	UpdatedInput       json.RawMessage    `json:"updatedInput,omitempty"`
	UpdatedPermissions []PermissionUpdate `json:"updatedPermissions,omitempty"`

	// deny
	Message   string `json:"message,omitempty"`
	Interrupt bool   `json:"interrupt,omitempty"`
}

// PermissionAllow lets the tool run with input, normally the request's own
// Input unchanged. updates (e.g. SetModeUpdate) are applied by the CLI too.
func PermissionAllow(input json.RawMessage, updates ...PermissionUpdate) PermissionResult {
	return PermissionResult{Behavior: BehaviorAllow, UpdatedInput: input, UpdatedPermissions: updates}
}

// PermissionDeny refuses the tool; message goes to the model. interrupt also
// stops the turn.
func PermissionDeny(message string, interrupt bool) PermissionResult {
	return PermissionResult{Behavior: BehaviorDeny, Message: message, Interrupt: interrupt}
}

// MarshalJSON writes exactly the fields the CLI expects for the behaviour:
//
//	{"behavior":"allow","updatedInput":INPUT,"updatedPermissions":[...]}
//	{"behavior":"deny","message":MSG,"interrupt":false}
//
// An allow with no input (nil or null) omits updatedInput rather than
// sending {}, which would replace the tool's input with nothing.
// updatedPermissions is omitted when empty.
func (r PermissionResult) MarshalJSON() ([]byte, error) {
	switch r.Behavior {
	case BehaviorAllow:
		input := r.UpdatedInput
		if len(bytes.TrimSpace(input)) == 0 || string(bytes.TrimSpace(input)) == "null" {
			input = nil
		}
		return marshalCompact(struct {
			Behavior           string             `json:"behavior"`
			UpdatedInput       json.RawMessage    `json:"updatedInput,omitempty"`
			UpdatedPermissions []PermissionUpdate `json:"updatedPermissions,omitempty"`
		}{BehaviorAllow, input, r.UpdatedPermissions})
	case BehaviorDeny:
		return marshalCompact(struct {
			Behavior  string `json:"behavior"`
			Message   string `json:"message"`
			Interrupt bool   `json:"interrupt"`
		}{BehaviorDeny, r.Message, r.Interrupt})
	}
	return nil, fmt.Errorf("streamjson: permission behavior %q: use %q or %q", r.Behavior, BehaviorAllow, BehaviorDeny)
}

// Permission update types and destinations.
const (
	UpdateSetMode        = "setMode"
	UpdateAddRules       = "addRules"
	UpdateReplaceRules   = "replaceRules"
	UpdateRemoveRules    = "removeRules"
	UpdateAddDirectories = "addDirectories"

	DestinationSession         = "session"
	DestinationUserSettings    = "userSettings"
	DestinationProjectSettings = "projectSettings"
	DestinationLocalSettings   = "localSettings"
)

// PermissionUpdate changes the CLI's permission state, as part of an allow
// (updatedPermissions) or as a suggestion in a can_use_tool request.
type PermissionUpdate struct {
	Type        string                `json:"type"`
	Mode        PermissionMode        `json:"mode,omitempty"`
	Destination string                `json:"destination,omitempty"`
	Rules       []PermissionRuleValue `json:"rules,omitempty"`
	Behavior    string                `json:"behavior,omitempty"`
	Directories []string              `json:"directories,omitempty"`
}

// PermissionRuleValue names a tool and optionally a rule for its input
// (e.g. "npm install:*" for Bash).
type PermissionRuleValue struct {
	ToolName    string `json:"toolName"`
	RuleContent string `json:"ruleContent,omitempty"`
}

// SetModeUpdate switches the session to mode, as an approved ExitPlanMode
// does with PermissionModeBypassPermissions (seed 000 §8).
func SetModeUpdate(mode PermissionMode) PermissionUpdate {
	return PermissionUpdate{Type: UpdateSetMode, Mode: mode, Destination: DestinationSession}
}

// Decisions a PreToolUse hook can return.
const (
	HookDecisionAllow = "allow"
	HookDecisionDeny  = "deny"
	HookDecisionAsk   = "ask"
)

// HookOutput answers a hook_callback request; send it with
// ControlResponseSuccess.
type HookOutput struct {
	Continue           *bool               `json:"continue,omitempty"`
	StopReason         string              `json:"stopReason,omitempty"`
	HookSpecificOutput *HookSpecificOutput `json:"hookSpecificOutput,omitempty"`
}

// HookSpecificOutput carries a PreToolUse decision.
type HookSpecificOutput struct {
	HookEventName            string `json:"hookEventName"`
	PermissionDecision       string `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string `json:"permissionDecisionReason,omitempty"`
}

// PreToolUseDecision answers a PreToolUse hook. HookDecisionAsk makes the
// CLI send a can_use_tool request next, which is how approvals are routed
// (seed 000 §9.4).
func PreToolUseDecision(decision, reason string) HookOutput {
	return HookOutput{HookSpecificOutput: &HookSpecificOutput{
		HookEventName:            "PreToolUse",
		PermissionDecision:       decision,
		PermissionDecisionReason: reason,
	}}
}
