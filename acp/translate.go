package acp

import (
	"bytes"
	"cmp"
	"encoding/json"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/claude-relay/claude-relay/internal/streamjson"
)

// translator turns the CLI's stdout lines (stream-json) into ACP session
// updates (CONTRACT §8, seed 004 §4.6 and §6.2). It keeps what a line
// alone does not say: which text already went out as token deltas, and
// which tool each tool_result answers. One per ACP session; it is not safe
// for concurrent use, since the session reads its CLI's lines in order on
// one goroutine anyway.
type translator struct {
	cwd  string
	read fileReader // nil in replay: the disk is not as the transcript saw it

	// streamed holds, per message id, the text and thinking blocks sent as
	// deltas, by content index, so that the complete message does not send
	// them again.
	streamed map[string][]*streamedBlock
	lastMsg  string // the message the latest message_start opened

	tools map[string]*toolCall // by tool_use id, until the result comes
	order []string             // tool_use ids in the order they came

	model   string // the main thread's model, for its context window
	context int64  // tokens in context after the latest main-thread message

	turnStop string // the stop_reason the current turn's messages gave
	lastStop string // the stop_reason of the turn the latest result ended

	// lastChunk is the message and kind of the latest text or thinking
	// chunk, while nothing else followed it: the client appends chunks to
	// the message it shows, so the next message's text needs a break.
	lastChunk chunkKey
}

// chunkKey names the message a chunk belongs to.
type chunkKey struct{ kind, msgID string }

// streamedBlock is one text or thinking block as its deltas arrived.
type streamedBlock struct {
	kind string // streamjson.BlockText or BlockThinking
	text strings.Builder
	done bool // matched with the complete message's block
}

func newTranslator(cwd string) *translator {
	return &translator{cwd: cwd, read: readSmallFile, streamed: map[string][]*streamedBlock{}, tools: map[string]*toolCall{}}
}

// line converts one CLI stdout line. Result and system lines give nothing:
// the agent ends the prompt on a result (see usageMeta and usageUpdate)
// and reads system lines for itself.
func (t *translator) line(msg streamjson.Message) []acpsdk.SessionUpdate {
	switch {
	case msg.StreamEvent != nil:
		return t.streamEvent(msg.StreamEvent)
	case msg.Assistant != nil:
		return t.assistant(msg.Assistant)
	case msg.User != nil:
		return t.user(msg.User)
	case msg.Result != nil:
		t.endTurn(msg.Raw)
	}
	return nil
}

// endTurn closes a turn on its result line: nothing streamed in it can
// come again, and its stop reason is final.
func (t *translator) endTurn(raw json.RawMessage) {
	clear(t.streamed)
	t.lastMsg = ""
	// The result's own stop_reason is not in streamjson.Result; assistant
	// lines carry none while streaming, so it and message_delta are the
	// places the CLI says it.
	var r struct {
		StopReason string `json:"stop_reason"`
	}
	_ = json.Unmarshal(raw, &r)
	t.lastStop = cmp.Or(r.StopReason, t.turnStop)
	t.turnStop = ""
}

// lastStopReason is the model's stop_reason for the turn the latest
// result line ended ("end_turn", "max_tokens", "refusal", ...), or "" when
// the CLI gave none (a local slash command, say). The agent maps it to the
// prompt's ACP stop reason. CLI 2.1.330 does not end a turn on a refused
// message: it tells the model so and asks again, so the turn's reason is
// its final message's.
func (t *translator) lastStopReason() string { return t.lastStop }

