package terminal

import (
	"bytes"
	"encoding/json"
	"maps"
	"strings"

	"github.com/claude-relay/claude-relay/internal/wire"
)

// The interactive CLI writes no result line, so a visible run counts its
// turns and tokens from the transcript (usageTracker) and its cost from the
// CLI's own records (usage_cost.go). What CLI 2.1.330 writes, as
// seen against the scripted API:
//
//   - one "user" line per prompt with a "promptId" (hooks carry it as
//     "prompt_id"); the turn's tool results and its interruption marker
//     repeat it, the assistant lines do not;
//   - one "assistant" line per content block, each repeating its message's
//     id, the request's "requestId" and the whole message's usage;
//   - after the Stop hooks ran: "system"/"stop_hook_summary" (with
//     "hookErrors" when a hook blocked the stop, and the model goes on),
//     then "system"/"turn_duration" (not always: it waits for background
//     tasks);
//   - an interrupted turn (Esc, or the first Ctrl-C): the partial assistant
//     message ("isAbortedMidStream", usage from message_start) and a "user"
//     line "[Request interrupted by user]" ("… for tool use]" during a
//     tool), with "interruptedMessageId"; no Stop hook, no summary;
//   - a failed turn: a "<synthetic>" assistant line with
//     "isApiErrorMessage" and the StopFailure hook; no Stop hook;
//   - at exit, "cost-state": the conversation's running totals.
//   - `--resume X --fork-session` starts a new file holding a copy of X's
//     lines, written with the fork's first prompt: the copies keep their
//     uuid (and assistant lines say "requestSessionId": X), but every copied
//     user line carries the fork's first promptId.
//
// Every line a turn ends on is written after the turn's last assistant line,
// so a turn is posted when the tailer reads that line: the Stop hook, which
// may arrive before the tailer has read the turn's last lines, never
// triggers a post.

// transcriptLine is what the usage rules read of a transcript line; an
// assistant line is read as wire.TranscriptAssistant.
type transcriptLine struct {
	Type        string          `json:"type"`
	Subtype     string          `json:"subtype"`
	UUID        string          `json:"uuid"`
	SessionID   string          `json:"sessionId"`
	PromptID    string          `json:"promptId"`
	Interrupted string          `json:"interruptedMessageId"`
	HookErrors  json.RawMessage `json:"hookErrors"`
	Message     json.RawMessage `json:"message"`
}

// turnEnd is one turn as relay.turn_completed reports it.
type turnEnd struct {
	Turn           int
	Status         wire.Status
	By             wire.By
	Reason         string
	Stderr         string // what the CLI said: the interruption marker, the API error
	ConversationID string
	Usage          wire.Usage
	Models         map[string]wire.Usage
}

// usageTracker folds a visible run's transcript lines and hook inputs into
// turns. It is not safe for concurrent use; the runner holds its lock.
type usageTracker struct {
	turns   int       // turns ended
	cur     *openTurn // nil between turns
	conv    string    // the sessionId of the latest line that had one
	counted set       // message keys counted in ended turns
	ended   set       // prompt IDs whose turn ended
	copied  set       // uuids of the lines a fork's new transcript copies
	stopped set       // prompt IDs whose Stop hook arrived
	failed  map[string]string
	total   wire.Usage
	models  map[string]wire.Usage
	cost    *costRecord // the latest cost-state line
}

type openTurn struct {
	promptID string
	active   bool // an assistant line was seen
	msgs     map[string]message
	order    []string
}

type message struct {
	model string
	usage wire.Usage
}

// set is a string set that forgets everything past maxSet entries, so an
// endless session stays bounded; forgetting costs at most a repeat count
// of a message written again a very long while later.
type set map[string]struct{}

const maxSet = 200_000

func (s *set) add(k string) {
	if *s == nil || len(*s) >= maxSet {
		*s = set{}
	}
	(*s)[k] = struct{}{}
}

func (s set) has(k string) bool { _, ok := s[k]; return ok }

// interruptMarker starts the user line the CLI writes when a turn is
// interrupted.
const interruptMarker = "[Request interrupted by user"

// line folds one transcript line. before is the turn that ended because
// this line starts a new one (posted before the line goes out), after the
// turn this line ends.
func (t *usageTracker) line(b []byte) (before, after *turnEnd) {
	var l transcriptLine
	if json.Unmarshal(b, &l) != nil || (l.UUID != "" && t.copied.has(l.UUID)) {
		return nil, nil
	}
	if l.SessionID != "" && l.Type != "cost-state" {
		t.conv = l.SessionID
	}
	switch l.Type {
	case "user":
		if text, ok := interruption(l); ok {
			return nil, t.markEnd(l.PromptID, wire.StatusInterrupted, text)
		}
		if l.PromptID != "" && !t.ended.has(l.PromptID) && (t.cur == nil || t.cur.promptID != l.PromptID) {
			before = t.fallbackEnd("the next prompt began before the CLI recorded the end of this turn")
			t.cur = &openTurn{promptID: l.PromptID}
		}
	case "assistant":
		var a wire.TranscriptAssistant
		if json.Unmarshal(b, &a) != nil {
			return nil, nil
		}
		return nil, t.assistant(a)
	case "system":
		switch l.Subtype {
		case "stop_hook_summary":
			// A blocking hook's error makes the model go on.
			if !present(l.HookErrors) {
				return nil, t.markEnd(t.curPrompt(), wire.StatusCompleted, "")
			}
		case "turn_duration":
			if t.cur != nil && t.stopped.has(t.cur.promptID) {
				return nil, t.markEnd(t.cur.promptID, wire.StatusCompleted, "")
			}
		}
	case "cost-state":
		if c, ok := costStateOf(b); ok {
			t.cost = &c
		}
	}
	return before, nil
}

