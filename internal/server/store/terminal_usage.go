package store

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/claude-relay/claude-relay/internal/wire"
)

// TerminalTurns derives the turns and tokens of a session's terminal runs
// that posted no relay.turn_completed with mode "terminal" (runs of a
// helper from before terminal runs counted usage), from the events such
// runs stored: hook.UserPromptSubmit and transcript.user/assistant lines. It
// is what a migration can add to sessions stored before: one CountedResult
// per turn, keyed as the runner keys its own ("turn:<run_id>:<n>"), counted
// on its prompt's event (EventID, At); tokens by model, no cost (the
// interactive CLI's cost record is only read by the runner at the run's
// end). Runs that did post their turns are left alone.
//
// The rules follow the runner's (terminal/usage.go):
//
//   - a turn per prompt: each distinct prompt_id of hook.UserPromptSubmit
//     (each event, where it has none);
//   - a transcript line whose uuid an earlier interaction had is a copy (a
//     fork's transcript starts with one of the conversation it forks, uuids
//     kept, every user line given the fork's first prompt ID): skipped;
//   - an assistant message counts once per session, by message ID and
//     request ID (the CLI writes a line per content block, each repeating
//     the message's usage; the last line's usage wins), not when it is
//     "<synthetic>" (no API call) nor when the line says it was made in
//     another conversation (requestSessionId: a fork's copy again);
//   - a message belongs to the turn of the latest transcript.user line
//     before it with a known promptId, else (a CLI that writes none) to the
//     latest prompt hook before it, else to the first turn; a run with
//     messages and no prompt has one turn.
func TerminalTurns(events []Event) []CountedResult {
	seen := map[string]bool{}
	byInteraction := map[string][]Event{}
	firstAt := map[string]time.Time{}
	var order []string
	for _, ev := range events {
		if seen[ev.EventID] {
			continue
		}
		seen[ev.EventID] = true
		if _, ok := byInteraction[ev.InteractionID]; !ok {
			order = append(order, ev.InteractionID)
		}
		byInteraction[ev.InteractionID] = append(byInteraction[ev.InteractionID], ev)
		if at, ok := firstAt[ev.InteractionID]; !ok || ev.Timestamp.Before(at) {
			firstAt[ev.InteractionID] = ev.Timestamp
		}
	}
	sort.SliceStable(order, func(i, j int) bool {
		return MoreRecent(firstAt[order[j]], order[j], firstAt[order[i]], order[i])
	})
	counted := map[string]bool{} // message keys, session-wide
	lines := map[string]bool{}   // transcript line uuids, session-wide
	var out []CountedResult
	for _, id := range order {
		evs := byInteraction[id]
		sort.SliceStable(evs, func(i, j int) bool { return evs[i].Seq < evs[j].Seq })
		var own []Event
		var uuids []string
		for _, ev := range evs {
			uuid := ""
			if strings.HasPrefix(ev.EventType, "transcript.") {
				uuid = stringField(ev.EventData, "uuid")
			}
			if uuid != "" && lines[uuid] {
				continue
			}
			own = append(own, ev)
			if uuid != "" {
				uuids = append(uuids, uuid)
			}
		}
		for _, u := range uuids {
			lines[u] = true
		}
		out = append(out, terminalRunTurns(own, counted)...)
	}
	return out
}

// backfillTurn is one turn being summed.
type backfillTurn struct {
	prompt *Event
	msgs   []string // message keys, first seen first
}

