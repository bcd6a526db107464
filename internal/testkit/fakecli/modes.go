package fakecli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"
)

// textTurn is the turn of ModeNormal, ModeSlow and ModeANSI.
func (f *fake) textTurn(t *turn) {
	if !t.emit(f.sess.init(f.currentPermissionMode())) ||
		!t.emit(f.sess.assistant(textBlock{Type: "text", Text: ReplyText})) {
		t.interrupted()
		return
	}
	t.finish(1, ReplyText, nil)
}

// toolTurn asks for permission to run a Bash command, then reports the
// outcome. It takes two model round trips, hence num_turns 2.
func (f *fake) toolTurn(t *turn) {
	input := map[string]any{"command": ToolCommand, "description": "Print hello"}
	if !t.emit(f.sess.init(f.currentPermissionMode())) ||
		!t.emit(f.sess.assistant(toolUseBlock{Type: "tool_use", ID: ToolUseID, Name: "Bash", Input: input})) {
		t.interrupted()
		return
	}
	allowed, reason, ok := f.authorize(t, input)
	if !ok {
		t.interrupted()
		return
	}
	var denials []permissionDenial
	result := f.sess.toolResult("hello", false, bashResult{Stdout: "hello"})
	reply := "The command printed hello."
	if !allowed {
		denials = []permissionDenial{{ToolName: "Bash", ToolUseID: ToolUseID, ToolInput: input}}
		result = f.sess.toolResult(reason, true, "Error: "+reason)
		reply = "The command was not allowed to run."
	}
	if !t.emit(result) || !t.emit(f.sess.assistant(textBlock{Type: "text", Text: reply})) {
		t.interrupted()
		return
	}
	t.finish(2, reply, denials)
}

// authorize decides on the Bash call the way the real CLI does: each
// matching PreToolUse hook callback first (deny wins, allow skips the
// prompt), then can_use_tool. ok is false if the turn was interrupted.
func (f *fake) authorize(t *turn, input map[string]any) (allowed bool, reason string, ok bool) {
	hookAllowed := false
	for _, id := range f.hookIDs("Bash") {
		reply, ok := t.ask(map[string]any{
			"subtype":     "hook_callback",
			"callback_id": id,
			"tool_use_id": ToolUseID,
			"input": map[string]any{
				"session_id":      f.sess.id,
				"transcript_path": f.sess.transcriptPath(),
				"cwd":             f.sess.cwd,
				"permission_mode": f.currentPermissionMode(),
				"hook_event_name": "PreToolUse",
				"tool_name":       "Bash",
				"tool_input":      input,
				"tool_use_id":     ToolUseID,
			},
		})
		if !ok {
			return false, "", false
		}
		var out struct {
			Decision string `json:"decision"`
			Reason   string `json:"reason"`
			Specific struct {
				PermissionDecision       string `json:"permissionDecision"`
				PermissionDecisionReason string `json:"permissionDecisionReason"`
			} `json:"hookSpecificOutput"`
		}
		_ = json.Unmarshal(reply.body, &out) // no usable answer means "no decision"
		switch {
		case out.Specific.PermissionDecision == "deny":
			return false, "Blocked by hook: " + out.Specific.PermissionDecisionReason, true
		case out.Decision == "block":
			return false, "Blocked by hook: " + out.Reason, true
		case out.Specific.PermissionDecision == "allow":
			hookAllowed = true
		}
	}
	if hookAllowed {
		return true, "", true
	}
	reply, ok := t.ask(map[string]any{
		"subtype":              "can_use_tool",
		"tool_name":            "Bash",
		"display_name":         "Bash",
		"input":                input,
		"description":          "Print hello",
		"decision_reason_type": "permissionPromptTool",
		"tool_use_id":          ToolUseID,
	})
	if !ok {
		return false, "", false
	}
	if reply.err != "" {
		return false, "Permission check failed: " + reply.err, true
	}
	var perm struct {
		Behavior string `json:"behavior"`
		Message  string `json:"message"`
	}
	if err := json.Unmarshal(reply.body, &perm); err != nil {
		return false, "Permission check failed: unreadable response: " + err.Error(), true
	}
	switch perm.Behavior {
	case "allow":
		return true, "", true
	case "deny":
		return false, perm.Message, true
	}
	return false, fmt.Sprintf("Permission check failed: unknown behavior %q", perm.Behavior), true
}

