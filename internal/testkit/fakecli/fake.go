package fakecli

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// fake is one fake CLI process: a stdin reader that answers control requests
// and queues user messages, and a turn worker that plays the mode's turn.
type fake struct {
	cfg  config
	sess session
	// turnFn plays one turn of the mode.
	turnFn func(*turn)
	// honoursInterrupt is false for modes that answer the interrupt control
	// request but keep running, like a wedged CLI would.
	honoursInterrupt bool

	outMu sync.Mutex // one complete line at a time on stdout
	out   *bufio.Writer
	enc   *json.Encoder

	record *os.File // WithRecordFile, or nil

	eof chan struct{} // closed at stdin EOF: pending questions get no answer

	mu             sync.Mutex
	permissionMode string
	preToolHooks   []hookMatcher
	pending        map[string]chan controlReply
	nextID         int
	cur            *turn
}

// hookMatcher is one PreToolUse entry of the initialize request.
type hookMatcher struct {
	matcher     string
	callbackIDs []string
}

// controlReply is the answer to a control request the fake sent.
type controlReply struct {
	body json.RawMessage // the "response" object on success
	err  string          // the "error" text otherwise
	// at is when the reader got the line off stdin, before decoding it:
	// ModeApprovals measures the answer's trip up to there.
	at time.Time
}

