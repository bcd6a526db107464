package store

import (
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/claude-relay/claude-relay/internal/wire"
)

// Session sources (Session.Source).
const (
	SourceBackground = "background"
	SourceTerminal   = "terminal"
	SourceACP        = "acp"
)

// Bounds of the list fields.
const (
	// MaxTitleRunes bounds Session.Title, the "…" that marks a cut included.
	MaxTitleRunes = 200
	// MaxSearchText bounds a session's search text (bytes): a search reads
	// one bounded column per session, never its events.
	MaxSearchText = 64 << 10
	// maxSearchItem bounds one prompt in the search text, so one long
	// prompt does not crowd out the rest.
	maxSearchItem = 4 << 10
)

// listingFacts reads the list fields' facts of one event:
//
//   - Prompt: relay.run_started's prompt, relay.message_sent's (a live run's
//     follow-up), hook.UserPromptSubmit's prompt.
//   - Cwd: relay.run_started's cwd (CwdRun), any hook event's cwd (CwdHook).
//   - Source: relay.run_started's mode ("terminal", "acp", else background);
//     any hook.* or transcript.* event shows a terminal session.
//   - Model: system/init's model (the model the CLI runs), relay.run_started's
//     model (the one the run asked for), a terminal transcript's assistant
//     message's model (a terminal run has no init event).
//   - Tools: the names of an assistant message's tool_use blocks (the CLI's
//     "assistant" events and the terminal's transcript.assistant lines),
//     hook.PreToolUse's tool_name.
func listingFacts(f *Facts, ev Event, obj map[string]json.RawMessage, typ string) {
	switch et := ev.EventType; {
	case et == EventRunStarted:
		f.Prompt = jsonString(obj["prompt"])
		f.Cwd, f.CwdRank = jsonString(obj["cwd"]), CwdRun
		f.Model = jsonString(obj["model"])
		switch jsonString(obj["mode"]) {
		case wire.ModeTerminal:
			f.Source = SourceTerminal
		case wire.ModeACP:
			f.Source = SourceACP
		default:
			f.Source = SourceBackground
		}
	case et == wire.TypeMessageSent:
		f.Prompt = jsonString(obj["prompt"])
	case strings.HasPrefix(et, "hook."):
		f.Source = SourceTerminal
		f.Cwd, f.CwdRank = jsonString(obj["cwd"]), CwdHook
		switch et {
		case "hook.UserPromptSubmit":
			f.Prompt = jsonString(obj["prompt"])
		case "hook.PreToolUse":
			if name := jsonString(obj["tool_name"]); name != "" {
				f.Tools = []string{name}
			}
		}
	case strings.HasPrefix(et, "transcript."):
		f.Source = SourceTerminal
		if et == "transcript.assistant" && typ == "assistant" {
			f.Tools = toolNames(obj["message"])
			f.Model = transcriptModel(obj["message"])
		}
	case et == "system" && typ == "system" && jsonString(obj["subtype"]) == "init":
		f.Model = jsonString(obj["model"])
	case et == "assistant" && typ == "assistant":
		f.Tools = toolNames(obj["message"])
	}
	if f.Cwd == "" {
		f.CwdRank = 0
	}
}

// toolNames returns the names of a message's tool_use content blocks.
func toolNames(message json.RawMessage) []string {
	var m struct {
		Content []map[string]json.RawMessage `json:"content"`
	}
	if len(message) == 0 || message[0] != '{' || json.Unmarshal(message, &m) != nil {
		return nil
	}
	var names []string
	for _, block := range m.Content {
		if jsonString(block["type"]) == "tool_use" {
			if name := jsonString(block["name"]); name != "" {
				names = append(names, name)
			}
		}
	}
	return names
}

// Listing is the fold behind a session's Title, Project, Source and Model.
// Each field keeps the key of the event it came from, so that the outcome
// does not depend on the order in which events arrive:
//
//   - Title: of the events with a prompt, the earliest (envelope timestamp,
//     then interaction_id, then seq, then the title), as TitleOf makes it.
//   - Project: the Cwd of highest rank (a run's over a hook's), of those the
//     earliest as for Title.
//   - Source: terminal over acp over background: hooks and transcript lines
//     only come from terminal sessions, whatever else they have.
//   - Model: of the events with a model, the latest (same key, greatest
//     first): the latest run's system/init, or its relay.run_started before
//     the CLI said which model it runs.
type Listing struct {
	Title       string   `json:"title,omitempty"`
	TitleKey    EventKey `json:"title_key"`
	Project     string   `json:"project,omitempty"`
	ProjectRank int      `json:"project_rank,omitempty"`
	ProjectKey  EventKey `json:"project_key"`
	Source      string   `json:"source,omitempty"`
	Model       string   `json:"model,omitempty"`
	ModelKey    EventKey `json:"model_key"`
}

// EventKey orders events for the list fields: envelope timestamp, then
// interaction_id (byte order), then seq.
type EventKey struct {
	At          time.Time `json:"at"`
	Interaction string    `json:"interaction,omitempty"`
	Seq         int64     `json:"seq,omitempty"`
}

// KeyOf is ev's EventKey.
func KeyOf(ev Event) EventKey {
	return EventKey{At: ev.Timestamp.UTC(), Interaction: ev.InteractionID, Seq: ev.Seq}
}