// assistant counts an assistant line's message once: by message ID and
// request ID, latest usage winning (the CLI repeats it on every block's
// line). An API error ends the turn.
func (t *usageTracker) assistant(l wire.TranscriptAssistant) *turnEnd {
	if l.IsAPIError {
		return t.markEnd(t.curPrompt(), wire.StatusFailed, messageText(l.Message.Content))
	}
	if !l.Counted() {
		return nil
	}
	key := l.Key()
	if t.counted.has(key) {
		return nil
	}
	if t.cur == nil {
		t.cur = &openTurn{} // work with no prompt line of its own
	}
	if t.cur.msgs == nil {
		t.cur.msgs = map[string]message{}
	}
	if _, ok := t.cur.msgs[key]; !ok {
		t.cur.order = append(t.cur.order, key)
	}
	t.cur.msgs[key] = message{model: l.Message.Model, usage: l.Message.Usage}
	t.cur.active = true
	return nil
}

// hook takes a hook input: Stop and StopFailure say how the prompt's turn
// ended, for when the transcript does not.
func (t *usageTracker) hook(event string, body []byte) {
	var in struct {
		PromptID string `json:"prompt_id"`
		Error    string `json:"error"`
		Last     string `json:"last_assistant_message"`
	}
	if json.Unmarshal(body, &in) != nil {
		return
	}
	switch event {
	case "Stop":
		t.stopped.add(in.PromptID)
	case "StopFailure":
		if t.failed == nil || len(t.failed) >= maxSet {
			t.failed = map[string]string{}
		}
		said := in.Last
		if said == "" {
			said = "the turn failed: " + in.Error
		}
		t.failed[in.PromptID] = said
	}
}

func (t *usageTracker) curPrompt() string {
	if t.cur == nil {
		return ""
	}
	return t.cur.promptID
}

// markEnd ends the open turn on a line that says it ended. A marker with no
// open turn (a line repeated after the end) ends nothing.
func (t *usageTracker) markEnd(promptID string, status wire.Status, said string) *turnEnd {
	if t.cur == nil || (promptID != "" && t.cur.promptID != "" && promptID != t.cur.promptID) {
		return nil
	}
	e := t.end()
	e.Status, e.Stderr = status, said
	if status == wire.StatusInterrupted {
		e.By, e.Reason = wire.ByTTY, "interrupted in the terminal"
	}
	if status == wire.StatusFailed {
		e.Reason = said
	}
	return e
}

// fallbackEnd ends a turn whose end the transcript did not mark (a CLI that
// writes no summary line, or one that exited mid-turn): the hooks say how
// it went, where they came. A turn with no sign of work is no turn.
func (t *usageTracker) fallbackEnd(otherwise string) *turnEnd {
	c := t.cur
	if c == nil {
		return nil
	}
	failed, isFailed := t.failed[c.promptID]
	stopped := t.stopped.has(c.promptID)
	if !c.active && !isFailed && !stopped {
		t.cur = nil
		return nil
	}
	e := t.end()
	switch {
	case isFailed:
		e.Status, e.Reason, e.Stderr = wire.StatusFailed, failed, failed
	case stopped:
		e.Status = wire.StatusCompleted
	default:
		e.Status, e.Reason = wire.StatusInterrupted, otherwise
	}
	return e
}

// finish ends the turn still open when the CLI has exited and the tailer
// has read the transcript to its end; cancelled says claude-relay stopped
// the CLI.
func (t *usageTracker) finish(cancelled bool) *turnEnd {
	e := t.fallbackEnd("the Claude CLI exited before the turn ended")
	if e != nil && e.Status == wire.StatusInterrupted && cancelled {
		e.By, e.Reason = wire.ByCancelled, "claude-relay stopped the Claude CLI during the turn"
	}
	return e
}

// end closes the open turn and sums its messages.
func (t *usageTracker) end() *turnEnd {
	c := t.cur
	t.cur = nil
	if c.promptID != "" {
		t.ended.add(c.promptID)
	}
	t.turns++
	e := &turnEnd{Turn: t.turns, ConversationID: t.conv, Models: map[string]wire.Usage{}}
	for _, k := range c.order {
		m := c.msgs[k]
		t.counted.add(k)
		e.Usage = e.Usage.Add(m.usage)
		if m.model != "" {
			e.Models[m.model] = e.Models[m.model].Add(m.usage)
		}
	}
	t.total = t.total.Add(e.Usage)
	if t.models == nil {
		t.models = map[string]wire.Usage{}
	}
	for m, u := range e.Models {
		t.models[m] = t.models[m].Add(u)
	}
	return e
}

// runModels is the run's tokens by model so far.
func (t *usageTracker) runModels() map[string]wire.Usage { return maps.Clone(t.models) }

// interruption reports whether a user line is the CLI's interruption
// marker, and its text.
func interruption(l transcriptLine) (string, bool) {
	var m struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(l.Message, &m) != nil {
		return "", false
	}
	text := messageText(m.Content)
	return text, l.Interrupted != "" || strings.HasPrefix(text, interruptMarker)
}

// messageText is a message content's text: the string, or its text blocks
// joined.
func messageText(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(content, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// present reports whether raw holds something other than null, [] or {}.
func present(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null")) && !bytes.Equal(raw, []byte("[]")) && !bytes.Equal(raw, []byte("{}"))
}
