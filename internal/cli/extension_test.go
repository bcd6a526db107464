package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/extension"
	"github.com/claude-relay/claude-relay/internal/localbackend"
	"github.com/claude-relay/claude-relay/internal/proc"
	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
	"github.com/claude-relay/claude-relay/internal/testkit/syncbuf"
)

// These tests drive `claude-relay extension` as a subprocess (this test
// binary with CLAUDE_RELAY_TEST_MAIN=1, see TestMain) over its stdin and
// stdout, with the real pinned CLI against scripted Messages APIs, and read
// what reached the backend through the backend's HTTP API.

// extTimeout bounds every wait for the helper; real CLI turns against the
// scripted API take a few seconds.
const extTimeout = 90 * time.Second

// extProc is a running `claude-relay extension`.
type extProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *syncBuffer
	exited chan struct{}
	code   int

	mu       sync.Mutex
	lines    [][]byte
	events   []extension.Event
	eventAt  []int // index in lines of each event
	problems []string
	changed  chan struct{}
	failures map[int]bool // run_failed events waitFor has returned, by index
}

type syncBuffer = syncbuf.Buffer

// helperEnv is the helper's whole environment: the CLI's isolated one (its
// HOME is the helper's too, so the data dir, spool and state live there),
// this binary as claude-relay, and the CLI to run.
func helperEnv(t *testing.T, cli *realcli.CLI, api *mockapi.Server, extra ...string) []string {
	t.Helper()
	env := append(cli.Env(t, api.URL()), envTestMain+"=1", "CLAUDE_RELAY_CLAUDE_PATH="+cli.Path, goraceEnv())
	return append(env, extra...)
}

// goraceEnv keeps a -race helper from sleeping 1s at every exit; races are
// still reported (exit status 66).
func goraceEnv() string {
	return "GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")
}

func startExtension(t *testing.T, dir string, env []string, extraFiles ...*os.File) *extProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "extension")
	cmd.Env = env
	cmd.Dir = dir
	cmd.ExtraFiles = extraFiles // the first is fd 3
	p := &extProc{t: t, cmd: cmd, stderr: &syncBuffer{}, exited: make(chan struct{}), changed: make(chan struct{})}
	cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		br := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				p.add(line)
			}
			if err != nil {
				break
			}
		}
		p.code = exitCode(cmd.Wait())
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			cmd.Process.Kill() //nolint:errcheck // the test failed before shutdown
			<-p.exited
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, pr := range p.problems {
			t.Errorf("extension stdout: %s", pr)
		}
		if t.Failed() {
			t.Logf("extension stderr:\n%s", p.stderr.String())
		}
	})
	return p
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// add checks and records one stdout line: a JSON object with an event and
// an RFC 3339 UTC timestamp, ending in a newline.
func (p *extProc) add(line []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !bytes.HasSuffix(line, []byte("\n")) {
		p.problems = append(p.problems, fmt.Sprintf("last line has no newline: %.200s", line))
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	p.lines = append(p.lines, line)
	var ev extension.Event
	var raw struct {
		Event     string `json:"event"`
		Timestamp string `json:"timestamp"`
	}
	if err := json.Unmarshal(line, &ev); err != nil || json.Unmarshal(line, &raw) != nil {
		p.problems = append(p.problems, fmt.Sprintf("not a JSON event (%v): %.200s", err, line))
	} else {
		ts, err := time.Parse(time.RFC3339Nano, raw.Timestamp)
		if raw.Event == "" || err != nil || !strings.HasSuffix(raw.Timestamp, "Z") || ts.Location() != time.UTC {
			p.problems = append(p.problems, fmt.Sprintf("event without a name or RFC 3339 UTC timestamp: %.200s", line))
		}
		p.events = append(p.events, ev)
		p.eventAt = append(p.eventAt, len(p.lines)-1)
	}
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *extProc) send(c extension.Command) {
	p.t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		p.t.Fatal(err)
	}
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.t.Fatalf("write to the extension: %v", err)
	}
}

