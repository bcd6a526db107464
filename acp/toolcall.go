package acp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/tooltitle"
)

// maxDiffFile bounds how much of a file a Write's diff or an Edit's line
// lookup reads: a diff of a huge file helps nobody and would make one
// session/update megabytes long.
const maxDiffFile = 1 << 20

// acpToolPrefix is how seed 004 §13.2 names the CLI's tools when an ACP
// agent serves them over its own MCP server; they are the same tools.
const acpToolPrefix = "mcp__acp__"

// toolCall is what the translator remembers of a tool_use until its
// tool_result arrives (seed 004 §5.1's ToolUse cache): the result alone
// names no tool, and an edit's completed update must repeat its diff.
type toolCall struct {
	id     string
	name   string // without acpToolPrefix
	input  json.RawMessage
	parent string // the Task tool_use this call runs under, if any
	plan   bool   // a TodoWrite: shown as a plan, not as a tool call
	info   toolInfo
}

// toolInfo is how a tool call looks to the client (seed 004 §5.3).
type toolInfo struct {
	title     string
	kind      acpsdk.ToolKind
	locations []acpsdk.ToolCallLocation
	content   []acpsdk.ToolCallContent // diffs, a plan's text
}

// fileReader reads a file for a diff's old text; nil means "do not look at
// the disk", which replay wants: the file has changed since.
type fileReader func(path string) ([]byte, bool)

// readSmallFile is the live fileReader: the file's bytes when it exists,
// is a regular file and is at most maxDiffFile long.
func readSmallFile(path string) ([]byte, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	// Read one byte past the limit: the file may have grown since Stat.
	data, err := io.ReadAll(io.LimitReader(f, maxDiffFile+1))
	if err != nil || len(data) > maxDiffFile {
		return nil, false
	}
	return data, true
}

// toolInput is the union of the input fields the mapping looks at.
type toolInput struct {
	FilePath     string `json:"file_path"`
	NotebookPath string `json:"notebook_path"`
	Path         string `json:"path"`
	Offset       int    `json:"offset"`
	Content      string `json:"content"`
	OldString    string `json:"old_string"`
	NewString    string `json:"new_string"`
	Edits        []struct {
		OldString string `json:"old_string"`
		NewString string `json:"new_string"`
	} `json:"edits"`
	Plan string `json:"plan"`
}

// describeTool gives a tool call its title, kind, locations and content.
// Titles follow seed 004 (Read/Edit/Write with the path, Grep/Glob as
// "Search: …", WebFetch with the URL) except Bash, whose title is the whole
// command with the description after it (tooltitle.Full): a harmless
// description must never hide what runs, and the reference adapter's
// "Terminal" title is the flaw issue 14 names.
func describeTool(name string, input json.RawMessage, cwd string, read fileReader) toolInfo {
	var in toolInput
	_ = json.Unmarshal(input, &in) // a bad input still gets a title
	info := toolInfo{title: tooltitle.Full(name, input), kind: toolKind(name)}
	switch name {
	case "Read", "Edit", "Write", "Grep", "Glob", "WebFetch":
		info.title, _ = tooltitle.Of(name, input)
	case "ExitPlanMode":
		info.title = "Ready to code?"
		if plan := strings.TrimSpace(in.Plan); plan != "" {
			info.content = []acpsdk.ToolCallContent{acpsdk.ToolContent(acpsdk.TextBlock(plan))}
		}
	case "EnterPlanMode":
		info.title = "Switch to plan mode"
	}
	info.locations = locations(name, in, cwd, read)
	info.content = append(info.content, diffs(name, in, cwd, read)...)
	return info
}

// toolKind maps a tool to an ACP kind. No Claude Code tool deletes or
// moves files itself (Bash does, and is execute), so delete and move are
// never chosen.
func toolKind(name string) acpsdk.ToolKind {
	switch name {
	case "Read", "NotebookRead":
		return acpsdk.ToolKindRead
	case "Edit", "MultiEdit", "Write", "NotebookEdit":
		return acpsdk.ToolKindEdit
	case "Bash", "BashOutput", "KillShell", "KillBash", "Monitor":
		return acpsdk.ToolKindExecute
	case "Grep", "Glob", "LS", "ToolSearch":
		return acpsdk.ToolKindSearch
	case "WebFetch", "WebSearch":
		return acpsdk.ToolKindFetch
	case "Task", "Agent", "TodoWrite":
		return acpsdk.ToolKindThink
	case "ExitPlanMode", "EnterPlanMode":
		return acpsdk.ToolKindSwitchMode
	}
	return acpsdk.ToolKindOther
}

