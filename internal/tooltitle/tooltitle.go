// Package tooltitle names a tool call for people, as seed 004's
// extract_tool_info does: Read/Edit/Write with the path, Bash with its
// description or command, Grep/Glob with the pattern, WebFetch with the URL.
// The dashboard's JavaScript follows the same rules.
package tooltitle

import (
	"encoding/json"
	"unicode/utf8"
)

// Kind groups tools for display.
type Kind string

// Kinds.
const (
	KindRead    Kind = "read"
	KindEdit    Kind = "edit"
	KindExecute Kind = "execute"
	KindSearch  Kind = "search"
	KindFetch   Kind = "fetch"
	KindOther   Kind = "other"
)

// Of returns the title and kind of a tool call.
func Of(name string, input json.RawMessage) (string, Kind) {
	var in struct {
		FilePath    string `json:"file_path"`
		Command     string `json:"command"`
		Description string `json:"description"`
		Pattern     string `json:"pattern"`
		URL         string `json:"url"`
	}
	_ = json.Unmarshal(input, &in)
	switch name {
	case "Read":
		return "Read " + or(in.FilePath, "file"), KindRead
	case "Edit":
		return "Edit " + or(in.FilePath, "file"), KindEdit
	case "Write":
		return "Write " + or(in.FilePath, "file"), KindEdit
	case "Bash":
		if in.Description != "" {
			return in.Description, KindExecute
		}
		return "Run: " + prefix(in.Command, 50), KindExecute
	case "Grep", "Glob":
		return "Search: " + in.Pattern, KindSearch
	case "WebFetch":
		return "Fetch " + in.URL, KindFetch
	default:
		return name, KindOther
	}
}

// prefix returns the first n characters of s, never splitting one.
func prefix(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}