func (p *extProc) prompt(runID, session, prompt string, o extension.PromptOptions) {
	p.t.Helper()
	p.send(extension.Command{Action: extension.ActionPrompt, RequestID: "req-" + runID, RunID: runID, SessionID: session, Prompt: &prompt, Options: o})
}

// waitFor returns the first event, in order of writing, that matches. A
// run_failed that does not match fails the test at once, with the event in
// full (reason, exit status, stderr): a run that failed will not bring what
// the test waits for, and waiting out extTimeout would only hide why. A
// run_failed that an earlier waitFor returned is the test's to judge.
func (p *extProc) waitFor(what string, match func(extension.Event) bool) extension.Event {
	p.t.Helper()
	deadline := time.After(extTimeout)
	seen := 0
	for {
		p.mu.Lock()
		evs, changed := p.events[seen:], p.changed
		p.mu.Unlock()
		for i, ev := range evs {
			failed := ev.Event == extension.EventRunFailed
			if match(ev) {
				if failed {
					p.handled(seen + i)
				}
				return ev
			}
			if failed && !p.wasHandled(seen+i) {
				p.t.Fatalf("run %s failed while the test waited for %s:\n  %s\nstdout:\n%s",
					ev.RunID, what, p.rawEvent(seen+i), p.dump())
			}
		}
		seen += len(evs)
		select {
		case <-changed:
		case <-p.exited:
			p.mu.Lock()
			more := len(p.events) > seen
			p.mu.Unlock()
			if !more {
				p.t.Fatalf("the extension exited (%d) before %s; stdout:\n%s", p.code, what, p.dump())
			}
		case <-deadline:
			p.t.Fatalf("no %s within %s; stdout:\n%s", what, extTimeout, p.dump())
		}
	}
}

func (p *extProc) handled(i int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failures == nil {
		p.failures = make(map[int]bool)
	}
	p.failures[i] = true
}

func (p *extProc) wasHandled(i int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failures[i]
}

// rawEvent is event i's stdout line, whole.
func (p *extProc) rawEvent(i int) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lines[p.eventAt[i]]
}

func (p *extProc) waitEvent(name, runID string) extension.Event {
	p.t.Helper()
	return p.waitFor(name+" of "+runID, func(ev extension.Event) bool { return ev.Event == name && ev.RunID == runID })
}

// waitEnd returns the run's final event.
func (p *extProc) waitEnd(runID string) extension.Event {
	p.t.Helper()
	return p.waitFor("the end of "+runID, func(ev extension.Event) bool {
		return ev.RunID == runID && (ev.Event == extension.EventRunCompleted || ev.Event == extension.EventRunFailed || ev.Event == extension.EventRunCancelled)
	})
}

// wait waits for the helper to exit, checks that shutdown was its last
// line, and returns the exit status and that event.
func (p *extProc) wait() (int, extension.Event) {
	p.t.Helper()
	select {
	case <-p.exited:
	case <-time.After(extTimeout):
		p.t.Fatalf("the extension did not exit; stdout:\n%s", p.dump())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.events)
	if n == 0 || p.events[n-1].Event != extension.EventShutdown {
		p.t.Fatalf("the last line is not shutdown:\n%s", p.dumpLocked())
	}
	for _, ev := range p.events[:n-1] {
		if ev.Event == extension.EventShutdown {
			p.t.Errorf("more than one shutdown event")
		}
	}
	return p.code, p.events[n-1]
}

func (p *extProc) count(match func(extension.Event) bool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, ev := range p.events {
		if match(ev) {
			n++
		}
	}
	return n
}

// streams returns the payloads of a run's stream events, in order.
func (p *extProc) streams(runID string) []json.RawMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []json.RawMessage
	for _, ev := range p.events {
		if ev.Event == extension.EventStream && ev.RunID == runID {
			out = append(out, ev.Payload)
		}
	}
	return out
}

func (p *extProc) dump() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dumpLocked()
}