// streamEvent sends text and thinking deltas as they come. Tool input
// deltas are not sent: the complete assistant line follows the last of
// them at once (before content_block_stop, with CLI 2.1.330), and a
// tool_call without its input would show the client a command-less
// "Bash", the flaw issue 14 names in the reference adapter.
func (t *translator) streamEvent(se *streamjson.StreamEvent) []acpsdk.SessionUpdate {
	if se.ParentToolUseID != "" {
		return nil // a subagent's tokens; its answer comes as the Task's result
	}
	var e struct {
		Type    string `json:"type"`
		Index   int    `json:"index"`
		Message struct {
			ID string `json:"id"`
		} `json:"message"`
		ContentBlock struct {
			Type string `json:"type"`
		} `json:"content_block"`
		Delta struct {
			Type       string `json:"type"`
			Text       string `json:"text"`
			Thinking   string `json:"thinking"`
			StopReason string `json:"stop_reason"` // message_delta
		} `json:"delta"`
	}
	if json.Unmarshal(se.Event, &e) != nil {
		return nil
	}
	switch e.Type {
	case "message_start":
		t.startMessage(e.Message.ID)
	case "message_delta":
		t.turnStop = cmp.Or(e.Delta.StopReason, t.turnStop)
	case "content_block_start":
		t.block(e.Index, e.ContentBlock.Type)
	case "content_block_delta":
		switch e.Delta.Type {
		case "text_delta":
			return t.delta(e.Index, streamjson.BlockText, e.Delta.Text)
		case "thinking_delta":
			return t.delta(e.Index, streamjson.BlockThinking, e.Delta.Thinking)
		}
	}
	return nil
}

// startMessage begins tracking a new message's deltas, forgetting all but
// the one before it (whose complete line may, in principle, come late).
func (t *translator) startMessage(id string) {
	for k := range t.streamed {
		if k != t.lastMsg {
			delete(t.streamed, k)
		}
	}
	t.lastMsg = id
	t.streamed[id] = nil
}

// maxBlocks bounds a message's content index: the index comes from the
// CLI's line, and the slice grows to it.
const maxBlocks = 4096

// block returns the streamed block at index of the current message,
// creating it with kind when it is new.
func (t *translator) block(index int, kind string) *streamedBlock {
	if (kind != streamjson.BlockText && kind != streamjson.BlockThinking) || index < 0 || index >= maxBlocks {
		return nil
	}
	blocks := t.streamed[t.lastMsg]
	for len(blocks) <= index {
		blocks = append(blocks, nil)
	}
	if blocks[index] == nil {
		blocks[index] = &streamedBlock{kind: kind}
	}
	t.streamed[t.lastMsg] = blocks
	return blocks[index]
}

func (t *translator) delta(index int, kind, text string) []acpsdk.SessionUpdate {
	b := t.block(index, kind)
	if b == nil || b.kind != kind || b.done || text == "" {
		return nil // a delta after its complete block was sent with it
	}
	b.text.WriteString(text)
	return []acpsdk.SessionUpdate{t.chunk(kind, t.lastMsg, text)}
}

// chunk is an agent_message_chunk (or agent_thought_chunk for thinking).
// The first chunk of a message that directly follows another message's
// chunks of the same kind starts with a blank line, or the client would
// glue the two together ("Done.Next answer").
func (t *translator) chunk(kind, msgID, text string) acpsdk.SessionUpdate {
	key := chunkKey{kind, msgID}
	if t.lastChunk.kind == kind && t.lastChunk.msgID != msgID {
		text = "\n\n" + text
	}
	t.lastChunk = key
	if kind == streamjson.BlockThinking {
		return acpsdk.UpdateAgentThoughtText(text)
	}
	return acpsdk.UpdateAgentMessageText(text)
}

// separate notes that something other than a chunk went to the client,
// which shows it between the messages.
func (t *translator) separate() { t.lastChunk = chunkKey{} }

// assistant converts a complete assistant message: its text and thinking
// (only what deltas did not already send) and its tool calls. A
// subagent's text is left out: it talks to the Task tool, not to the user,
// whose answer comes as the Task's result; its tool calls are shown.
func (t *translator) assistant(a *streamjson.AssistantMessage) []acpsdk.SessionUpdate {
	main := a.ParentToolUseID == ""
	if main {
		t.noteUsage(a.Message)
		t.turnStop = cmp.Or(a.Message.StopReason, t.turnStop)
	}
	var out []acpsdk.SessionUpdate
	for _, b := range a.Message.Blocks() {
		switch {
		case b.Type == streamjson.BlockText && main:
			if s := t.unstreamed(a.Message.ID, b.Type, b.Text); s != "" {
				out = append(out, t.chunk(b.Type, a.Message.ID, s))
			}
		case b.Type == streamjson.BlockThinking && main:
			if s := t.unstreamed(a.Message.ID, b.Type, b.Thinking); s != "" {
				out = append(out, t.chunk(b.Type, a.Message.ID, s))
			}
		case b.Type == streamjson.BlockToolUse:
			out = append(out, t.toolUse(b, a.ParentToolUseID)...)
		}
	}
	return out
}

