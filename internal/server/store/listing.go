package store

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
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
//     follow-up, an ACP prompt), hook.UserPromptSubmit's prompt; see
//     promptOf. An idle start (relay.run_started without a prompt) has none.
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
		f.Prompt, f.LegacyPrompt = promptOf(obj)
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
		f.Prompt, f.LegacyPrompt = promptOf(obj)
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

// promptOf reads the prompt of relay.run_started or relay.message_sent: its
// text, else (a prompt of images or files alone) a description of its blocks
// (DescribeBlocks). Data of schema version 1 (no "v") held, for a prompt
// given with content blocks, a one-line summary in place of its text
// ("[text, 30 B]", "prompt text + [image x.png, 2.0 KiB]"): legacy reports
// such a summary.
func promptOf(obj map[string]json.RawMessage) (prompt string, legacy bool) {
	text := jsonString(obj["prompt"])
	if jsonInt(obj["v"]) < 2 {
		return text, legacySummary.MatchString(text)
	}
	if strings.TrimSpace(text) != "" {
		return text, false
	}
	var blocks []wire.PromptBlock
	if json.Unmarshal(obj["blocks"], &blocks) != nil {
		return "", false
	}
	total := int(jsonInt(obj["blocks_total"]))
	return DescribeBlocks(blocks, max(total, len(blocks))), false
}

// legacySummary matches what content.Summary wrote into version 1 events:
// "prompt text" or "[…]" items joined by " + ", the last maybe "N more
// blocks".
var legacySummary = regexp.MustCompile(`^(prompt text|\[[^\[\]]*\])( \+ (\[[^\[\]]*\]|\d+ more blocks))*$`)

// maxDescribed bounds the blocks DescribeBlocks names.
const maxDescribed = 4

// DescribeBlocks names a prompt's content blocks for people, for a prompt
// that has no text: "image.png (PNG, 120.0 KiB)"; several are joined with
// ", " and after the fourth "and N more" counts the rest (of total, the
// number of blocks the prompt had). Text blocks, blank in a prompt without
// text, are left out. A block's name is its own (an ACP resource link's),
// else the last element of its path or URI, else its type. The dashboard's
// session page (session-model.js) words a turn's blocks the same way.
func DescribeBlocks(blocks []wire.PromptBlock, total int) string {
	var parts []string
	rest := max(total-len(blocks), 0)
	for _, b := range blocks {
		switch {
		case b.Type == wire.BlockText:
		case len(parts) == maxDescribed:
			rest++
		default:
			parts = append(parts, describeBlock(b))
		}
	}
	out := strings.Join(parts, ", ")
	if rest > 0 && out != "" {
		out += fmt.Sprintf(" and %d more", rest)
	}
	return out
}

func describeBlock(b wire.PromptBlock) string {
	name := b.Name
	if name == "" && b.Path != "" {
		p := b.Path
		if i := strings.IndexAny(p, "?#"); i > 0 && strings.Contains(p, "://") {
			p = p[:i]
		}
		name = path.Base(strings.TrimRight(p, "/"))
	}
	if name == "" || name == "." || name == "/" {
		name = b.Type
	}
	var details []string
	if f := mediaName(b.MediaType); f != "" {
		details = append(details, f)
	}
	if b.Size > 0 {
		details = append(details, wire.HumanSize(b.Size))
	}
	if len(details) == 0 {
		return name
	}
	return name + " (" + strings.Join(details, ", ") + ")"
}

// mediaName is a media type as people call it: PNG, JPEG, GIF, WebP,
// text; others as they are.
func mediaName(media string) string {
	switch strings.ToLower(media) {
	case "image/png":
		return "PNG"
	case "image/jpeg":
		return "JPEG"
	case "image/gif":
		return "GIF"
	case "image/webp":
		return "WebP"
	case "text/plain":
		return "text"
	}
	return media
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
//     then interaction_id, then seq, then the title), as TitleOf makes it;
//     a legacy summary (Facts.LegacyPrompt) only when no event has a real
//     prompt (TitleRank).
//   - Project: the Cwd of highest rank (a run's over a hook's), of those the
//     earliest as for Title.
//   - Source: terminal over acp over background: hooks and transcript lines
//     only come from terminal sessions, whatever else they have.
//   - Model: of the events with a model, the latest (same key, greatest
//     first): the latest run's system/init, or its relay.run_started before
//     the CLI said which model it runs.
//   - BilledTo: of the events of highest BilledRank (relay.billing_source
//     over a system/init line's apiKeySource), the latest, as for Model:
//     where the latest run's credentials came from (billing.go).
type Listing struct {
	Title       string   `json:"title,omitempty"`
	TitleKey    EventKey `json:"title_key"`
	TitleRank   int      `json:"title_rank,omitempty"` // titleReal or titleLegacy; 0 in rows stored before it existed
	Project     string   `json:"project,omitempty"`
	ProjectRank int      `json:"project_rank,omitempty"`
	ProjectKey  EventKey `json:"project_key"`
	Source      string   `json:"source,omitempty"`
	Model       string   `json:"model,omitempty"`
	ModelKey    EventKey `json:"model_key"`
	BilledTo    string   `json:"billed_to,omitempty"`
	BilledRank  int      `json:"billed_rank,omitempty"`
	BilledKey   EventKey `json:"billed_key"`
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

// Ranks of a title: a prompt as given outranks a legacy summary.
const (
	titleLegacy = 1
	titleReal   = 2
)

// Apply folds one event's facts in and reports whether a field changed.
func (l *Listing) Apply(ev Event, f Facts) (changed bool) {
	k := KeyOf(ev)
	if title := TitleOf(f.Prompt); title != "" {
		rank := titleReal
		if f.LegacyPrompt {
			rank = titleLegacy
		}
		if rank > l.TitleRank || (rank == l.TitleRank && (l.Title == "" || first(k, title, l.TitleKey, l.Title))) {
			l.Title, l.TitleKey, l.TitleRank, changed = title, k, rank, true
		}
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
	if f.BilledTo != "" && (f.BilledRank > l.BilledRank ||
		(f.BilledRank == l.BilledRank && first(l.BilledKey, l.BilledTo, k, f.BilledTo))) {
		l.BilledTo, l.BilledRank, l.BilledKey, changed = f.BilledTo, f.BilledRank, k, true
	}
	return changed
}

// Fill copies the fold's fields into s.
func (l *Listing) Fill(s *Session) {
	s.Title, s.Project, s.Source, s.Model, s.BilledTo = l.Title, l.Project, l.Source, l.Model, l.BilledTo
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