// approvalsTurn asks can_use_tool cfg.approvals times, one after the other,
// and keeps how long each answer took to arrive (see ModeApprovals).
// Denied and failed asks are the result's permission_denials and give no
// sample.
func (f *fake) approvalsTurn(t *turn) {
	if !t.emit(f.sess.init(f.currentPermissionMode())) {
		t.interrupted()
		return
	}
	samples := make([]int64, 0, f.cfg.approvals)
	var denials []permissionDenial
	for i := range f.cfg.approvals {
		toolUseID := fmt.Sprintf("toolu_01FakeApproval%06d", i)
		// The stamp is spliced into a line encoded beforehand, so that it
		// is taken right before the write and not before the encoding.
		const marker = "@@FAKECLI_STAMP@@"
		input := map[string]any{"command": ApprovalCommand, "description": "Do nothing", StampField: marker}
		tmpl := mustJSON(controlRequestLine{Type: "control_request", RequestID: marker, Request: map[string]any{
			"subtype":              "can_use_tool",
			"tool_name":            "Bash",
			"display_name":         "Bash",
			"input":                input,
			"description":          "Do nothing",
			"decision_reason_type": "permissionPromptTool",
			"tool_use_id":          toolUseID,
		}})
		reply, ok := t.askRaw(func(id string) []byte {
			return stampLine(tmpl, []byte(strconv.Quote(marker)), mustJSON(id), time.Now().UnixNano())
		})
		if !ok {
			t.interrupted()
			return
		}
		allowed, d, stamped := answerOf(reply)
		if stamped {
			samples = append(samples, d)
		}
		if !allowed {
			denials = append(denials, permissionDenial{ToolName: "Bash", ToolUseID: toolUseID,
				ToolInput: map[string]any{"command": ApprovalCommand, "description": "Do nothing"}})
		}
	}
	if f.cfg.sampleFile != "" {
		if err := writeSamples(f.cfg.sampleFile, samples); err != nil {
			fmt.Fprintf(os.Stderr, "fake claude: %v\n", err)
		}
	}
	text := fmt.Sprintf("Asked %d times: %d allowed, %d denied.", f.cfg.approvals, f.cfg.approvals-len(denials), len(denials))
	if !t.emit(f.sess.assistant(textBlock{Type: "text", Text: text})) {
		t.interrupted()
		return
	}
	t.finish(1+f.cfg.approvals, text, denials)
}

// stampLine returns tmpl with the quoted marker as request id replaced by id
// and the quoted marker in the input replaced by stamp. The request id
// comes first on the line.
func stampLine(tmpl, quoted, id []byte, stamp int64) []byte {
	before, rest, _ := bytes.Cut(tmpl, quoted)
	mid, after, _ := bytes.Cut(rest, quoted)
	line := make([]byte, 0, len(tmpl)+len(id)+20)
	line = append(append(append(line, before...), id...), mid...)
	return append(strconv.AppendInt(line, stamp, 10), after...)
}

// answerOf reads an answer to a ModeApprovals ask: whether it allowed the
// call and, when its updatedInput carries AnswerStampField, the answer leg:
// from that stamp to when the fake read the answer.
func answerOf(r controlReply) (allowed bool, ns int64, stamped bool) {
	if r.err != "" {
		return false, 0, false
	}
	var perm struct {
		Behavior     string                     `json:"behavior"`
		UpdatedInput map[string]json.RawMessage `json:"updatedInput"`
	}
	if json.Unmarshal(r.body, &perm) != nil || perm.Behavior != "allow" {
		return false, 0, false
	}
	t0, err := strconv.ParseInt(string(perm.UpdatedInput[AnswerStampField]), 10, 64)
	if err != nil || t0 <= 0 {
		return true, 0, false
	}
	return true, r.at.UnixNano() - t0, true
}

// writeSamples replaces path with samples, one decimal number a line.
func writeSamples(path string, samples []int64) error {
	var b []byte
	for _, s := range samples {
		b = append(strconv.AppendInt(b, s, 10), '\n')
	}
	if err := replaceFile(path, b); err != nil {
		return fmt.Errorf("writing the sample file: %w", err)
	}
	return nil
}

// malformedTurn is a normal turn with lines a robust reader must survive.
func (f *fake) malformedTurn(t *turn) {
	unknown := mustJSON(map[string]any{"type": "fake_future_type", "session_id": f.sess.id, "payload": map[string]int{"n": 1}})
	lines := [][]byte{
		[]byte("fake claude: a stray log line that is not JSON"),
		mustJSON(f.sess.init(f.currentPermissionMode())),
		[]byte(`{"type":"assistant","message":{"role":"assistant","content":[{"type":"te`),
		{},
		unknown,
		mustJSON(f.sess.assistant(textBlock{Type: "text", Text: ReplyText})),
		[]byte("}{ not json either"),
	}
	for _, l := range lines {
		if !t.emitRaw(l) {
			t.interrupted()
			return
		}
	}
	t.finish(1, ReplyText, nil)
}