func (p *extProc) dumpLocked() string {
	var b strings.Builder
	for _, l := range p.lines {
		if len(l) > 300 {
			l = append(l[:300:300], "…"...)
		}
		b.WriteString("  ")
		b.Write(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// backendAPI reads a backend through its HTTP API.
type backendAPI struct {
	url, token string
}

// dataDirBackend is the backend of a HOME's data dir: URL given, token from
// the data dir (the embedded default and serve share it).
func dataDirBackend(t *testing.T, home, url string) backendAPI {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(home, ".local", "share", "claude-relay", localbackend.TokenFile))
	if err != nil {
		t.Fatalf("backend token: %v", err)
	}
	return backendAPI{url: url, token: strings.TrimSpace(string(b))}
}

func (b backendAPI) get(t *testing.T, path string, v any) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+b.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("GET %s: %v: %s", path, err, body)
		}
	}
	return resp.StatusCode
}

// events pages through GET /api/sessions/{id}/events.
func (b backendAPI) events(t *testing.T, session string) []store.Event {
	t.Helper()
	var all []store.Event
	after := int64(0)
	for {
		var page struct {
			Events []store.Event `json:"events"`
			Next   int64         `json:"next"`
		}
		if code := b.get(t, fmt.Sprintf("/api/sessions/%s/events?after=%d&limit=100", session, after), &page); code != http.StatusOK {
			t.Fatalf("events of %s: HTTP %d", session, code)
		}
		all = append(all, page.Events...)
		if len(page.Events) == 0 || page.Next == after {
			return all
		}
		after = page.Next
	}
}

// waitForEnd polls the backend until a session holds its run's end event.
func (b backendAPI) waitForEnd(t *testing.T, session string) []store.Event {
	t.Helper()
	var evs []store.Event
	if !poll.Within(30*time.Second, func() bool {
		evs = b.events(t, session)
		return slices.ContainsFunc(evs, func(e store.Event) bool {
			return slices.Contains([]string{"relay.run_completed", "relay.run_failed", "relay.run_cancelled"}, e.EventType)
		})
	}) {
		t.Fatalf("session %s: the run's end never reached the backend (%d events)", session, len(evs))
	}
	return evs
}

// checkAtBackend checks one run against the backend: every stream payload
// the extension printed is there exactly once, in seq order, with no gaps in
// seq; lifecycle events frame them; and the session's conversation ID is
// the CLI's session ID.
func checkAtBackend(t *testing.T, be backendAPI, p *extProc, runID, session string, end extension.Event) {
	t.Helper()
	evs := be.waitForEnd(t, session)
	streams := p.streams(runID)
	if len(streams) == 0 {
		t.Fatalf("run %s printed no stream events", runID)
	}
	ids := map[string]bool{}
	for _, e := range evs {
		if ids[e.EventID] {
			t.Errorf("event_id %s stored twice", e.EventID)
		}
		ids[e.EventID] = true
	}
	slices.SortFunc(evs, func(a, b store.Event) int { return int(a.Seq - b.Seq) })
	var agent []store.Event
	lastCursor := int64(0)
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("seq %d at position %d: gaps or duplicates", e.Seq, i)
		}
		if e.Cursor <= lastCursor {
			t.Errorf("seq %d arrived before seq %d", e.Seq, e.Seq-1)
		}
		lastCursor = e.Cursor
		if e.Source == "agent" {
			agent = append(agent, e)
		}
	}
	if len(agent) != len(streams) {
		t.Fatalf("%d CLI events at the backend, the extension printed %d stream events", len(agent), len(streams))
	}
	for i := range agent {
		if !jsonEqual(agent[i].EventData, streams[i]) {
			t.Fatalf("event %d differs:\nbackend   %.300s\nextension %.300s", i, agent[i].EventData, streams[i])
		}
	}
	first, last := evs[0].EventType, evs[len(evs)-1].EventType
	if first != "relay.run_started" || last != "relay."+end.Event {
		t.Errorf("backend sequence runs from %s to %s, want relay.run_started to relay.%s", first, last, end.Event)
	}
	// The CLI's session ID: the session_id of its first non-system line.
	var cliSession string
	for _, s := range streams {
		var m struct {
			Type      string `json:"type"`
			SessionID string `json:"session_id"`
		}
		json.Unmarshal(s, &m) //nolint:errcheck // checked by add
		if m.Type != "system" && m.Type != "control_response" && m.Type != "control_request" && m.SessionID != "" {
			cliSession = m.SessionID
			break
		}
	}
	var sess store.Session
	if code := be.get(t, "/api/sessions/"+session, &sess); code != http.StatusOK {
		t.Fatalf("GET session %s: HTTP %d", session, code)
	}
	if cliSession == "" || sess.ExternalConversationID != cliSession || end.ConversationID != cliSession {
		t.Errorf("conversation: backend %q, run end %q, CLI session %q", sess.ExternalConversationID, end.ConversationID, cliSession)
	}
	t.Logf("%s: %d events at the backend, %d of them CLI lines; conversation %s", session, len(evs), len(agent), cliSession)
	if sess.EventCount != int64(len(evs)) {
		t.Errorf("session event_count %d, events %d", sess.EventCount, len(evs))
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return bytes.Equal(ja, jb)
}

