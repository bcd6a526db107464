package extension

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/host"
	"github.com/claude-relay/claude-relay/internal/relay"
	"github.com/claude-relay/claude-relay/internal/streamjson"
)

// fakeExecutor plays a run according to the first word of its prompt:
//
//	lines N      N stream lines, then completes
//	block        one line, then waits until cancelled
//	approve TOOL asks the Approver; allow runs the "tool", deny reports the reason
//	fail         fails with a reason
//	limit        reports a limit notice and completes
//	malformed    writes a line that is not JSON, then completes
//	stderr       writes a stderr line, then completes
//	anything else: one line, then completes with the prompt as stdout
//
// It records every request it got.
type fakeExecutor struct {
	mu       sync.Mutex
	requests []executor.Request
}

var _ relay.Executor = (*fakeExecutor)(nil)

// fakeLine is the stream-json line the fake writes for line n of a run.
func fakeLine(runID string, n int) []byte {
	return fmt.Appendf(nil, `{"type":"assistant","session_id":"conv-%s","run":%q,"n":%d,"message":{"content":[{"type":"text","text":"line %d"}]}}`, runID, runID, n, n)
}

func (f *fakeExecutor) Requests() []executor.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]executor.Request(nil), f.requests...)
}

func (f *fakeExecutor) Run(ctx context.Context, req executor.Request, obs executor.Observer, ap executor.Approver) (*executor.Result, error) {
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	start := time.Now()
	line := func(n int) {
		b := fakeLine(req.RunID, n)
		m, err := streamjson.Decode(b)
		if err != nil {
			panic(err)
		}
		obs.Event(executor.Event{Kind: executor.EventLine, RunID: req.RunID, Time: time.Now(), Line: b, Message: m})
	}
	done := func(stdout string) (*executor.Result, error) {
		return &executor.Result{Status: executor.StatusCompleted, ConversationID: "conv-" + req.RunID, HasUsage: true,
			Usage: streamjson.Usage{InputTokens: 3, OutputTokens: 4}, TotalCostUSD: 0.25,
			CommandResult: executor.CommandResult{Stdout: stdout, DurationMS: time.Since(start).Milliseconds()}}, nil
	}
	cancelled := func() (*executor.Result, error) {
		return &executor.Result{Status: executor.StatusCancelled,
			CommandResult: executor.CommandResult{ExitCode: 130, DurationMS: time.Since(start).Milliseconds()}}, nil
	}
	word, arg, _ := strings.Cut(strings.TrimSpace(req.Prompt), " ")
	switch word {
	case "lines":
		n, _ := strconv.Atoi(arg)
		for i := range min(n, 5000) {
			line(i)
		}
		return done(fmt.Sprintf("%d lines", n))
	case "block":
		line(0)
		<-ctx.Done()
		return cancelled()
	case "approve":
		d, err := ap.Approve(ctx, executor.ApprovalRequest{RunID: req.RunID, ApprovalID: "ap-" + req.RunID, ToolName: arg,
			Input: json.RawMessage(`{"command":"ls"}`), ToolUseID: "toolu_" + req.RunID, Description: "lists files"})
		if err != nil {
			return cancelled()
		}
		if !d.Allow {
			return done("denied: " + d.Reason)
		}
		line(0)
		return done("allowed")
	case "fail":
		err := fmt.Errorf("%w: the fake was told to fail", executor.ErrNoResult)
		return &executor.Result{Status: executor.StatusFailed, Reason: err.Error(),
			CommandResult: executor.CommandResult{Stderr: "Error during execution", ExitCode: 1}}, err
	case "limit":
		line(0)
		obs.Event(executor.Event{Kind: executor.EventLimitNotice, RunID: req.RunID, Text: "You've hit your usage limit"})
		return done("limited")
	case "malformed":
		obs.Event(executor.Event{Kind: executor.EventMalformed, RunID: req.RunID, Line: []byte("not json <at all>"), Err: fmt.Errorf("invalid character 'o'")})
		return done("malformed")
	case "stderr":
		obs.Event(executor.Event{Kind: executor.EventStderr, RunID: req.RunID, Text: "warning: something"})
		return done("stderr")
	}
	line(0)
	return done(req.Prompt)
}