// hugeTurn writes one assistant line with a cfg.hugeSize-byte text block,
// streamed in chunks rather than built in memory.
func (f *fake) hugeTurn(t *turn) {
	const marker = "@@FAKECLI_TEXT@@"
	if !t.emit(f.sess.init(f.currentPermissionMode())) || !t.pace() {
		t.interrupted()
		return
	}
	prefix, suffix, _ := bytes.Cut(mustJSON(f.sess.assistant(textBlock{Type: "text", Text: marker})), []byte(marker))
	chunk := make([]byte, 64<<10)
	const pattern = "abcdefghijklmnopqrstuvwxyz0123456789 " // nothing JSON must escape
	for i := range chunk {
		chunk[i] = pattern[i%len(pattern)]
	}
	f.outMu.Lock()
	f.out.Write(prefix)
	for n := f.cfg.hugeSize; n > 0; n -= len(chunk) {
		f.out.Write(chunk[:min(n, len(chunk))])
	}
	f.out.Write(suffix)
	f.out.WriteByte('\n')
	f.out.Flush()
	f.outMu.Unlock()
	t.finish(1, ReplyText, nil)
}

// floodTurn writes cfg.floodLines stream_event lines of about 250 bytes,
// flushing only when the buffer fills, to load a reader.
func (f *fake) floodTurn(t *turn) {
	if !t.emit(f.sess.init(f.currentPermissionMode())) {
		t.interrupted()
		return
	}
	prefix := []byte(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"flood line `)
	mid := append([]byte(` of the fake CLI."}},"session_id":`), mustJSON(f.sess.id)...)
	if f.cfg.floodFinal {
		prefix = []byte(`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"flood line `)
		mid = append([]byte(` of the fake CLI."}]},"session_id":`), mustJSON(f.sess.id)...)
	}
	mid = append(mid, `,"parent_tool_use_id":null,"uuid":"00000000-0000-4000-8000-`...)
	line := make([]byte, 0, 512)
	for i := range f.cfg.floodLines {
		if i%1024 == 0 { // an interrupt stops the flood, but checking is not free
			select {
			case <-t.stop:
				t.interrupted()
				return
			default:
			}
		}
		line = append(line[:0], prefix...)
		line = strconv.AppendInt(line, int64(i), 10)
		line = append(line, mid...)
		line = appendPadded(line, i, 12)
		line = append(line, "\"}\n"...)
		f.outMu.Lock()
		f.out.Write(line) // bufio flushes by itself when full
		f.outMu.Unlock()
	}
	f.writeJSON(f.sess.assistant(textBlock{Type: "text", Text: ReplyText}))
	f.writeJSON(f.sess.result(t.start, 1, ptr(ReplyText), nil))
}

// crashTurn dies mid-turn like a CLI that hit a fatal error.
func (f *fake) crashTurn(t *turn) {
	t.emit(f.sess.init(f.currentPermissionMode()))
	t.emit(f.sess.assistant(textBlock{Type: "text", Text: "Working on it..."}))
	f.flush()
	fmt.Fprintln(os.Stderr, "fake claude: fatal: simulated crash (exit status 3)")
	os.Exit(3)
}

// stuckTurn starts and never ends.
func (f *fake) stuckTurn(t *turn) {
	t.emit(f.sess.init(f.currentPermissionMode()))
	sleepForever()
}

// treeTurn leaves a process tree behind like the Bash tool does, then never
// ends.
func (f *fake) treeTurn(t *turn) {
	t.emit(f.sess.init(f.currentPermissionMode()))
	child, leaf, err := startTree()
	if err != nil {
		fmt.Fprintf(os.Stderr, "fake claude: %v\n", err)
		f.flush()
		os.Exit(4)
	}
	if f.cfg.pidFile != "" {
		if err := writePidFile(f.cfg.pidFile, os.Getpid(), child.Process.Pid, leaf); err != nil {
			fmt.Fprintf(os.Stderr, "fake claude: %v\n", err)
		}
	}
	// Reap the child when it is killed, so it does not linger as a zombie:
	// pid 1 on the test machines reaps nothing.
	go child.Wait()
	sleepForever()
}

// writeANSI writes the kind of coloured, cursor-moving stderr a terminal
// program produces.
func writeANSI() {
	fmt.Fprint(os.Stderr,
		"\x1b[33mwarning:\x1b[0m fake claude starting in ansi mode\n"+
			"\x1b[31merror: boom\x1b[0m\n"+
			"\x1b[1;34minfo\x1b[0m \x1b[2mdim detail\x1b[0m\n"+
			"\x1b[2K\rprogress 100%\n")
}

// mustJSON encodes v like writeJSON does, without the newline.
func mustJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("fakecli: marshalling %T: %v", v, err))
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// appendPadded appends n in decimal, zero-padded to width digits.
func appendPadded(b []byte, n, width int) []byte {
	s := strconv.Itoa(n)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

func ptr[T any](v T) *T { return &v }