// unstreamed is the part of a complete block that its deltas did not
// send: all of it when nothing was streamed, else what follows the
// streamed text (normally nothing). The CLI writes one assistant line per
// content block, each with content index 0, so blocks are matched by kind
// in stream order rather than by index.
func (t *translator) unstreamed(msgID, kind, full string) string {
	for _, b := range t.streamed[msgID] {
		if b == nil || b.done || b.kind != kind {
			continue
		}
		b.done = true
		got := b.text.String()
		if rest, ok := strings.CutPrefix(full, got); ok {
			return rest
		}
		return "" // the client has this block's text in another form; do not repeat it
	}
	return full
}

// noteUsage remembers the context size after a main-thread message, for
// usage_update: what the model saw plus what it wrote.
func (t *translator) noteUsage(m streamjson.APIMessage) {
	u := m.Usage
	if u.IsZero() {
		return
	}
	t.context = u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens + u.OutputTokens
	if m.Model != "" && m.Model != "<synthetic>" {
		t.model = m.Model
	}
}

// toolUse announces a tool call, or a plan for TodoWrite. A tool_use seen
// again (the same id) only updates the call when its input changed.
func (t *translator) toolUse(b streamjson.ContentBlock, parent string) []acpsdk.SessionUpdate {
	if b.ID == "" {
		return nil
	}
	name := strings.TrimPrefix(b.Name, acpToolPrefix)
	input := compactJSON(b.Input)
	tc, seen := t.tools[b.ID]
	if seen && bytes.Equal(tc.input, input) {
		return nil
	}
	t.separate()
	if !seen {
		tc = &toolCall{id: b.ID, name: name, parent: parent}
		t.tools[b.ID] = tc
		t.order = append(t.order, b.ID)
	}
	tc.input = input
	if name == "TodoWrite" {
		tc.plan = true
		if parent != "" {
			return nil // a subagent's own to-do list is not the session's plan
		}
		return []acpsdk.SessionUpdate{todoPlan(input)}
	}
	tc.info = describeTool(name, input, t.cwd, t.read)
	if seen {
		return []acpsdk.SessionUpdate{tc.refresh()}
	}
	return []acpsdk.SessionUpdate{tc.start()}
}

// user converts a user line's tool results. Its text is the prompt the
// client sent (echoed with --replay-user-messages) or the CLI's own
// notices, so it gives nothing here; replay shows user text itself.
func (t *translator) user(u *streamjson.UserTurn) []acpsdk.SessionUpdate {
	results := u.ToolResults()
	var out []acpsdk.SessionUpdate
	for _, tr := range results {
		tc, ok := t.tools[tr.ToolUseID]
		if !ok {
			continue // a call this translator never saw announced
		}
		t.forget(tr.ToolUseID)
		if tc.plan {
			continue
		}
		// tool_use_result belongs to the line; it describes a result only
		// when the line holds just that one.
		var structured json.RawMessage
		if len(results) == 1 {
			structured = u.ToolUseResult
		}
		t.separate()
		out = append(out, tc.finish(tr, structured))
	}
	return out
}

func (t *translator) forget(id string) {
	delete(t.tools, id)
	if len(t.tools) == 0 {
		t.order = t.order[:0]
	}
}

// abandon marks every tool call still waiting for its result as failed:
// the turn ended without one (the CLI died, or a replayed transcript
// stops mid-call), and a client would otherwise show it running forever.
func (t *translator) abandon() []acpsdk.SessionUpdate {
	var out []acpsdk.SessionUpdate
	for _, id := range t.order {
		tc, ok := t.tools[id]
		if !ok || tc.plan {
			continue
		}
		out = append(out, acpsdk.UpdateToolCall(acpsdk.ToolCallId(id), acpsdk.WithUpdateStatus(acpsdk.ToolCallStatusFailed)))
	}
	clear(t.tools)
	t.order = t.order[:0]
	return out
}

