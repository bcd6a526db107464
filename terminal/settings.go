package terminal

import (
	"encoding/json"
	"strings"
)

// HookEvents are the hook events we listen to.
var HookEvents = []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse",
	"Notification", "Stop", "StopFailure", "SubagentStop", "PreCompact", "SessionEnd"}

// httpHookEvents were seen to honour HTTP hooks in CLI 2.1.330; the others
// get a command hook that posts to the same server.
var httpHookEvents = map[string]bool{"UserPromptSubmit": true, "PreToolUse": true, "PostToolUse": true, "Stop": true, "SessionEnd": true}

// Settings returns the --settings JSON: hooks for every event, pointing at
// url, HTTP where honoured and `exe hook-post url` elsewhere. The CLI merges
// it with the user's own settings, so theirs are kept.
func Settings(url, exe string) ([]byte, error) {
	hooks := map[string]any{}
	for _, ev := range HookEvents {
		var h map[string]any
		if httpHookEvents[ev] {
			h = map[string]any{"type": "http", "url": url, "timeout": 5}
		} else {
			h = map[string]any{"type": "command", "command": shellQuote(exe) + " hook-post " + shellQuote(url), "timeout": 5}
		}
		entry := map[string]any{"hooks": []any{h}}
		if ev == "PreToolUse" || ev == "PostToolUse" {
			entry["matcher"] = "*"
		}
		hooks[ev] = []any{entry}
	}
	return json.MarshalIndent(map[string]any{"hooks": hooks}, "", "  ")
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