// trustedDir is a fresh working directory the CLI trusts.
func trustedDir(t *testing.T, cli *realcli.CLI) string {
	t.Helper()
	d := t.TempDir()
	cli.TrustDir(d)
	return d
}

// shutdownOK sends shutdown and checks a clean exit.
func (p *extProc) shutdownOK() extension.Event {
	p.t.Helper()
	p.send(extension.Command{Action: extension.ActionShutdown, RequestID: "bye"})
	code, sd := p.wait()
	if code != 0 {
		p.t.Errorf("exit status %d after shutdown", code)
	}
	return sd
}

func TestExtensionConcurrentRuns(t *testing.T) {
	t.Parallel()
	cli := realcli.RealCLI(t)
	api := mockapi.New(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo concurrent-ok", "description": "Echo"}),
		mockapi.TextTurn("All done."),
	})
	cwd := trustedDir(t, cli)
	p := startExtension(t, cwd, helperEnv(t, cli, api))
	ready := p.waitFor("ready", func(ev extension.Event) bool { return ev.Event == extension.EventReady })
	if ready.Protocol != extension.ProtocolVersion || ready.CLIPath != cli.Path || ready.CLIVersion != realcli.Version || ready.Backend == "" {
		t.Fatalf("ready %+v", ready)
	}
	p.prompt("run-a", "sess-a", "first", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd, MaxTurns: 4}})
	p.prompt("run-b", "sess-b", "second", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd, MaxTurns: 4}})
	// Both are live at once.
	p.waitEvent(extension.EventRunStarted, "run-a")
	p.waitEvent(extension.EventRunStarted, "run-b")
	p.send(extension.Command{Action: extension.ActionStatus, RequestID: "both"})
	st := p.waitFor("status", func(ev extension.Event) bool { return ev.Event == extension.EventStatus && ev.RequestID == "both" })
	if len(st.Runs) != 2 || st.State != extension.StateRunning {
		t.Errorf("status while both run: %+v", st)
	}
	a, b := p.waitEnd("run-a"), p.waitEnd("run-b")
	for _, end := range []extension.Event{a, b} {
		if end.Event != extension.EventRunCompleted || end.Result.ExitCode != 0 || end.Result.Stdout != "All done." || end.ConversationID == "" {
			t.Errorf("%s: %s %+v", end.RunID, end.Event, end.Result)
		}
	}
	if a.ConversationID == b.ConversationID {
		t.Error("two runs share a conversation")
	}
	// The embedded default backend has every event; read it while it lives.
	be := dataDirBackend(t, cli.Home, ready.Backend)
	checkAtBackend(t, be, p, "run-a", "sess-a", a)
	checkAtBackend(t, be, p, "run-b", "sess-b", b)
	sd := p.shutdownOK()
	if sd.Forwarder == nil || sd.Forwarder.Delivered == 0 || sd.Forwarder.Pending != 0 {
		t.Errorf("shutdown forwarder figures %+v", sd.Forwarder)
	}
}