// locations are the files a tool touches, for the client's follow-along:
// the file with its line where known (a Read's offset, where an Edit's
// old text sits now), or the directory a search runs in.
func locations(name string, in toolInput, cwd string, read fileReader) []acpsdk.ToolCallLocation {
	var path string
	var line int
	switch name {
	case "Read", "Write", "MultiEdit":
		path = in.FilePath
		if name == "Read" && in.Offset > 0 {
			line = in.Offset
		}
	case "Edit":
		path = in.FilePath
		line = lineOf(abs(cwd, path), in.OldString, read)
	case "NotebookEdit", "NotebookRead":
		path = in.NotebookPath
	case "Grep", "Glob", "LS":
		path = in.Path
	}
	if path == "" {
		return nil
	}
	loc := acpsdk.ToolCallLocation{Path: abs(cwd, path)}
	if line > 0 {
		loc.Line = acpsdk.Ptr(line)
	}
	return []acpsdk.ToolCallLocation{loc}
}

// lineOf is the 1-based line where old starts in the file, or 0.
func lineOf(path, old string, read fileReader) int {
	if read == nil || old == "" {
		return 0
	}
	data, ok := read(path)
	if !ok {
		return 0
	}
	i := bytes.Index(data, []byte(old))
	if i < 0 {
		return 0
	}
	return 1 + bytes.Count(data[:i], []byte("\n"))
}

// diffs are the diff blocks of a file change. Edit and MultiEdit show the
// replaced text against its replacement, as the reference adapter does; a
// Write shows the file on disk against the new content, or no old text when
// there is no such file (a new file).
func diffs(name string, in toolInput, cwd string, read fileReader) []acpsdk.ToolCallContent {
	path := abs(cwd, in.FilePath)
	if in.FilePath == "" {
		return nil
	}
	switch name {
	case "Edit":
		return []acpsdk.ToolCallContent{acpsdk.ToolDiffContent(path, in.NewString, in.OldString)}
	case "MultiEdit":
		out := make([]acpsdk.ToolCallContent, 0, len(in.Edits))
		for _, e := range in.Edits {
			out = append(out, acpsdk.ToolDiffContent(path, e.NewString, e.OldString))
		}
		return out
	case "Write":
		if read != nil {
			if old, ok := read(path); ok {
				return []acpsdk.ToolCallContent{acpsdk.ToolDiffContent(path, in.Content, string(old))}
			}
		}
		return []acpsdk.ToolCallContent{acpsdk.ToolDiffContent(path, in.Content)}
	}
	return nil
}

// abs resolves a tool's relative path against the session's directory,
// where the CLI runs.
func abs(cwd, p string) string {
	if p == "" || filepath.IsAbs(p) || cwd == "" {
		return p
	}
	return filepath.Join(cwd, p)
}

// start is the tool_call update that announces tc.
func (tc *toolCall) start() acpsdk.SessionUpdate {
	u := acpsdk.StartToolCall(acpsdk.ToolCallId(tc.id), tc.info.title,
		acpsdk.WithStartKind(tc.info.kind),
		acpsdk.WithStartStatus(acpsdk.ToolCallStatusPending),
		acpsdk.WithStartContent(tc.info.content),
	)
	// Set directly: WithStartLocations would invent a rawInput.path.
	u.ToolCall.Locations = tc.info.locations
	u.ToolCall.RawInput = rawJSON(tc.input)
	u.ToolCall.Meta = tc.meta()
	return u
}

// refresh is the tool_call_update for a tool_use seen again with another
// input: the client gets the complete input whichever line came first.
func (tc *toolCall) refresh() acpsdk.SessionUpdate {
	u := acpsdk.UpdateToolCall(acpsdk.ToolCallId(tc.id),
		acpsdk.WithUpdateTitle(tc.info.title),
		acpsdk.WithUpdateKind(tc.info.kind),
		acpsdk.WithUpdateContent(tc.info.content),
		acpsdk.WithUpdateLocations(tc.info.locations),
		acpsdk.WithUpdateRawInput(rawJSON(tc.input)),
	)
	u.ToolCallUpdate.Meta = tc.meta()
	return u
}

