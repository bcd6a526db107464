package terminal

import (
	"encoding/json"
	"strings"
)

// HookEvents are the hook events we listen to.
var HookEvents = []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure",
	"Notification", "Stop", "StopFailure", "SubagentStop", "PreCompact", "SessionEnd"}

// httpHookEvents were seen to honour HTTP hooks in CLI 2.1.330; the others
// get a command hook that posts to the same server.
var httpHookEvents = map[string]bool{"UserPromptSubmit": true, "PreToolUse": true, "PostToolUse": true, "Stop": true, "SessionEnd": true}

// PolicyHookTimeout is the CLI's bound on the policy hook (seconds). The
// hook gives up by itself well before (policyHookWait) and then refuses the
// call: a hook the CLI kills for its timeout would let the call through.
const PolicyHookTimeout = 120

// Settings returns the --settings JSON: hooks for every event, pointing at
// url, HTTP where honoured and `exe hook-post url` elsewhere. With policy,
// PreToolUse is `exe hook-policy url` instead, a command hook that relays
// our decision and fails closed (hookpolicy.go). The CLI merges it with the
// user's own settings, so theirs are kept.
func Settings(url, exe string, policy bool) ([]byte, error) {
	hooks := map[string]any{}
	for _, ev := range HookEvents {
		var h map[string]any
		switch {
		case ev == "PreToolUse" && policy:
			h = map[string]any{"type": "command", "command": shellQuote(exe) + " hook-policy " + shellQuote(url), "timeout": PolicyHookTimeout}
		case httpHookEvents[ev]:
			h = map[string]any{"type": "http", "url": url, "timeout": 5}
		default:
			h = map[string]any{"type": "command", "command": shellQuote(exe) + " hook-post " + shellQuote(url), "timeout": 5}
		}
		entry := map[string]any{"hooks": []any{h}}
		if ev == "PreToolUse" || ev == "PostToolUse" || ev == "PostToolUseFailure" {
			entry["matcher"] = "*"
		}
		hooks[ev] = []any{entry}
	}
	return json.MarshalIndent(map[string]any{"hooks": hooks}, "", "  ")
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