func TestExtensionApprovals(t *testing.T) {
	t.Parallel()
	cli := realcli.RealCLI(t)
	allowDir, denyDir := trustedDir(t, cli), trustedDir(t, cli)
	writeScript := func(dir, after string) mockapi.Script {
		return mockapi.Script{
			mockapi.ToolTurn("Write", map[string]any{"file_path": filepath.Join(dir, "out.txt"), "content": "written\n"}),
			mockapi.TextTurn(after),
		}
	}
	allowAPI := mockapi.New(t, writeScript(allowDir, "wrote it"))
	denyAPI := mockapi.New(t, writeScript(denyDir, "did not write"))
	p := startExtension(t, allowDir, helperEnv(t, cli, allowAPI))
	ready := p.waitFor("ready", func(ev extension.Event) bool { return ev.Event == extension.EventReady })
	p.prompt("allow", "sess-allow", "write it", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: allowDir, Approvals: true, MaxTurns: 4}})
	p.prompt("deny", "sess-deny", "write it", extension.PromptOptions{
		RunOptions: executor.RunOptions{
			Cwd:       denyDir,
			Approvals: true,
			MaxTurns:  4,
			Env:       map[string]string{"ANTHROPIC_BASE_URL": denyAPI.URL()},
		},
	})
	reqAllow := p.waitEvent(extension.EventApprovalRequested, "allow")
	reqDeny := p.waitEvent(extension.EventApprovalRequested, "deny")
	for _, r := range []extension.Event{reqAllow, reqDeny} {
		var in struct {
			FilePath string `json:"file_path"`
		}
		json.Unmarshal(r.Input, &in) //nolint:errcheck
		if r.ToolName != "Write" || r.ApprovalID == "" || r.ToolUseID == "" || !strings.HasSuffix(in.FilePath, "out.txt") {
			t.Errorf("approval_requested %+v", r)
		}
	}
	p.send(extension.Command{Action: extension.ActionApprove, RequestID: "ghost", ApprovalID: "no-such-approval", Decision: "allow"})
	p.waitFor("unknown_approval", func(ev extension.Event) bool {
		return ev.Event == extension.EventError && ev.RequestID == "ghost" && ev.Code == extension.CodeUnknownApprove
	})
	p.send(extension.Command{Action: extension.ActionApprove, RequestID: "yes", RunID: "allow", ApprovalID: reqAllow.ApprovalID, Decision: "allow"})
	p.send(extension.Command{Action: extension.ActionApprove, RequestID: "no", RunID: "deny", ApprovalID: reqDeny.ApprovalID, Decision: "deny", Reason: "not in this test"})
	endAllow, endDeny := p.waitEnd("allow"), p.waitEnd("deny")
	if endAllow.Event != extension.EventRunCompleted || endAllow.Result.Stdout != "wrote it" {
		t.Errorf("allowed run: %s %+v", endAllow.Event, endAllow.Result)
	}
	if endDeny.Event != extension.EventRunCompleted || endDeny.Result.Stdout != "did not write" {
		t.Errorf("denied run: %s %+v", endDeny.Event, endDeny.Result)
	}
	if b, err := os.ReadFile(filepath.Join(allowDir, "out.txt")); err != nil || string(b) != "written\n" {
		t.Errorf("the allowed write: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(denyDir, "out.txt")); !os.IsNotExist(err) {
		t.Errorf("the denied write happened: %v", err)
	}
	var told bool
	for _, tr := range denyAPI.ToolResults() {
		told = told || (tr.IsError && strings.Contains(tr.Content, "not in this test"))
	}
	if !told {
		t.Errorf("the model never heard the deny reason: %+v", denyAPI.ToolResults())
	}
	if n := p.count(func(ev extension.Event) bool {
		return ev.Event == extension.EventError && (ev.RequestID == "yes" || ev.RequestID == "no")
	}); n != 0 {
		t.Errorf("%d errors for valid answers", n)
	}
	be := dataDirBackend(t, cli.Home, ready.Backend)
	checkAtBackend(t, be, p, "allow", "sess-allow", endAllow)
	checkAtBackend(t, be, p, "deny", "sess-deny", endDeny)
	p.shutdownOK()
}