// meta names the CLI's tool, and the Task it runs under, for clients that
// want more than the kind (the reference adapter sends claudeCode.toolName
// too).
func (tc *toolCall) meta() map[string]any {
	m := map[string]any{"toolName": tc.name}
	if tc.parent != "" {
		m["parentToolUseId"] = tc.parent
	}
	return map[string]any{"claudeCode": m}
}

// finish is the tool_call_update for tc's result: completed or failed,
// the result as content, and the tool's own structured result (or, when
// the line has none, the result content) as rawOutput. A completed edit
// keeps its diff as content: the confirmation text says less.
func (tc *toolCall) finish(tr streamjson.ToolResult, toolUseResult json.RawMessage) acpsdk.SessionUpdate {
	status := acpsdk.ToolCallStatusCompleted
	if tr.IsError {
		status = acpsdk.ToolCallStatusFailed
	}
	content := resultContent(tr, tc.info.kind)
	if !tr.IsError && tc.info.kind == acpsdk.ToolKindEdit {
		if d := tc.completedDiffs(toolUseResult); len(d) > 0 {
			content = d
		}
	}
	raw := rawJSON(toolUseResult)
	if raw == nil {
		raw = rawJSON(tr.Content)
	}
	u := acpsdk.UpdateToolCall(acpsdk.ToolCallId(tc.id),
		acpsdk.WithUpdateStatus(status),
		acpsdk.WithUpdateContent(content),
		acpsdk.WithUpdateRawOutput(raw),
	)
	if loc := tc.patchLocation(toolUseResult); loc != nil {
		u.ToolCallUpdate.Locations = loc
	}
	return u
}

// completedDiffs is the diff a completed edit keeps. A Write's result
// names the file as it was (originalFile, null for a new file), which is
// better than what was on disk when the call was announced, and the only
// old text replay has.
func (tc *toolCall) completedDiffs(toolUseResult json.RawMessage) []acpsdk.ToolCallContent {
	var r struct {
		Type         string  `json:"type"`
		FilePath     string  `json:"filePath"`
		Content      *string `json:"content"`
		OriginalFile *string `json:"originalFile"`
	}
	if tc.name == "Write" && json.Unmarshal(toolUseResult, &r) == nil && r.FilePath != "" && r.Content != nil {
		if r.OriginalFile != nil && r.Type != "create" {
			return []acpsdk.ToolCallContent{acpsdk.ToolDiffContent(r.FilePath, *r.Content, *r.OriginalFile)}
		}
		return []acpsdk.ToolCallContent{acpsdk.ToolDiffContent(r.FilePath, *r.Content)}
	}
	var d []acpsdk.ToolCallContent
	for _, c := range tc.info.content {
		if c.Diff != nil {
			d = append(d, c)
		}
	}
	return d
}

// patchLocation is where an edit landed, from the result's structured
// patch (filePath and the first hunk's newStart); nil when the result has
// none.
func (tc *toolCall) patchLocation(toolUseResult json.RawMessage) []acpsdk.ToolCallLocation {
	if tc.info.kind != acpsdk.ToolKindEdit {
		return nil
	}
	var r struct {
		FilePath        string `json:"filePath"`
		StructuredPatch []struct {
			NewStart int `json:"newStart"`
		} `json:"structuredPatch"`
	}
	if json.Unmarshal(toolUseResult, &r) != nil || r.FilePath == "" || len(r.StructuredPatch) == 0 || r.StructuredPatch[0].NewStart <= 0 {
		return nil
	}
	return []acpsdk.ToolCallLocation{{Path: r.FilePath, Line: acpsdk.Ptr(r.StructuredPatch[0].NewStart)}}
}

// resultContent turns a tool_result's content into ACP content: text, and
// images as image blocks. Output of commands, reads and searches is fenced,
// because clients render text content as Markdown and would reflow it.
func resultContent(tr streamjson.ToolResult, kind acpsdk.ToolKind) []acpsdk.ToolCallContent {
	c := tr.Parse()
	fence := kind == acpsdk.ToolKindExecute || kind == acpsdk.ToolKindRead || kind == acpsdk.ToolKindSearch
	text := func(s string) []acpsdk.ToolCallContent {
		s = strings.TrimSpace(stripToolUseError(s))
		if s == "" {
			return nil
		}
		if fence {
			s = fenced(s)
		}
		return []acpsdk.ToolCallContent{acpsdk.ToolContent(acpsdk.TextBlock(s))}
	}
	switch c.Kind {
	case streamjson.ToolResultImage:
		return []acpsdk.ToolCallContent{imageContent(base64.StdEncoding.EncodeToString(c.Image.Data), c.Image.MediaType)}
	case streamjson.ToolResultMixed:
		var out []acpsdk.ToolCallContent
		for _, b := range c.Blocks {
			switch {
			case b.Type == streamjson.BlockText:
				out = append(out, text(b.Text)...)
			case b.Source != nil && b.Source.Type == "base64":
				out = append(out, imageContent(b.Source.Data, b.Source.MediaType))
			}
		}
		return out
	}
	return text(c.Text)
}