// fakeForwarder records what it is given. It can fail every Enqueue, hold
// Enqueue until released, and hold Stop.
type fakeForwarder struct {
	mu      sync.Mutex
	events  []forwarder.Event
	canon   map[string]bool // canonical JSON of every enqueued Data
	seqs    map[string]int64
	fail    error // returned by Enqueue when set
	gate    *gate // when set, Enqueue of a CLI line is held at it
	stats   forwarder.Stats
	stopErr error
	stops   int
	stopCtx context.Context
	holdOff chan struct{} // when set, Stop waits for it to be closed (or ctx)
}

var _ host.Forwarder = (*fakeForwarder)(nil)

func (f *fakeForwarder) OnError(func(forwarder.Error)) {}
func (f *fakeForwarder) Start()                        {}

// gate holds Enqueue of CLI lines until it is opened, and says when the
// first one got there: a test waits on entered, not on a guess of how long
// the executor takes to reach Enqueue.
type gate struct {
	entered  chan struct{} // closed when the first held Enqueue arrives
	release  chan struct{} // closed by open
	enterOne sync.Once
	openOne  sync.Once
}

func newGate() *gate { return &gate{entered: make(chan struct{}), release: make(chan struct{})} }

func (g *gate) hold() {
	g.enterOne.Do(func() { close(g.entered) })
	<-g.release
}

// open lets every held Enqueue go on, and any later one through; it may be
// called again.
func (g *gate) open() { g.openOne.Do(func() { close(g.release) }) }

func newFakeForwarder() *fakeForwarder {
	return &fakeForwarder{seqs: map[string]int64{}, canon: map[string]bool{}}
}

func (f *fakeForwarder) Enqueue(ev forwarder.Event) (forwarder.Accepted, error) {
	f.mu.Lock()
	gate, fail := f.gate, f.fail
	f.mu.Unlock()
	if gate != nil && ev.Source == "agent" {
		gate.hold()
	}
	if fail != nil {
		return forwarder.Accepted{}, fail
	}
	if !json.Valid(ev.Data) {
		return forwarder.Accepted{}, fmt.Errorf("event_data is not JSON: %q", ev.Data)
	}
	ev.Data = bytes.Clone(ev.Data)
	f.mu.Lock()
	defer f.mu.Unlock()
	key := ev.SessionID + "\x00" + ev.InteractionID
	f.seqs[key]++
	f.events = append(f.events, ev)
	f.canon[canonical(ev.Data)] = true
	return forwarder.Accepted{EventID: fmt.Sprintf("ev-%d", len(f.events)), Seq: f.seqs[key]}, nil
}

func (f *fakeForwarder) Stats() forwarder.Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

func (f *fakeForwarder) Stop(ctx context.Context) error {
	f.mu.Lock()
	f.stops++
	f.stopCtx = ctx
	hold, err := f.holdOff, f.stopErr
	f.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
		}
	}
	return err
}

func (f *fakeForwarder) Events() []forwarder.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]forwarder.Event(nil), f.events...)
}

// enqueued reports whether data was enqueued (JSON-equal: the server
// re-encodes payloads).
func (f *fakeForwarder) enqueued(data []byte) bool {
	c := canonical(data)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.canon[c]
}

func (f *fakeForwarder) types(session string) []string {
	var out []string
	for _, ev := range f.Events() {
		if session == "" || ev.SessionID == session {
			out = append(out, ev.Type)
		}
	}
	return out
}

func jsonEqual(a, b []byte) bool {
	ca, cb := canonical(a), canonical(b)
	return ca != "" && ca == cb
}

// canonical re-encodes JSON with sorted keys; "" if it is not JSON.
func canonical(b []byte) string {
	var x any
	if json.Unmarshal(b, &x) != nil {
		return ""
	}
	c, _ := json.Marshal(x)
	return string(c)
}

// sink is the server's stdout: it splits lines, decodes them and checks
// every line the moment it is written. Problems are reported when the test
// ends, so a late write cannot fail a finished test.
type sink struct {
	schema *schemaDoc
	fwd    *fakeForwarder

	mu       sync.Mutex
	partial  []byte
	lines    [][]byte
	events   []Event
	problems []string
	changed  chan struct{}
}