// runProcesses lists the live processes carrying a run's marker (the CLI
// and every tool it started), with their command lines.
func runProcesses(runID string) []string {
	ps, _ := proc.FindMarked(runID)
	var out []string
	for _, pr := range ps {
		b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pr.PID), "cmdline"))
		out = append(out, fmt.Sprintf("%d %s", pr.PID, bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
	}
	return out
}

// waitSleeping waits until a run's tool runs `sleep arg`.
func waitSleeping(t *testing.T, p *extProc, runID, arg string) {
	t.Helper()
	sleeping := func() bool {
		return slices.ContainsFunc(runProcesses(runID), func(c string) bool { return strings.Contains(c, "sleep "+arg) })
	}
	if !poll.Within(extTimeout, sleeping) {
		t.Fatalf("run %s never started sleep %s; stdout:\n%s", runID, arg, p.dump())
	}
}

// waitGone waits until no process of the run is left, at most 10s after
// since (CONTRACT §4).
func waitGone(t *testing.T, runID string, since time.Time) {
	t.Helper()
	if !poll.Within(10*time.Second-time.Since(since), func() bool { return len(runProcesses(runID)) == 0 }) {
		t.Fatalf("processes of run %s outlived the cancel by 10s: %q", runID, runProcesses(runID))
	}
	t.Logf("run %s: no process left %v after the cancel", runID, time.Since(since).Round(time.Millisecond))
}

func TestExtensionCancelOneRunLeavesTheOther(t *testing.T) {
	t.Parallel()
	cli := realcli.RealCLI(t)
	cwd := trustedDir(t, cli)
	slowAPI := mockapi.New(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo start && sleep 3171", "description": "Wait a long time"}),
		mockapi.TextTurn("never"),
	})
	otherAPI := mockapi.New(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "sleep 6 && echo other-done", "description": "Wait a bit"}),
		mockapi.TextTurn("other finished"),
	})
	p := startExtension(t, cwd, helperEnv(t, cli, slowAPI))
	ready := p.waitFor("ready", func(ev extension.Event) bool { return ev.Event == extension.EventReady })
	victim, other := "cancel-"+uuid.NewString(), "other-"+uuid.NewString()
	p.prompt(victim, "sess-victim", "wait", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd, MaxTurns: 4}})
	p.prompt(other, "sess-other", "wait a bit", extension.PromptOptions{
		RunOptions: executor.RunOptions{
			Cwd:      cwd,
			MaxTurns: 4,
			Env:      map[string]string{"ANTHROPIC_BASE_URL": otherAPI.URL()},
		},
	})
	waitSleeping(t, p, victim, "3171")
	waitSleeping(t, p, other, "6")
	cancelled := time.Now()
	p.send(extension.Command{Action: extension.ActionCancel, RequestID: "stop", RunID: victim})
	end := p.waitEnd(victim)
	if end.Event != extension.EventRunCancelled || end.Result.ExitCode != 130 {
		t.Errorf("cancelled run: %s %+v", end.Event, end.Result)
	}
	p.send(extension.Command{Action: extension.ActionStatus, RequestID: "after-cancel"})
	st := p.waitFor("status", func(ev extension.Event) bool {
		return ev.Event == extension.EventStatus && ev.RequestID == "after-cancel"
	})
	if len(st.Runs) != 1 || st.Runs[0].RunID != other {
		t.Errorf("after the cancel, live runs %+v (want only %s)", st.Runs, other)
	}
	waitGone(t, victim, cancelled)
	otherEnd := p.waitEnd(other)
	if otherEnd.Event != extension.EventRunCompleted || otherEnd.Result.ExitCode != 0 || otherEnd.Result.Stdout != "other finished" {
		t.Errorf("the other run: %s %+v", otherEnd.Event, otherEnd.Result)
	}
	be := dataDirBackend(t, cli.Home, ready.Backend)
	checkAtBackend(t, be, p, victim, "sess-victim", end)
	checkAtBackend(t, be, p, other, "sess-other", otherEnd)
	p.shutdownOK()
	if left := runProcesses(other); len(left) > 0 {
		t.Errorf("processes of the completed run left: %q", left)
	}
}