// inLine is every field the fake reads from a stdin line.
type inLine struct {
	Type      string          `json:"type"`
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`
	Response  *struct {
		Subtype   string          `json:"subtype"`
		RequestID string          `json:"request_id"`
		Response  json.RawMessage `json:"response"`
		Error     string          `json:"error"`
	} `json:"response"`
}

func newFake(cfg config, args cliArgs) *fake {
	cwd, _ := os.Getwd()
	f := &fake{
		cfg:              cfg,
		sess:             session{id: args.sessionID(cfg.sessionID), model: args.model, cwd: cwd},
		honoursInterrupt: true,
		out:              bufio.NewWriterSize(os.Stdout, 64<<10),
		eof:              make(chan struct{}),
		permissionMode:   args.permissionMode,
		pending:          map[string]chan controlReply{},
	}
	if f.sess.model == "" {
		f.sess.model = Model
	}
	if f.permissionMode == "" {
		f.permissionMode = cmp.Or(cfg.configured, "default")
	}
	f.enc = json.NewEncoder(f.out)
	f.enc.SetEscapeHTML(false) // the real CLI (JavaScript) does not escape <, >, &
	return f
}

// serve reads stdin until EOF, running turns as user lines arrive, and
// returns once the last turn is over. A turn that never ends keeps it (and
// the process) waiting, as a wedged CLI would.
func (f *fake) serve() int {
	users := make(chan struct{}, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range users {
			t := f.beginTurn()
			f.turnFn(t)
			f.endTurn(t)
		}
	}()
	r := bufio.NewReaderSize(os.Stdin, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		at := time.Now()
		if len(bytes.TrimSpace(line)) > 0 {
			f.recordLine(line)
			f.handle(line, at, users)
		}
		if err != nil { // EOF or a read error: either way no more input
			break
		}
	}
	close(f.eof)
	close(users)
	<-done
	f.flush()
	return 0
}

// handle dispatches one stdin line; at is when it was read.
func (f *fake) handle(line []byte, at time.Time, users chan<- struct{}) {
	var in inLine
	if err := json.Unmarshal(line, &in); err != nil {
		fmt.Fprintf(os.Stderr, "fake claude: ignoring a stdin line that is not JSON: %v\n", err)
		return
	}
	switch in.Type {
	case "control_request":
		f.answer(in.RequestID, in.Request)
	case "control_response":
		if in.Response != nil {
			f.deliver(in.Response.RequestID, controlReply{body: in.Response.Response, err: in.Response.Error, at: at})
		}
	case "user":
		users <- struct{}{}
	}
}

// answer replies to a control request from the host.
func (f *fake) answer(id string, raw json.RawMessage) {
	var req struct {
		Subtype string                   `json:"subtype"`
		Mode    string                   `json:"mode"`
		Hooks   map[string][]hookRequest `json:"hooks"`
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		f.respondError(id, "malformed control request: "+err.Error())
		return
	}
	switch req.Subtype {
	case "initialize":
		f.mu.Lock()
		f.preToolHooks = nil
		for _, h := range req.Hooks["PreToolUse"] {
			f.preToolHooks = append(f.preToolHooks, hookMatcher{matcher: h.Matcher, callbackIDs: h.HookCallbackIDs})
		}
		mode := f.permissionMode
		f.mu.Unlock()
		info := map[string]any{
			"commands":                []any{},
			"agents":                  []any{},
			"output_style":            "default",
			"available_output_styles": []string{"default"},
			"models":                  []map[string]string{{"value": "default", "displayName": "Default", "description": f.sess.model}},
			"account":                 map[string]string{"apiKeySource": "ANTHROPIC_API_KEY"},
			"pid":                     os.Getpid(),
			"claude_code_version":     Version,
			"current_permission_mode": mode,
			"capabilities":            map[string]any{},
		}
		if f.cfg.noAccount {
			delete(info, "account")
		}
		f.respond(id, info)
	case "set_permission_mode":
		// As the real CLI: anything else, no mode included, is refused
		// with the list.
		if !slices.Contains(modes, req.Mode) {
			f.writeJSON(controlResponseLine{Type: "control_response", Response: controlResponse{
				Subtype: "error", RequestID: id, ErrorCode: "invalid_mode",
				Error: "Cannot set permission mode: must be one of " + strings.Join(modes, ", "),
			}})
			return
		}
		f.mu.Lock()
		f.permissionMode = req.Mode
		f.mu.Unlock()
		f.respond(id, map[string]string{"mode": req.Mode})
	case "interrupt":
		f.respond(id, map[string]any{}) // before the turn's result, as the real CLI
		f.interrupt()
	default:
		f.respondError(id, "unsupported control request subtype: "+strconv.Quote(req.Subtype))
	}
}

// modes are the permission modes the pinned CLI takes.
var modes = []string{"acceptEdits", "auto", "bypassPermissions", "default", "dontAsk", "plan"}

type hookRequest struct {
	Matcher         string   `json:"matcher"`
	HookCallbackIDs []string `json:"hookCallbackIds"`
}

func (f *fake) respond(id string, body any) {
	f.writeJSON(controlResponseLine{Type: "control_response", Response: controlResponse{
		Subtype: "success", RequestID: id, Response: body,
	}})
}

func (f *fake) respondError(id, msg string) {
	f.writeJSON(controlResponseLine{Type: "control_response", Response: controlResponse{
		Subtype: "error", RequestID: id, Error: msg,
	}})
}

// hookIDs returns the PreToolUse callback ids whose matcher takes tool.
func (f *fake) hookIDs(tool string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for _, h := range f.preToolHooks {
		if matches(h.matcher, tool) {
			ids = append(ids, h.callbackIDs...)
		}
	}
	return ids
}

// matches follows the CLI's hook matchers: empty or "*" match every tool,
// anything else is a regular expression over the whole tool name.
func matches(matcher, tool string) bool {
	if matcher == "" || matcher == "*" {
		return true
	}
	re, err := regexp.Compile("^(?:" + matcher + ")$")
	if err != nil {
		return matcher == tool
	}
	return re.MatchString(tool)
}

// deliver hands the host's control_response to the turn waiting for it;
// answers nobody waits for are dropped.
func (f *fake) deliver(id string, r controlReply) {
	f.mu.Lock()
	ch := f.pending[id]
	delete(f.pending, id)
	f.mu.Unlock()
	if ch != nil {
		ch <- r // buffered: never blocks the reader
	}
}

func (f *fake) currentPermissionMode() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.permissionMode
}

// writeJSON writes v as one line and flushes it.
func (f *fake) writeJSON(v any) {
	f.outMu.Lock()
	defer f.outMu.Unlock()
	if err := f.enc.Encode(v); err != nil {
		fmt.Fprintf(os.Stderr, "fake claude: encoding a %T: %v\n", v, err)
		return
	}
	f.out.Flush()
}

// writeRaw writes b and a newline as one line and flushes it.
func (f *fake) writeRaw(b []byte) {
	f.outMu.Lock()
	defer f.outMu.Unlock()
	f.out.Write(b)
	f.out.WriteByte('\n')
	f.out.Flush()
}

func (f *fake) flush() {
	f.outMu.Lock()
	defer f.outMu.Unlock()
	f.out.Flush()
}

// recordLine appends a stdin line to the WithRecordFile file.
func (f *fake) recordLine(line []byte) {
	if f.record == nil {
		return
	}
	if line[len(line)-1] != '\n' {
		line = append(line, '\n')
	}
	f.record.Write(line)
}

// turn is one turn in progress.
type turn struct {
	f       *fake
	start   time.Time
	stop    chan struct{} // closed by an interrupt
	stopped bool          // guarded by f.mu
	lines   int           // lines written, so the delay goes between lines
}

func (f *fake) beginTurn() *turn {
	t := &turn{f: f, start: time.Now(), stop: make(chan struct{})}
	f.mu.Lock()
	f.cur = t
	f.mu.Unlock()
	return t
}

func (f *fake) endTurn(t *turn) {
	f.mu.Lock()
	if f.cur == t {
		f.cur = nil
	}
	f.mu.Unlock()
}

func (f *fake) interrupt() {
	if !f.honoursInterrupt {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if t := f.cur; t != nil && !t.stopped {
		t.stopped = true
		close(t.stop)
	}
}

// pace waits the line delay before every line but the first; it reports
// false if the turn was interrupted.
func (t *turn) pace() bool {
	t.lines++
	if d := t.f.cfg.lineDelay; d > 0 && t.lines > 1 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-t.stop:
			return false
		}
	}
	select {
	case <-t.stop:
		return false
	default:
		return true
	}
}

// emit paces, then writes v; false means interrupted and nothing written.
func (t *turn) emit(v any) bool {
	if !t.pace() {
		return false
	}
	t.f.writeJSON(v)
	return true
}

// emitRaw is emit for bytes that need not be JSON.
func (t *turn) emitRaw(b []byte) bool {
	if !t.pace() {
		return false
	}
	t.f.writeRaw(b)
	return true
}

// finish writes the turn's result, or the interrupted result if the turn
// was interrupted meanwhile.
func (t *turn) finish(turns int, text string, denials []permissionDenial) {
	if !t.pace() {
		t.interrupted()
		return
	}
	t.f.writeJSON(t.f.sess.result(t.start, turns, &text, denials))
}

// interrupted writes the result of an interrupted turn.
func (t *turn) interrupted() {
	t.f.writeJSON(t.f.sess.result(t.start, 1, nil, nil))
}

// ask sends a control request to the host and waits for its answer. ok is
// false if the turn was interrupted meanwhile; at stdin EOF the answer is
// an error, since none can come any more.
func (t *turn) ask(req map[string]any) (reply controlReply, ok bool) {
	return t.askRaw(func(id string) []byte {
		return mustJSON(controlRequestLine{Type: "control_request", RequestID: id, Request: req})
	})
}

// askRaw is ask for a request line that line builds, given the request id,
// just before it is written: ModeApprovals stamps the line there.
func (t *turn) askRaw(line func(id string) []byte) (reply controlReply, ok bool) {
	f := t.f
	ch := make(chan controlReply, 1)
	f.mu.Lock()
	f.nextID++
	id := "fake-req-" + strconv.Itoa(f.nextID)
	f.pending[id] = ch
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.pending, id)
		f.mu.Unlock()
	}()
	if !t.pace() {
		return controlReply{}, false
	}
	f.writeRaw(line(id))
	select {
	case r := <-ch:
		return r, true
	case <-t.stop:
		return controlReply{}, false
	case <-f.eof:
		// The reader delivers before it closes eof, so an answer sent just
		// before EOF is already in ch.
		select {
		case r := <-ch:
			return r, true
		default:
		}
		return controlReply{err: "stdin closed before the control_response for " + id}, true
	}
}