// terminalRunTurns derives one interaction's turns; counted holds the
// message keys counted in the session so far.
func terminalRunTurns(evs []Event, counted map[string]bool) []CountedResult {
	runKey, terminal, live := "", false, false
	for _, ev := range evs {
		var obj map[string]json.RawMessage
		_ = json.Unmarshal(ev.EventData, &obj)
		mode := jsonString(obj["mode"])
		switch {
		case ev.EventType == EventRunStarted:
			terminal = terminal || mode == wire.ModeTerminal
			if runKey == "" {
				runKey = jsonString(obj["run_id"])
			}
		case ev.EventType == wire.TypeTurnCompleted && mode == wire.ModeTerminal:
			live = true
		case strings.HasPrefix(ev.EventType, "hook."), strings.HasPrefix(ev.EventType, "transcript."):
			terminal = true
		}
	}
	if runKey == "" && len(evs) > 0 {
		runKey = "interaction:" + evs[0].InteractionID
	}
	var (
		turns    []*backfillTurn
		byPrompt = map[string]int{}
		msgs     = map[string]transcriptUsage{}
		turnOf   = map[string]int{}
	)
	for i := range evs {
		if ev := &evs[i]; ev.EventType == "hook.UserPromptSubmit" {
			pid := stringField(ev.EventData, "prompt_id")
			if pid == "" {
				pid = "event:" + ev.EventID
			}
			if _, ok := byPrompt[pid]; !ok {
				byPrompt[pid] = len(turns)
				turns = append(turns, &backfillTurn{prompt: ev})
			}
		}
	}
	promptLines := false
	for _, ev := range evs {
		if ev.EventType == "transcript.user" {
			if _, ok := byPrompt[stringField(ev.EventData, "promptId")]; ok {
				promptLines = true
			}
		}
	}
	cur := -1
	for _, ev := range evs {
		switch ev.EventType {
		case "transcript.user":
			if i, ok := byPrompt[stringField(ev.EventData, "promptId")]; ok && promptLines {
				cur = i
			}
		case "hook.UserPromptSubmit":
			if !promptLines {
				pid := stringField(ev.EventData, "prompt_id")
				if pid == "" {
					pid = "event:" + ev.EventID
				}
				cur = byPrompt[pid]
			}
		case "transcript.assistant":
			m, ok := transcriptUsageOf(ev.EventData)
			if !ok || counted[m.key] {
				continue
			}
			if _, dup := msgs[m.key]; !dup {
				if len(turns) == 0 {
					turns = append(turns, &backfillTurn{})
				}
				t := max(cur, 0)
				turnOf[m.key] = t
				turns[t].msgs = append(turns[t].msgs, m.key)
			}
			msgs[m.key] = m // the last line wins
		}
	}
	for k := range msgs {
		counted[k] = true
	}
	if !terminal || live {
		return nil
	}
	out := make([]CountedResult, 0, len(turns))
	for n, t := range turns {
		r := &Result{Key: "turn:" + runKey + ":" + strconv.Itoa(n+1)}
		byModel := map[string]Usage{}
		for _, k := range t.msgs {
			m := msgs[k]
			r.Usage = r.Usage.Add(m.usage)
			byModel[m.model] = byModel[m.model].Add(m.usage)
		}
		if _, unnamed := byModel[""]; !unnamed {
			for model, u := range byModel {
				if u != (Usage{}) {
					r.Models = append(r.Models, ModelUsage{Model: model, Usage: u})
				}
			}
			sort.Slice(r.Models, func(i, j int) bool { return r.Models[i].Model < r.Models[j].Model })
		}
		at := t.prompt
		if at == nil {
			at = firstMessageEvent(evs, t.msgs)
		}
		c := CountedResult{Key: r.Key, Result: r}
		if at != nil {
			c.EventID, c.At = at.EventID, at.Timestamp.UTC()
		}
		out = append(out, c)
	}
	return out
}

// transcriptUsage is one counted assistant message of a transcript.
type transcriptUsage struct {
	key, model string
	usage      Usage
}

// transcriptUsageOf reads a transcript assistant line's message: false when
// it does not count (wire.TranscriptAssistant.Counted).
func transcriptUsageOf(data json.RawMessage) (transcriptUsage, bool) {
	var l wire.TranscriptAssistant
	if json.Unmarshal(data, &l) != nil || l.Type != "assistant" || !l.Counted() {
		return transcriptUsage{}, false
	}
	return transcriptUsage{key: l.Key(), model: l.Message.Model, usage: Usage(l.Message.Usage)}, true
}

// stringField is event data's string field (a prompt ID, a uuid).
func stringField(data json.RawMessage, field string) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) != nil {
		return ""
	}
	return jsonString(obj[field])
}

// firstMessageEvent is the event of the first of keys' messages.
func firstMessageEvent(evs []Event, keys []string) *Event {
	if len(keys) == 0 {
		return nil
	}
	for i := range evs {
		if m, ok := transcriptUsageOf(evs[i].EventData); ok && evs[i].EventType == "transcript.assistant" && m.key == keys[0] {
			return &evs[i]
		}
	}
	return nil
}