func TestExtensionSIGTERM(t *testing.T) {
	t.Parallel()
	cli := realcli.RealCLI(t)
	cwd := trustedDir(t, cli)
	api := mockapi.New(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo start && sleep 3172", "description": "Wait a long time"}),
		mockapi.TextTurn("never"),
	})
	p := startExtension(t, cwd, helperEnv(t, cli, api))
	runID := "sigterm-" + uuid.NewString()
	p.prompt(runID, "sess-sigterm", "wait", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd, MaxTurns: 4}})
	waitSleeping(t, p, runID, "3172")
	signalled := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, sd := p.wait()
	if code != 0 {
		t.Errorf("exit status %d after SIGTERM", code)
	}
	sig := p.waitFor("signal", func(ev extension.Event) bool { return ev.Event == extension.EventSignal })
	if sig.Signal != syscall.SIGTERM.String() {
		t.Errorf("signal event %+v", sig)
	}
	end := p.waitEnd(runID)
	if end.Event != extension.EventRunCancelled {
		t.Errorf("the run ended with %s", end.Event)
	}
	if !strings.Contains(sd.Reason, "signal") {
		t.Errorf("shutdown reason %q", sd.Reason)
	}
	waitGone(t, runID, signalled)
	// The helper drained into the embedded default before it exited: serve
	// on the same data dir shows every event.
	url := startServe(t, []string{"HOME=" + cli.Home, "PATH=" + os.Getenv("PATH")}, cli.Home, "")
	checkAtBackend(t, dataDirBackend(t, cli.Home, url), p, runID, "sess-sigterm", end)
}

// runMain runs one claude-relay command line as a subprocess.
func runMain(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(slices.Clone(env), envTestMain+"=1", goraceEnv())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), exitCode(err)
}