func imageContent(data, mediaType string) acpsdk.ToolCallContent {
	return acpsdk.ToolContent(acpsdk.ImageBlock(data, mediaType))
}

// stripToolUseError unwraps the CLI's <tool_use_error> marker, which is
// for the model, not for people.
func stripToolUseError(s string) string {
	t := strings.TrimSpace(s)
	if inner, ok := strings.CutPrefix(t, "<tool_use_error>"); ok {
		if inner, ok = strings.CutSuffix(inner, "</tool_use_error>"); ok {
			return inner
		}
	}
	return s
}

// fenced wraps s in a Markdown code fence longer than any backtick run in
// s, so the output cannot close it early.
func fenced(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	f := strings.Repeat("`", max(3, longest+1))
	return f + "\n" + s + "\n" + f
}

// rawJSON passes JSON on unchanged (numbers keep their precision and keys
// their order); nil for nothing or null, so the field is left out.
func rawJSON(raw json.RawMessage) any {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) || !json.Valid(t) {
		return nil
	}
	return json.RawMessage(t)
}

// todoPlan turns a TodoWrite input into a plan update: the client shows
// the model's task list as its plan instead of a tool call. TodoWrite has
// no priorities (early CLIs had one, which is kept), so entries are medium.
func todoPlan(input json.RawMessage) acpsdk.SessionUpdate {
	var in struct {
		Todos []struct {
			Content  string `json:"content"`
			Status   string `json:"status"`
			Priority string `json:"priority"`
		} `json:"todos"`
	}
	_ = json.Unmarshal(input, &in)
	entries := make([]acpsdk.PlanEntry, 0, len(in.Todos))
	for _, td := range in.Todos {
		entries = append(entries, acpsdk.PlanEntry{
			Content:  td.Content,
			Status:   planStatus(td.Status),
			Priority: planPriority(td.Priority),
		})
	}
	return acpsdk.UpdatePlan(entries...)
}

func planStatus(s string) acpsdk.PlanEntryStatus {
	switch acpsdk.PlanEntryStatus(s) {
	case acpsdk.PlanEntryStatusInProgress, acpsdk.PlanEntryStatusCompleted:
		return acpsdk.PlanEntryStatus(s)
	}
	return acpsdk.PlanEntryStatusPending
}

func planPriority(s string) acpsdk.PlanEntryPriority {
	switch acpsdk.PlanEntryPriority(s) {
	case acpsdk.PlanEntryPriorityHigh, acpsdk.PlanEntryPriorityLow:
		return acpsdk.PlanEntryPriority(s)
	}
	return acpsdk.PlanEntryPriorityMedium
}

// permissionToolCall is the toolCall of a session/request_permission for a
// tool the CLI asks about: the title, kind, locations and diff its
// tool_call has, so the client shows what it is approving. Fields with
// nothing to say are left out, so a client keeps what the tool_call said
// (a plan's text, when the CLI asks about ExitPlanMode with an empty
// input). It reads no translator state: any goroutine may call it.
func permissionToolCall(toolUseID, toolName string, input json.RawMessage, cwd string) acpsdk.ToolCallUpdate {
	name := strings.TrimPrefix(toolName, acpToolPrefix)
	info := describeTool(name, input, cwd, readSmallFile)
	tc := acpsdk.ToolCallUpdate{
		ToolCallId: acpsdk.ToolCallId(toolUseID),
		Title:      &info.title,
		Kind:       &info.kind,
		Status:     acpsdk.Ptr(acpsdk.ToolCallStatusPending),
		Content:    info.content,
		Locations:  info.locations,
		RawInput:   rawJSON(input),
	}
	if name == "TodoWrite" {
		tc.Title = acpsdk.Ptr("Update the plan")
	}
	return tc
}
