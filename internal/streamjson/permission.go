package streamjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
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
	PermissionModeAuto              PermissionMode = "auto"
	PermissionModeDontAsk           PermissionMode = "dontAsk"
	PermissionModeBypassPermissions PermissionMode = "bypassPermissions"
)

// ModeInfo names a permission mode for someone choosing one.
type ModeInfo struct {
	Mode        PermissionMode
	Name        string
	Description string
}

// Modes are the permission modes a request may name, in the order a picker
// lists them. Which of them a given CLI takes is its own answer
// (AcceptedModes).
var Modes = []ModeInfo{
	{PermissionModeDefault, "Default", "Asks before edits and commands"},
	{PermissionModeAcceptEdits, "Accept Edits", "Edits run without asking; commands still ask"},
	{PermissionModePlan, "Plan", "Plans first: nothing changes until you approve the plan"},
	{PermissionModeAuto, "Auto", "Claude decides which tools need asking"},
	{PermissionModeDontAsk, "Don't Ask", "Runs what the permission rules allow and refuses the rest without asking"},
	{PermissionModeBypassPermissions, "Bypass Permissions", "Nothing asks"},
}

// Known reports whether m is one of Modes.
func (m PermissionMode) Known() bool {
	for _, k := range Modes {
		if k.Mode == m {
			return true
		}
	}
	return false
}

// ModeList is Modes' names for messages: "default, acceptEdits, …".
func ModeList() string {
	names := make([]string, len(Modes))
	for i, k := range Modes {
		names[i] = string(k.Mode)
	}
	return strings.Join(names, ", ")
}

// ModesQuestion asks the CLI which modes it takes: a set_permission_mode
// with no mode changes nothing and is refused with the list (AcceptedModes).
var ModesQuestion = SetPermissionModeRequest{}

// ErrorInvalidMode is the error_code of a refused set_permission_mode.
const ErrorInvalidMode = "invalid_mode"

// AcceptedModes reads the modes a CLI takes from its refusal of
// ModesQuestion ("Cannot set permission mode: must be one of acceptEdits,
// auto, …"); nil when the answer is anything else.
func AcceptedModes(resp *ControlResponse) []PermissionMode {
	if resp == nil || resp.Subtype != ResponseError || resp.ErrorCode != ErrorInvalidMode {
		return nil
	}
	_, list, ok := strings.Cut(resp.Error, "must be one of ")
	if !ok {
		return nil
	}
	var modes []PermissionMode
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f != "" {
			modes = append(modes, PermissionMode(f))
		}
	}
	return modes
}

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