func newSink(schema *schemaDoc, fwd *fakeForwarder) *sink {
	return &sink{schema: schema, fwd: fwd, changed: make(chan struct{})}
}

func (s *sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.partial = append(s.partial, p...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			break
		}
		line := bytes.Clone(s.partial[:i])
		s.partial = s.partial[i+1:]
		s.addLocked(line)
	}
	return len(p), nil
}

func (s *sink) addLocked(line []byte) {
	s.lines = append(s.lines, line)
	for _, p := range checkEventLine(s.schema, line) {
		s.problems = append(s.problems, fmt.Sprintf("line %d %s: %s", len(s.lines), clip(line), p))
	}
	var ev Event
	if json.Unmarshal(line, &ev) == nil {
		if ev.Event == EventStream && s.fwd != nil && !s.fwd.enqueued(ev.Payload) {
			s.problems = append(s.problems, fmt.Sprintf("stream event before its line was spooled: %s", clip(line)))
		}
		s.events = append(s.events, ev)
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

// checkEventLine returns what is wrong with one stdout line: it must be a
// JSON object with event and an RFC 3339 UTC timestamp, valid against the
// schema (strictly: every member documented).
func checkEventLine(schema *schemaDoc, line []byte) []string {
	var probs []string
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		return []string{"not a JSON object: " + err.Error()}
	}
	if ev, _ := m["event"].(string); ev == "" {
		probs = append(probs, "no event")
	}
	ts, _ := m["timestamp"].(string)
	if tm, err := time.Parse(time.RFC3339Nano, ts); err != nil || !strings.HasSuffix(ts, "Z") || tm.Location() != time.UTC {
		probs = append(probs, fmt.Sprintf("timestamp %q is not RFC 3339 UTC", ts))
	}
	if schema != nil {
		probs = append(probs, schema.validateLine(line, true)...)
	}
	return probs
}

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

func (s *sink) snapshot() ([]Event, chan struct{}) { return s.since(0) }

// since returns the events from index i on, and a channel closed at the next write.
func (s *sink) since(i int) ([]Event, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Event(nil), s.events[min(i, len(s.events)):]...), s.changed
}

func (s *sink) Lines() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.lines...)
}

func (s *sink) Problems() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]string(nil), s.problems...)
	if len(s.partial) > 0 {
		out = append(out, fmt.Sprintf("unterminated last line %q", clip(s.partial)))
	}
	return out
}

// harness serves one Server over pipes with the fakes.
type harness struct {
	t    *testing.T
	srv  *Server
	exec *fakeExecutor
	fwd  *fakeForwarder
	out  *sink
	in   *io.PipeWriter
	sig  chan os.Signal
	done chan error

	inMu sync.Mutex
}

// waitTimeout bounds every wait; the fakes answer in microseconds.
const waitTimeout = 15 * time.Second

// setup is what a test may tune before its server is built: the server's
// options and its host's.
type setup struct {
	Options
	hostOptions
}

type hostOptions = host.Options

// testSetup is the harness's: the fakes, a backend nobody answers.
func testSetup(exec relay.Executor, fwd host.Forwarder) setup {
	return setup{
		Options: Options{Version: "test", CLIPath: "/fake/claude", CLIVersion: "2.1.330", BackendURL: "http://127.0.0.1:1"},
		hostOptions: host.Options{Forwarder: fwd, Core: relay.Options{Executor: exec, DefaultCwd: "/"},
			DrainTimeout: 5 * time.Second},
	}
}

// server builds the host and the server over it; the core refuses prompts
// for the server's CLIError unless the test set its own.
func (s setup) server() *Server {
	if s.Core.CLIError == "" {
		s.Core.CLIError = s.CLIError
	}
	s.Host = host.New(s.hostOptions)
	return New(s.Options)
}