// startServe runs `claude-relay serve` on a free loopback port with its
// data dir under home and returns its URL once it answers. An empty db is
// serve's default: the data dir's database, the embedded default's too.
func startServe(t *testing.T, env []string, home, db string) string {
	t.Helper()
	args := []string{"serve", "--addr=127.0.0.1:0"}
	if db != "" {
		args = append(args, "--db="+db)
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(slices.Clone(env), envTestMain+"=1", goraceEnv())
	errb := &syncBuffer{}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }() //nolint:errcheck // the status is not the point
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill() //nolint:errcheck
			<-exited
			t.Errorf("serve ignored SIGTERM")
		}
	})
	info := filepath.Join(home, ".local", "share", "claude-relay", localbackend.InfoFile)
	var url string
	if !poll.Within(30*time.Second, func() bool {
		var si localbackend.Info
		if b, err := os.ReadFile(info); err == nil && json.Unmarshal(b, &si) == nil && si.PID == cmd.Process.Pid {
			if resp, err := http.Get(si.URL + "/healthz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					url = si.URL
					return true
				}
			}
		}
		select {
		case <-exited:
			t.Fatalf("serve exited: %s", errb.String())
		default:
		}
		return false
	}) {
		t.Fatalf("serve did not come up: %s", errb.String())
	}
	return url
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestExtensionShutdownWithBackendDownThenFlush: with the backend down,
// shutdown leaves every event in the spool; a later `spool flush` against
// `serve` delivers each exactly once.
func TestExtensionShutdownWithBackendDownThenFlush(t *testing.T) {
	t.Parallel()
	cli := realcli.RealCLI(t)
	cwd := trustedDir(t, cli)
	api := mockapi.New(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo spooled-ok", "description": "Echo"}),
		mockapi.TextTurn("Spooled."),
	})
	down := "http://" + closedPort(t)
	p := startExtension(t, cwd, helperEnv(t, cli, api, "CLAUDE_RELAY_BACKEND_URL="+down, "CLAUDE_RELAY_FORWARDER_DRAIN_TIMEOUT=1s"))
	ready := p.waitFor("ready", func(ev extension.Event) bool { return ev.Event == extension.EventReady })
	if ready.Backend != down {
		t.Errorf("ready backend %q, want %q", ready.Backend, down)
	}
	p.prompt("spooled", "sess-spooled", "go", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd, MaxTurns: 4}})
	end := p.waitEnd("spooled")
	if end.Event != extension.EventRunCompleted || end.Result.Stdout != "Spooled." {
		t.Fatalf("run: %s %+v", end.Event, end.Result)
	}
	sd := p.shutdownOK()
	if !strings.Contains(sd.Message, "left in the spool") || sd.Forwarder == nil || sd.Forwarder.Pending == 0 || sd.Forwarder.Delivered != 0 {
		t.Errorf("shutdown %+v forwarder %+v", sd, sd.Forwarder)
	}
	streams := p.streams("spooled")

	// The spool holds the run: its CLI lines and the relay's own events.
	baseEnv := []string{"HOME=" + cli.Home, "PATH=" + os.Getenv("PATH")}
	out, errOut, code := runMain(t, baseEnv, "spool", "status", "--json")
	var st struct {
		Sessions []struct {
			SessionID string `json:"session_id"`
			Pending   int64  `json:"pending"`
		} `json:"sessions"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st.Sessions) != 1 || st.Sessions[0].SessionID != "sess-spooled" {
		t.Fatalf("spool status (%d): %s %s", code, out, errOut)
	}
	pending := st.Sessions[0].Pending
	if pending < int64(len(streams))+2 {
		t.Errorf("%d pending, but the run printed %d stream events", pending, len(streams))
	}
	if pending != sd.Forwarder.Pending {
		t.Errorf("spool status says %d pending, the shutdown event %d", pending, sd.Forwarder.Pending)
	}

	// serve comes up on the same data dir. The events were spooled for
	// the backend that was down, so a plain flush (no backend.url: the
	// data dir's own backend) leaves them and says how to move them;
	// `--to local` finds the serve and delivers them there.
	url := startServe(t, baseEnv, cli.Home, "sqlite:"+filepath.Join(t.TempDir(), "serve.db"))
	out, errOut, code = runMain(t, baseEnv, "spool", "flush")
	if code != 0 || !strings.Contains(out, "delivered 0 events") || !strings.Contains(out, "`claude-relay spool flush --to local`") {
		t.Fatalf("plain flush (%d): %s %s", code, out, errOut)
	}
	out, errOut, code = runMain(t, baseEnv, "spool", "flush", "--to", "local")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("delivered %d events to %s", pending, url)) {
		t.Fatalf("flush --to local (%d): %s %s", code, out, errOut)
	}
	out, _, code = runMain(t, baseEnv, "spool", "flush")
	if code != 0 || !strings.Contains(out, "delivered 0 events") {
		t.Errorf("second flush (%d): %s", code, out)
	}
	if out, _, _ := runMain(t, baseEnv, "spool", "status"); !strings.Contains(out, "nothing waiting") {
		t.Errorf("after the flush: %s", out)
	}
	be := dataDirBackend(t, cli.Home, url)
	checkAtBackend(t, be, p, "spooled", "sess-spooled", end)
	if evs := be.events(t, "sess-spooled"); int64(len(evs)) != pending {
		t.Errorf("the backend has %d events, the spool had %d", len(evs), pending)
	}
}