// compactJSON is raw without insignificant whitespace, so that the same
// input sent twice compares equal; raw itself when it is not valid JSON.
func compactJSON(raw json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return raw
	}
	return buf.Bytes()
}

// usageMeta is the prompt response's _meta: the turn's tokens in the CLI's
// own names (seed 004 §4.3) and total_cost_usd, which the CLI counts for
// its whole process, so it grows over a session's prompts.
func usageMeta(res *streamjson.Result) map[string]any {
	if res == nil {
		return nil
	}
	u := res.Usage
	return map[string]any{
		"usage": map[string]any{
			"input_tokens":                u.InputTokens,
			"output_tokens":               u.OutputTokens,
			"cache_read_input_tokens":     u.CacheReadInputTokens,
			"cache_creation_input_tokens": u.CacheCreationInputTokens,
			"total_tokens":                u.Total(),
		},
		"total_cost_usd": res.TotalCostUSD,
	}
}

// promptUsage is the same turn's tokens for the prompt response's own
// (unstable) usage field; TotalTokens counts every kind, as ACP defines it.
func promptUsage(res *streamjson.Result) *acpsdk.Usage {
	if res == nil {
		return nil
	}
	u := res.Usage
	return &acpsdk.Usage{
		InputTokens:       int(u.InputTokens),
		OutputTokens:      int(u.OutputTokens),
		CachedReadTokens:  acpsdk.Ptr(int(u.CacheReadInputTokens)),
		CachedWriteTokens: acpsdk.Ptr(int(u.CacheCreationInputTokens)),
		TotalTokens:       int(u.InputTokens + u.OutputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens),
	}
}

// usageUpdate is the usage_update to send after a result: the context in
// use after the turn's last message, the model's context window (from the
// result's modelUsage), and the cost so far. ok is false when the result
// names no context window, which the update requires.
func (t *translator) usageUpdate(res *streamjson.Result) (acpsdk.SessionUpdate, bool) {
	if res == nil {
		return acpsdk.SessionUpdate{}, false
	}
	var models map[string]struct {
		ContextWindow int `json:"contextWindow"`
	}
	_ = json.Unmarshal(res.ModelUsage, &models)
	size := models[t.model].ContextWindow
	if size == 0 {
		for _, m := range models {
			size = max(size, m.ContextWindow)
		}
	}
	if size == 0 {
		return acpsdk.SessionUpdate{}, false
	}
	return acpsdk.SessionUpdate{UsageUpdate: &acpsdk.SessionUsageUpdate{
		Size: size,
		Used: int(t.context),
		Cost: &acpsdk.Cost{Amount: res.TotalCostUSD, Currency: "USD"},
	}}, true
}

// hiddenCommands are commands of the CLI's initialize response that only
// change its own terminal UI, which an ACP client does not show.
var hiddenCommands = map[string]bool{"color": true, "focus": true}

// availableCommands lists the CLI's slash commands (the "commands" of its
// initialize response, or of the whole control_response) for
// available_commands_update: name, description, and the argument hint as
// unstructured input. Internal commands (a "__" name, a "(removed)"
// description) are left out.
func availableCommands(initResponse json.RawMessage) []acpsdk.AvailableCommand {
	var r struct {
		Commands []struct {
			Name         string `json:"name"`
			Description  string `json:"description"`
			ArgumentHint string `json:"argumentHint"`
		} `json:"commands"`
		Response json.RawMessage `json:"response"`
	}
	if json.Unmarshal(initResponse, &r) != nil {
		return nil
	}
	if r.Commands == nil && len(r.Response) > 0 {
		return availableCommands(r.Response) // given the control_response
	}
	out := make([]acpsdk.AvailableCommand, 0, len(r.Commands))
	for _, c := range r.Commands {
		if c.Name == "" || strings.HasPrefix(c.Name, "__") || hiddenCommands[c.Name] || strings.HasPrefix(c.Description, "(removed)") {
			continue
		}
		cmd := acpsdk.AvailableCommand{Name: c.Name, Description: c.Description}
		if hint := strings.TrimSpace(c.ArgumentHint); hint != "" {
			cmd.Input = &acpsdk.AvailableCommandInput{Unstructured: &acpsdk.UnstructuredCommandInput{Hint: hint}}
		}
		out = append(out, cmd)
	}
	return out
}