// Compare returns -1, 0 or +1 as k orders before, with or after o.
func (k EventKey) Compare(o EventKey) int {
	if c := k.At.Compare(o.At); c != 0 {
		return c
	}
	if c := strings.Compare(k.Interaction, o.Interaction); c != 0 {
		return c
	}
	switch {
	case k.Seq < o.Seq:
		return -1
	case k.Seq > o.Seq:
		return 1
	}
	return 0
}

// first reports whether (k, v) orders before (ok, ov): values break ties of
// equal keys, so that the fold is order-independent even then.
func first(k EventKey, v string, ok EventKey, ov string) bool {
	c := k.Compare(ok)
	return c < 0 || (c == 0 && v < ov)
}

var sourceRank = map[string]int{SourceBackground: 1, SourceACP: 2, SourceTerminal: 3}

// Apply folds one event's facts in and reports whether a field changed.
func (l *Listing) Apply(ev Event, f Facts) (changed bool) {
	k := KeyOf(ev)
	if title := TitleOf(f.Prompt); title != "" && (l.Title == "" || first(k, title, l.TitleKey, l.Title)) {
		l.Title, l.TitleKey, changed = title, k, true
	}
	if cwd := clean(f.Cwd); cwd != "" && (f.CwdRank > l.ProjectRank ||
		(f.CwdRank == l.ProjectRank && first(k, cwd, l.ProjectKey, l.Project))) {
		l.Project, l.ProjectRank, l.ProjectKey, changed = cwd, f.CwdRank, k, true
	}
	if sourceRank[f.Source] > sourceRank[l.Source] {
		l.Source, changed = f.Source, true
	}
	if model := clean(f.Model); model != "" && (l.Model == "" || first(l.ModelKey, l.Model, k, model)) {
		l.Model, l.ModelKey, changed = model, k, true
	}
	return changed
}

// Fill copies the fold's fields into s.
func (l *Listing) Fill(s *Session) {
	s.Title, s.Project, s.Source, s.Model = l.Title, l.Project, l.Source, l.Model
}

// TitleOf makes a title of a prompt: on one line (runs of white space
// become one space), trimmed, at most MaxTitleRunes runes with "…" ending
// a cut one; NUL (which PostgreSQL's text refuses) becomes U+FFFD.
func TitleOf(prompt string) string {
	t := strings.Join(strings.Fields(clean(prompt)), " ")
	if utf8.RuneCountInString(t) <= MaxTitleRunes {
		return t
	}
	return truncateRunes(t, MaxTitleRunes-1) + "…"
}

// truncateRunes returns the first n runes of s.
func truncateRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// clean makes decoded event text storable: NUL, which PostgreSQL's text
// refuses, becomes U+FFFD (decoding already replaced invalid UTF-8).
func clean(s string) string {
	if !strings.ContainsRune(s, 0) {
		return s
	}
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

// SearchNeedle normalizes a ListOptions.Query the way search text is
// normalized: lower case, runs of white space as one space, trimmed. ""
// means no filter.
func SearchNeedle(q string) string {
	return strings.ToLower(strings.Join(strings.Fields(clean(q)), " "))
}

// SearchItems are what an event adds to its session's search text: its
// prompt, the tools it calls and its conversation-ID candidate (all of
// them, as normalized by SearchNeedle; a long prompt cut).
func SearchItems(f Facts) []string {
	var items []string
	if p := SearchNeedle(f.Prompt); p != "" {
		items = append(items, truncateBytes(p, maxSearchItem))
	}
	for _, name := range f.Tools {
		if n := SearchNeedle(name); n != "" {
			items = append(items, truncateBytes(n, maxSearchItem))
		}
	}
	if c := SearchNeedle(f.Candidate); c != "" {
		items = append(items, truncateBytes(c, maxSearchItem))
	}
	return items
}

// truncateBytes cuts s to at most n bytes on a rune boundary.
func truncateBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// AddSearch adds items to a session's search text and reports whether it
// changed. The text is the distinct items, each on a line of its own
// ("\nitem\n…\n"), so a needle (which has no newline) matches within one
// item and an item is added once. Items that would take the text past
// MaxSearchText are left out: the first ones stay searchable.
func AddSearch(text string, items ...string) (string, bool) {
	changed := false
	for _, it := range items {
		if it == "" || strings.Contains(it, "\n") {
			continue
		}
		if text == "" {
			text = "\n"
		}
		if strings.Contains(text, "\n"+it+"\n") || len(text)+len(it)+1 > MaxSearchText {
			continue
		}
		text += it + "\n"
		changed = true
	}
	return text, changed
}

// SearchMatches reports whether a session's search text matches a needle
// (from SearchNeedle): the rule the SQL stores apply with instr/strpos.
func SearchMatches(text, needle string) bool {
	return needle == "" || strings.Contains(text, needle)
}

// transcriptModel is the model of a transcript assistant message; the CLI
// writes "<synthetic>" for messages it made itself (an API error shown as
// a reply), which name no model.
func transcriptModel(msg json.RawMessage) string {
	var m struct {
		Model string `json:"model"`
	}
	if json.Unmarshal(msg, &m) != nil || strings.HasPrefix(m.Model, "<") {
		return ""
	}
	return m.Model
}
