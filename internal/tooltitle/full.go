package tooltitle

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Full names a tool call by what it will do, for a person deciding whether
// to allow it: the whole Bash command, the path of a file tool, the URL of a
// fetch. The model's own description may follow, never replace it, since a
// harmless-sounding description can front a destructive command. Nothing is
// cut: wrapping is the renderer's job.
func Full(name string, input json.RawMessage) string {
	var in struct {
		FilePath     string `json:"file_path"`
		NotebookPath string `json:"notebook_path"`
		Command      string `json:"command"`
		Description  string `json:"description"`
		Pattern      string `json:"pattern"`
		Path         string `json:"path"`
		URL          string `json:"url"`
		Query        string `json:"query"`
		Prompt       string `json:"prompt"`
		Plan         string `json:"plan"`
		Questions    []struct {
			Question string `json:"question"`
		} `json:"questions"`
	}
	_ = json.Unmarshal(input, &in)
	withDesc := func(s string) string {
		if in.Description == "" || in.Description == s {
			return s
		}
		return s + " — " + in.Description
	}
	switch name {
	case "Bash":
		if in.Command == "" {
			return withDesc("Bash (no command)")
		}
		return withDesc("$ " + in.Command)
	case "Read", "Edit", "MultiEdit", "Write":
		return name + " " + or(in.FilePath, "(no path)")
	case "NotebookEdit":
		return name + " " + or(in.NotebookPath, "(no path)")
	case "Grep", "Glob":
		s := name + " " + in.Pattern
		if in.Path != "" {
			s += " in " + in.Path
		}
		return s
	case "WebFetch":
		return withDesc("Fetch " + or(in.URL, "(no URL)"))
	case "WebSearch":
		return "Search the web: " + in.Query
	case "Task", "Agent":
		return withDesc("Subagent: " + firstLineOf(in.Prompt))
	case "ExitPlanMode":
		return "Plan: " + or(strings.TrimSpace(in.Plan), "(no plan text)")
	case "AskUserQuestion":
		var qs []string
		for _, q := range in.Questions {
			qs = append(qs, q.Question)
		}
		return "Question: " + or(strings.Join(qs, " / "), "(no question)")
	}
	// Anything else (MCP tools among them): the name and the whole input,
	// since we cannot know which field matters.
	compact := strings.TrimSpace(string(input))
	var v any
	if json.Unmarshal(input, &v) == nil {
		if b, err := json.Marshal(v); err == nil {
			compact = string(b)
		}
	}
	if compact == "" || compact == "{}" || compact == "null" {
		return name
	}
	return name + " " + compact
}

// Diff is a short unified-style preview of a file tool's change, for a
// person deciding whether to allow it: the removed lines with "-", the added
// ones with "+". It shows at most maxLines lines and says how many more
// there are; it is empty for tools that change no file.
func Diff(name string, input json.RawMessage, maxLines int) string {
	var in struct {
		Content   string `json:"content"`
		OldString string `json:"old_string"`
		NewString string `json:"new_string"`
		Edits     []struct {
			OldString string `json:"old_string"`
			NewString string `json:"new_string"`
		} `json:"edits"`
	}
	if json.Unmarshal(input, &in) != nil {
		return ""
	}
	var lines []string
	add := func(prefix, text string) {
		if text == "" {
			return
		}
		for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
			lines = append(lines, prefix+l)
		}
	}
	switch name {
	case "Write":
		add("+", in.Content)
	case "Edit":
		add("-", in.OldString)
		add("+", in.NewString)
	case "MultiEdit":
		for _, e := range in.Edits {
			add("-", e.OldString)
			add("+", e.NewString)
		}
	default:
		return ""
	}
	if maxLines > 0 && len(lines) > maxLines {
		more := len(lines) - maxLines
		lines = append(lines[:maxLines], fmt.Sprintf("… %d more %s", more, plural(more, "line", "lines")))
	}
	return strings.Join(lines, "\n")
}

func or(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