func newHarness(t *testing.T, tune func(*setup, *fakeForwarder)) *harness {
	t.Helper()
	h := &harness{t: t, exec: &fakeExecutor{}, fwd: newFakeForwarder(), sig: make(chan os.Signal, 2), done: make(chan error, 1)}
	opts := testSetup(h.exec, h.fwd)
	if tune != nil {
		tune(&opts, h.fwd)
	}
	h.srv = opts.server()
	h.out = newSink(loadSchema(t), h.fwd)
	r, w := io.Pipe()
	h.in = w
	go func() { h.done <- h.srv.Serve(r, h.out, h.sig) }()
	t.Cleanup(func() {
		w.Close()
		r.Close()
		for _, p := range h.out.Problems() {
			t.Errorf("stdout: %s", p)
		}
	})
	return h
}

func (h *harness) send(line string) {
	h.t.Helper()
	h.inMu.Lock()
	defer h.inMu.Unlock()
	if _, err := io.WriteString(h.in, line+"\n"); err != nil {
		h.t.Fatalf("write command: %v", err)
	}
}

func (h *harness) cmd(c Command) {
	h.t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		h.t.Fatal(err)
	}
	h.send(string(b))
}

func (h *harness) prompt(runID, prompt string, opts PromptOptions) {
	h.t.Helper()
	h.cmd(Command{Action: ActionPrompt, RequestID: "req-" + runID, RunID: runID, SessionID: "sess-" + runID, Prompt: &prompt, Options: opts})
}

// waitFor returns the first event, in order of writing, that matches.
func (h *harness) waitFor(what string, match func(Event) bool) Event {
	h.t.Helper()
	deadline := time.After(waitTimeout)
	seen := 0
	for {
		evs, changed := h.out.since(seen)
		for _, ev := range evs {
			if match(ev) {
				return ev
			}
		}
		seen += len(evs)
		select {
		case <-changed:
		case <-deadline:
			h.t.Fatalf("no %s within %s; got:\n%s", what, waitTimeout, h.dump())
		}
	}
}

func (h *harness) waitEvent(name, runID string) Event {
	h.t.Helper()
	return h.waitFor(name+" of "+runID, func(ev Event) bool { return ev.Event == name && ev.RunID == runID })
}

func (h *harness) waitError(code, requestID string) Event {
	h.t.Helper()
	return h.waitFor(fmt.Sprintf("error %s for %q", code, requestID), func(ev Event) bool {
		return ev.Event == EventError && ev.Code == code && ev.RequestID == requestID
	})
}

// status asks for a status and returns the answer.
func (h *harness) status(id string) Event {
	h.t.Helper()
	h.cmd(Command{Action: ActionStatus, RequestID: id})
	return h.waitFor("status "+id, func(ev Event) bool { return ev.Event == EventStatus && ev.RequestID == id })
}

// serveResult waits for Serve to return.
func (h *harness) serveResult() error {
	h.t.Helper()
	select {
	case err := <-h.done:
		return err
	case <-time.After(waitTimeout):
		h.t.Fatalf("Serve did not return within %s; got:\n%s", waitTimeout, h.dump())
		return nil
	}
}

func (h *harness) events() []Event {
	evs, _ := h.out.snapshot()
	return evs
}

func (h *harness) count(match func(Event) bool) int {
	n := 0
	for _, ev := range h.events() {
		if match(ev) {
			n++
		}
	}
	return n
}

func (h *harness) dump() string {
	var b strings.Builder
	lines := h.out.Lines()
	if len(lines) > 60 {
		fmt.Fprintf(&b, "  (%d lines before)\n", len(lines)-60)
		lines = lines[len(lines)-60:]
	}
	for _, l := range lines {
		b.WriteString("  ")
		b.WriteString(clip(l))
		b.WriteByte('\n')
	}
	return b.String()
}

// lastIsShutdown checks that the shutdown event is the last line.
func (h *harness) lastIsShutdown() Event {
	h.t.Helper()
	evs := h.events()
	if len(evs) == 0 || evs[len(evs)-1].Event != EventShutdown {
		h.t.Fatalf("the last line is not shutdown:\n%s", h.dump())
	}
	if n := h.count(func(ev Event) bool { return ev.Event == EventShutdown }); n != 1 {
		h.t.Errorf("%d shutdown events", n)
	}
	return evs[len(evs)-1]
}
