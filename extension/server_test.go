package extension

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/host"
	"github.com/claude-relay/claude-relay/internal/relay"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
	"github.com/claude-relay/claude-relay/internal/wire"
)

func isRun(name, runID string) func(Event) bool {
	return func(ev Event) bool { return ev.Event == name && ev.RunID == runID }
}

func TestReadyFirstAndShutdownLastOnEOF(t *testing.T) {
	h := newHarness(t, func(o *setup, _ *fakeForwarder) { o.DashboardURL = "http://127.0.0.1:1/" })
	ready := h.waitFor("ready", func(ev Event) bool { return ev.Event == EventReady })
	if evs := h.events(); evs[0].Event != EventReady {
		t.Fatalf("first event %q", evs[0].Event)
	}
	if ready.Protocol != ProtocolVersion || ready.PID != os.Getpid() || ready.Version != "test" || ready.CLIPath != "/fake/claude" ||
		ready.CLIVersion != "2.1.330" || ready.Backend != "http://127.0.0.1:1" || ready.Dashboard != "http://127.0.0.1:1/" {
		t.Errorf("ready %+v", ready)
	}
	h.in.Close()
	if err := h.serveResult(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	sd := h.lastIsShutdown()
	if sd.Reason != "stdin closed" || sd.Forwarder == nil {
		t.Errorf("shutdown %+v", sd)
	}
	if h.fwd.stops != 1 {
		t.Errorf("forwarder stopped %d times", h.fwd.stops)
	}
}

func TestReadyReportsMissingCLI(t *testing.T) {
	h := newHarness(t, func(o *setup, _ *fakeForwarder) { o.CLIPath, o.CLIVersion, o.CLIError = "", "", "no claude in PATH" })
	ready := h.waitFor("ready", func(ev Event) bool { return ev.Event == EventReady })
	if ready.CLIError != "no claude in PATH" || ready.CLIPath != "" {
		t.Errorf("ready %+v", ready)
	}
}

// TestBadCommandsGetErrorsAndServingGoesOn sends one bad line after another
// to the same server; each gets its error and the server still answers.
func TestBadCommandsGetErrorsAndServingGoesOn(t *testing.T) {
	h := newHarness(t, func(o *setup, _ *fakeForwarder) { o.MaxLine = 1024 })
	tests := []struct {
		name, line, code, requestID string
	}{
		{"truncated JSON keeps its request_id", `{"action":"prompt","request_id":"r9",`, CodeBadJSON, "r9"},
		{"not JSON", `hello there`, CodeBadJSON, ""},
		{"wrong field type", `{"action":"status","request_id":"r7","run_id":5}`, CodeBadJSON, "r7"},
		{"array", `[1,2,3]`, CodeBadJSON, ""},
		{"unknown action", `{"action":"dance","request_id":"r1"}`, CodeUnknownAction, "r1"},
		{"missing action", `{"request_id":"r2","prompt":"x"}`, CodeMissingField, "r2"},
		{"null", `null`, CodeMissingField, ""},
		{"missing prompt", `{"action":"prompt","request_id":"r3"}`, CodeMissingField, "r3"},
		{"bad permission mode", `{"action":"prompt","request_id":"r4","prompt":"x","options":{"permission_mode":"yolo"}}`, CodeBadValue, "r4"},
		{"approve without approval_id", `{"action":"approve","request_id":"r5","decision":"allow"}`, CodeMissingField, "r5"},
		{"approve with a bad decision", `{"action":"approve","request_id":"r6","approval_id":"a","decision":"maybe"}`, CodeBadValue, "r6"},
		{"unknown approval", `{"action":"approve","request_id":"r8","approval_id":"nope","decision":"allow"}`, CodeUnknownApprove, "r8"},
		{"cancel of an unknown run", `{"action":"cancel","request_id":"r10","run_id":"ghost"}`, CodeUnknownRun, "r10"},
		{"terminal without support", `{"action":"terminal","request_id":"r11","prompt":"x"}`, CodeInternal, "r11"},
		{"line over MaxLine", `{"action":"status","request_id":"long","pad":"` + strings.Repeat("x", 2000) + `"}`, CodeLineTooLong, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.t = t
			h.send(tt.line)
			ev := h.waitFor(tt.code, func(ev Event) bool {
				return ev.Event == EventError && ev.Code == tt.code && ev.RequestID == tt.requestID
			})
			if ev.Message == "" {
				t.Error("an error event needs a message")
			}
			// Still serving.
			h.status(fmt.Sprintf("after-%d", i))
		})
	}
	h.t = t
	// No run started from any of it; the long line did not become a status.
	if n := len(h.exec.Requests()); n != 0 {
		t.Errorf("%d runs started", n)
	}
	if n := h.count(func(ev Event) bool { return ev.RequestID == "long" && ev.Event == EventStatus }); n != 0 {
		t.Error("an over-long line was executed")
	}
	// Unknown fields and blank lines are fine.
	h.send("")
	h.send("   ")
	h.send(`{"action":"status","request_id":"extra","some_future_field":{"x":1}}`)
	h.waitFor("status extra", func(ev Event) bool { return ev.Event == EventStatus && ev.RequestID == "extra" })
	if n := h.count(func(ev Event) bool { return ev.Event == EventError }); n != len(tests) {
		t.Errorf("%d error events for %d bad lines", n, len(tests))
	}
}

// TestBlankPromptCompletesWithoutCLI uses the real executor, which completes
// a blank prompt at once without starting anything (seed 002).
func TestBlankPromptCompletesWithoutCLI(t *testing.T) {
	exec := executor.New(executor.Options{}) // no CLI at all
	h := newHarness(t, func(o *setup, _ *fakeForwarder) { o.Core.Executor = exec })
	h.prompt("blank", "  \n\t ", PromptOptions{})
	done := h.waitFor("end of blank", func(ev Event) bool {
		return ev.RunID == "blank" && strings.HasPrefix(ev.Event, "run_") && ev.Event != EventRunStarted
	})
	if done.Event != EventRunCompleted || done.Result == nil || done.Result.ExitCode != 0 {
		t.Fatalf("blank prompt: %+v", done)
	}
	if n := h.count(func(ev Event) bool { return ev.Event == EventStream }); n != 0 {
		t.Errorf("%d stream events", n)
	}
	// The same executor cannot run a real prompt: that fails, it does not hang.
	h.prompt("real", "hello", PromptOptions{})
	failed := h.waitEvent(EventRunFailed, "real")
	if failed.Result.ExitCode != 1 || !strings.Contains(failed.Reason, "no Claude CLI") {
		t.Errorf("run without CLI: %+v %+v", failed, failed.Result)
	}
	if got := h.fwd.types("sess-blank"); !slices.Equal(got, []string{"relay.run_started", "relay.run_completed"}) {
		t.Errorf("forwarded %v", got)
	}
}

func TestRunLifecycle(t *testing.T) {
	h := newHarness(t, nil)
	h.prompt("r1", "lines 3", PromptOptions{RunOptions: executor.RunOptions{Model: "m1", Cwd: "/tmp", MaxTurns: 2, Env: map[string]string{"K": "v"}, AdditionalArgs: []string{"--x"}}})
	started := h.waitEvent(EventRunStarted, "r1")
	if started.RequestID != "req-r1" || started.SessionID != "sess-r1" || started.InteractionID == "" || started.Cwd != "/tmp" {
		t.Errorf("run_started %+v", started)
	}
	done := h.waitEvent(EventRunCompleted, "r1")
	if done.Result.Stdout != "3 lines" || done.ConversationID != "conv-r1" || done.Usage == nil || done.Usage.OutputTokens != 4 ||
		done.TotalCostUSD == nil || *done.TotalCostUSD != 0.25 || done.InteractionID != started.InteractionID {
		t.Errorf("run_completed %+v", done)
	}
	// The idle state is written after run_completed, as its own line: wait for
	// it before reading the whole stream, or the read can end between the two.
	h.waitFor("idle after r1", func(ev Event) bool { return ev.Event == EventState && ev.State == StateIdle })
	var order []string
	var n []int
	for _, ev := range h.events() {
		order = append(order, ev.Event)
		if ev.Event == EventStream {
			var p struct{ N int }
			json.Unmarshal(ev.Payload, &p) //nolint:errcheck // checked by the sink
			n = append(n, p.N)
		}
	}
	want := []string{EventReady, EventRunStarted, EventState, EventStream, EventStream, EventStream, EventRunCompleted, EventState}
	if !slices.Equal(order, want) {
		t.Errorf("events %v, want %v", order, want)
	}
	if !slices.Equal(n, []int{0, 1, 2}) {
		t.Errorf("stream order %v", n)
	}
	evs := h.events()
	if evs[2].State != StateRunning || evs[len(evs)-1].State != StateIdle {
		t.Errorf("states %q then %q", evs[2].State, evs[len(evs)-1].State)
	}
	req := h.exec.Requests()[0]
	if req.RunID != "r1" || req.Model != "m1" || req.Cwd != "/tmp" || req.MaxTurns != 2 || req.Env["K"] != "v" || !slices.Equal(req.AdditionalArgs, []string{"--x"}) {
		t.Errorf("request %+v", req)
	}
	// The backend gets the lifecycle around the CLI's lines, in order.
	fwd := h.fwd.Events()
	types := h.fwd.types("")
	if !slices.Equal(types, []string{"relay.run_started", "assistant", "assistant", "assistant", "relay.run_completed"}) {
		t.Fatalf("forwarded %v", types)
	}
	for _, ev := range fwd {
		if ev.SessionID != "sess-r1" || ev.InteractionID != started.InteractionID {
			t.Errorf("forwarded event with session %q interaction %q", ev.SessionID, ev.InteractionID)
		}
		wantSource := "agent"
		if strings.HasPrefix(ev.Type, "relay.") {
			wantSource = "relay"
		}
		if ev.Source != wantSource {
			t.Errorf("%s has source %q", ev.Type, ev.Source)
		}
	}
	var completed struct {
		RunID          string `json:"run_id"`
		Status         string `json:"status"`
		ConversationID string `json:"conversation_id"`
		Result         Result `json:"result"`
	}
	if err := json.Unmarshal(fwd[len(fwd)-1].Data, &completed); err != nil || completed.RunID != "r1" || completed.Status != "completed" ||
		completed.ConversationID != "conv-r1" || completed.Result.Stdout != "3 lines" {
		t.Errorf("relay.run_completed %s (%v)", fwd[len(fwd)-1].Data, err)
	}
}

func TestDefaultsAndGeneratedIDs(t *testing.T) {
	h := newHarness(t, nil)
	p := "hi"
	h.cmd(Command{Action: ActionPrompt, RequestID: "q", Prompt: &p})
	started := h.waitFor("run_started", func(ev Event) bool { return ev.Event == EventRunStarted && ev.RequestID == "q" })
	for _, id := range []string{started.RunID, started.SessionID, started.InteractionID} {
		if len(id) != 36 || strings.Count(id, "-") != 4 {
			t.Errorf("generated id %q is not a uuid", id)
		}
	}
	if started.Cwd != "/" {
		t.Errorf("default cwd %q", started.Cwd)
	}
	h.waitEvent(EventRunCompleted, started.RunID)
}

func TestRunFailedAndNotices(t *testing.T) {
	h := newHarness(t, nil)
	h.prompt("f", "fail", PromptOptions{})
	failed := h.waitEvent(EventRunFailed, "f")
	if failed.Result.ExitCode != 1 || failed.Result.Stderr != "Error during execution" || !strings.Contains(failed.Reason, "told to fail") {
		t.Errorf("run_failed %+v", failed)
	}
	h.prompt("l", "limit", PromptOptions{})
	notice := h.waitEvent(EventLimitNotice, "l")
	if notice.Message == "" || notice.SessionID != "sess-l" {
		t.Errorf("limit_notice %+v", notice)
	}
	if done := h.waitEvent(EventRunCompleted, "l"); done.Result.ExitCode != 0 {
		t.Errorf("a limit is a completion: %+v", done)
	}
	h.prompt("m", "malformed", PromptOptions{})
	bad := h.waitFor("malformed_output", func(ev Event) bool { return ev.Event == EventError && ev.RunID == "m" })
	if bad.Code != "malformed_output" || !strings.Contains(bad.Message, "not json <at all>") {
		t.Errorf("malformed error %+v", bad)
	}
	h.prompt("e", "stderr", PromptOptions{})
	h.waitEvent(EventRunCompleted, "e")
	h.waitEvent(EventRunCompleted, "m")
	want := map[string][]string{
		"sess-f": {"relay.run_started", "relay.run_failed"},
		"sess-l": {"relay.run_started", "assistant", "relay.limit_notice", "relay.run_completed"},
		"sess-m": {"relay.run_started", "relay.malformed_line", "relay.run_completed"},
		"sess-e": {"relay.run_started", "relay.stderr", "relay.run_completed"},
	}
	for sess, w := range want {
		if got := h.fwd.types(sess); !slices.Equal(got, w) {
			t.Errorf("%s forwarded %v, want %v", sess, got, w)
		}
	}
	// stderr goes to the backend only.
	if n := h.count(func(ev Event) bool { return ev.RunID == "e" && ev.Event == EventError }); n != 0 {
		t.Errorf("stderr produced %d error events", n)
	}
}

// TestStreamOnlyAfterSpooled holds the forwarder's Enqueue of CLI lines: no
// stream event may appear before its line is in the spool.
func TestStreamOnlyAfterSpooled(t *testing.T) {
	gate := newGate()
	h := newHarness(t, nil)
	t.Cleanup(gate.open) // a failed check leaves no executor held
	h.waitFor("ready", func(ev Event) bool { return ev.Event == EventReady })
	h.fwd.mu.Lock()
	h.fwd.gate = gate
	h.fwd.mu.Unlock()
	h.prompt("g", "lines 2", PromptOptions{})
	h.waitEvent(EventRunStarted, "g")
	select {
	case <-gate.entered: // the executor is held in Enqueue of its first line
	case <-time.After(waitTimeout):
		t.Fatalf("the run's first line never reached Enqueue within %s:\n%s", waitTimeout, h.dump())
	}
	if h.count(func(ev Event) bool { return ev.Event == EventStream }) != 0 {
		t.Fatalf("a stream event was written while its line was not spooled:\n%s", h.dump())
	}
	if got := h.fwd.types("sess-g"); !slices.Equal(got, []string{"relay.run_started"}) {
		t.Fatalf("forwarded %v while held", got)
	}
	gate.open()
	h.waitEvent(EventRunCompleted, "g")
	if n := h.count(func(ev Event) bool { return ev.Event == EventStream }); n != 2 {
		t.Errorf("%d stream events after release", n)
	}
	// The sink checked that every stream payload had been enqueued first.
}

func TestSpoolFullGivesErrorAndNoStream(t *testing.T) {
	h := newHarness(t, func(_ *setup, f *fakeForwarder) {
		f.fail = fmt.Errorf("%w: 100 bytes waiting (spool.max_bytes 100)", forwarder.ErrSpoolFull)
	})
	h.prompt("full", "lines 3", PromptOptions{})
	done := h.waitEvent(EventRunCompleted, "full")
	if done.Result.Stdout != "3 lines" {
		t.Errorf("the run goes on: %+v", done)
	}
	if n := h.count(func(ev Event) bool { return ev.Event == EventStream }); n != 0 {
		t.Errorf("%d stream events for lines that were not spooled", n)
	}
	errs := 0
	for _, ev := range h.events() {
		if ev.Event == EventError {
			errs++
			if ev.Code != CodeSpoolFull || ev.RunID != "full" || ev.SessionID != "sess-full" || !strings.Contains(ev.Message, "spool full") {
				t.Errorf("error %+v", ev)
			}
		}
	}
	// run_started, three lines, run_completed: five events not spooled.
	if errs != 5 {
		t.Errorf("%d spool_full errors, want 5", errs)
	}

	// Any other spool failure is code spool.
	h.fwd.mu.Lock()
	h.fwd.fail = errors.New("disk on fire")
	h.fwd.mu.Unlock()
	h.prompt("disk", "x", PromptOptions{})
	h.waitFor("spool error", func(ev Event) bool { return ev.Event == EventError && ev.RunID == "disk" && ev.Code == CodeSpool })
}

func TestApprovalsRoundTrip(t *testing.T) {
	h := newHarness(t, nil)
	h.prompt("a1", "approve Bash", PromptOptions{RunOptions: executor.RunOptions{Approvals: true}})
	h.prompt("a2", "approve Write", PromptOptions{RunOptions: executor.RunOptions{Approvals: true}})
	req1 := h.waitEvent(EventApprovalRequested, "a1")
	req2 := h.waitEvent(EventApprovalRequested, "a2")
	if req1.ApprovalID != "ap-a1" || req1.ToolName != "Bash" || req1.ToolUseID != "toolu_a1" || !jsonEqual(req1.Input, []byte(`{"command":"ls"}`)) ||
		req1.SessionID != "sess-a1" || req1.Message != "lists files" {
		t.Errorf("approval_requested %+v", req1)
	}
	if !h.exec.Requests()[0].Approvals {
		t.Error("options.approvals did not reach the executor")
	}
	st := h.status("pending")
	if len(st.Runs) != 2 || st.Runs[0].Approvals != 1 || st.Runs[1].Approvals != 1 {
		t.Errorf("status runs %+v", st.Runs)
	}
	// A wrong run_id does not find the approval.
	h.cmd(Command{Action: ActionApprove, RequestID: "wrong-run", RunID: "a2", ApprovalID: req1.ApprovalID, Decision: "allow"})
	h.waitError(CodeUnknownApprove, "wrong-run")
	if req1.Kind != "tool" || !slices.Equal(req1.Options, wire.OptionsFor(wire.ApprovalTool)) {
		t.Errorf("kind %q options %v", req1.Kind, req1.Options)
	}
	// Answers that do not fit are errors, and the approval stays pending.
	for id, bad := range map[string]Command{
		"no-decision":   {},
		"not-an-option": {Decision: "keep_planning"},
		"input-array":   {Decision: "allow", UpdatedInput: json.RawMessage(`["ls"]`)},
		"answers-tool":  {Decision: "allow", Answers: json.RawMessage(`{"Which?":"A"}`)},
		"interrupt":     {Decision: "allow", Interrupt: true},
	} {
		bad.Action, bad.RequestID, bad.ApprovalID = ActionApprove, id, req1.ApprovalID
		h.cmd(bad)
		code := CodeBadValue
		if id == "no-decision" {
			code = CodeMissingField
		}
		if e := h.waitError(code, id); !strings.Contains(e.Message, "decision") && !strings.Contains(e.Message, "still pending") {
			t.Errorf("%s: %q", id, e.Message)
		}
	}

	h.cmd(Command{Action: ActionApprove, RequestID: "yes", RunID: "a1", ApprovalID: req1.ApprovalID, Decision: "allow"})
	h.cmd(Command{Action: ActionApprove, RequestID: "no", ApprovalID: req2.ApprovalID, Decision: "deny", Reason: "not today"})
	if d := h.waitEvent(EventRunCompleted, "a1"); d.Result.Stdout != "allowed" {
		t.Errorf("allowed run: %+v", d.Result)
	}
	if d := h.waitEvent(EventRunCompleted, "a2"); d.Result.Stdout != "denied: not today" {
		t.Errorf("denied run: %+v", d.Result)
	}
	// Answered approvals are gone.
	h.cmd(Command{Action: ActionApprove, RequestID: "again", ApprovalID: req1.ApprovalID, Decision: "allow"})
	h.waitError(CodeUnknownApprove, "again")
	if n := h.count(func(ev Event) bool { return ev.Event == EventError && (ev.RequestID == "yes" || ev.RequestID == "no") }); n != 0 {
		t.Errorf("%d errors for valid answers", n)
	}
}

func TestCancelWhileApprovalPending(t *testing.T) {
	h := newHarness(t, nil)
	h.prompt("c", "approve Bash", PromptOptions{RunOptions: executor.RunOptions{Approvals: true}})
	req := h.waitEvent(EventApprovalRequested, "c")
	h.cmd(Command{Action: ActionCancel, RequestID: "stop", RunID: "c"})
	gone := h.waitEvent(EventApprovalCancelled, "c")
	if gone.ApprovalID != req.ApprovalID || gone.Reason != "cancelled" {
		t.Errorf("approval_cancelled %+v", gone)
	}
	if ev := h.waitEvent(EventRunCancelled, "c"); ev.Result.ExitCode != 130 {
		t.Errorf("run_cancelled %+v", ev.Result)
	}
	// The backend learns what was asked and how it ended (CONTRACT §10).
	want := []string{"relay.run_started", "relay.approval_requested", "relay.approval_resolved", "relay.run_cancelled"}
	if got := h.fwd.types("sess-c"); !slices.Equal(got, want) {
		t.Errorf("forwarded %v", got)
	}
}

func TestCancelOneRunLeavesTheOther(t *testing.T) {
	h := newHarness(t, nil)
	h.prompt("one", "block", PromptOptions{})
	h.prompt("two", "block", PromptOptions{})
	h.waitEvent(EventStream, "one")
	h.waitEvent(EventStream, "two")
	h.cmd(Command{Action: ActionCancel, RequestID: "c1", RunID: "one"})
	h.waitEvent(EventRunCancelled, "one")
	st := h.status("s1")
	if len(st.Runs) != 1 || st.Runs[0].RunID != "two" || st.State != StateRunning {
		t.Fatalf("after cancelling one: %+v", st)
	}
	if h.count(isRun(EventRunCancelled, "two")) != 0 {
		t.Fatal("the other run was cancelled too")
	}
	if h.count(func(ev Event) bool { return ev.Event == EventState && ev.State == StateIdle }) != 0 {
		t.Error("state idle while a run is live")
	}
	// Cancel without run_id cancels every run.
	h.cmd(Command{Action: ActionCancel, RequestID: "all"})
	h.waitEvent(EventRunCancelled, "two")
	h.waitFor("idle", func(ev Event) bool { return ev.Event == EventState && ev.State == StateIdle })
	if st := h.status("s2"); len(st.Runs) != 0 || st.State != StateIdle {
		t.Errorf("after cancelling all: %+v", st)
	}
	// Nothing live: cancel without run_id is a no-op, not an error.
	h.cmd(Command{Action: ActionCancel, RequestID: "none"})
	h.status("s3")
	if n := h.count(func(ev Event) bool { return ev.Event == EventError }); n != 0 {
		t.Errorf("%d errors", n)
	}
}

func TestStatusListsRunsAndForwarder(t *testing.T) {
	h := newHarness(t, func(_ *setup, f *fakeForwarder) {
		f.stats = forwarder.Stats{Pending: 7, InFlight: 2, Delivered: 40, Retried: 3, DeadLettered: 1, SpoolBytes: 4096, LastError: "503 from backend"}
	})
	idle := h.status("idle")
	if idle.State != StateIdle || len(idle.Runs) != 0 {
		t.Errorf("idle status %+v", idle)
	}
	want := ForwarderInfo{Pending: 7, InFlight: 2, Delivered: 40, Retried: 3, DeadLettered: 1, SpoolBytes: 4096, LastError: "503 from backend"}
	if idle.Forwarder == nil || *idle.Forwarder != want {
		t.Errorf("forwarder %+v, want %+v", idle.Forwarder, want)
	}
	before := time.Now()
	h.prompt("x", "block", PromptOptions{})
	h.cmd(Command{Action: ActionPrompt, RunID: "y", SessionID: "sy", InteractionID: "iy", Prompt: new("block")})
	h.waitEvent(EventStream, "x")
	h.waitEvent(EventStream, "y")
	st := h.status("busy")
	slices.SortFunc(st.Runs, func(a, b RunInfo) int { return strings.Compare(a.RunID, b.RunID) })
	if st.State != StateRunning || len(st.Runs) != 2 || st.Runs[0].SessionID != "sess-x" || st.Runs[1].SessionID != "sy" ||
		st.Runs[1].InteractionID != "iy" || st.Runs[0].StartedAt.Before(before.Add(-time.Second)) {
		t.Errorf("busy status %+v", st)
	}
	// A negative pending (an internal glitch) is never shown.
	h.fwd.mu.Lock()
	h.fwd.stats.Pending = -3
	h.fwd.mu.Unlock()
	if st := h.status("neg"); st.Forwarder.Pending != 0 {
		t.Errorf("pending %d", st.Forwarder.Pending)
	}
}

func TestDuplicateRunIDIsRefused(t *testing.T) {
	h := newHarness(t, nil)
	h.prompt("dup", "block", PromptOptions{})
	h.waitEvent(EventStream, "dup")
	p := "again"
	h.cmd(Command{Action: ActionPrompt, RequestID: "second", RunID: "dup", Prompt: &p})
	h.waitError(CodeRunConflict, "second")
	if n := len(h.exec.Requests()); n != 1 {
		t.Errorf("%d runs started", n)
	}
}

func TestExitOnCompleteShutsDown(t *testing.T) {
	h := newHarness(t, nil)
	h.prompt("only", "lines 2", PromptOptions{ExitOnComplete: true})
	if err := h.serveResult(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	sd := h.lastIsShutdown()
	if sd.Reason != "exit_on_complete" {
		t.Errorf("shutdown reason %q", sd.Reason)
	}
	var order []string
	for _, ev := range h.events() {
		order = append(order, ev.Event)
	}
	i := slices.Index(order, EventRunCompleted)
	if i < 0 || !slices.Equal(order[i:], []string{EventRunCompleted, EventState, EventAutoShutdown, EventShutdown}) {
		t.Errorf("events %v", order)
	}
	if auto := h.events()[len(order)-2]; auto.RunID != "only" || auto.Reason != "exit_on_complete" {
		t.Errorf("auto_shutdown %+v", auto)
	}
}

// TestExitOnCompleteWaitsForItsRun: another run finishing does not end the
// helper; the exit_on_complete run does, cancelling the rest.
func TestExitOnCompleteWaitsForItsRun(t *testing.T) {
	h := newHarness(t, nil)
	h.prompt("bg", "block", PromptOptions{})
	h.waitEvent(EventStream, "bg")
	h.prompt("quick", "x", PromptOptions{})
	h.waitEvent(EventRunCompleted, "quick")
	h.prompt("last", "approve Bash", PromptOptions{ExitOnComplete: true})
	req := h.waitEvent(EventApprovalRequested, "last")
	if h.count(func(ev Event) bool { return ev.Event == EventAutoShutdown }) != 0 {
		t.Fatal("auto_shutdown before its run completed")
	}
	h.cmd(Command{Action: ActionApprove, ApprovalID: req.ApprovalID, Decision: "allow"})
	if err := h.serveResult(); err != nil {
		t.Fatal(err)
	}
	h.lastIsShutdown()
	if h.count(isRun(EventRunCancelled, "bg")) != 1 {
		t.Errorf("the other run was not cancelled at shutdown:\n%s", h.dump())
	}
}

func TestShutdownCancelsRunsDrainsAndComesLast(t *testing.T) {
	h := newHarness(t, func(o *setup, f *fakeForwarder) {
		o.DrainTimeout = 3 * time.Second
		f.stopErr = fmt.Errorf("%w: 812 bytes in /spool", forwarder.ErrUndelivered)
		f.stats = forwarder.Stats{Pending: 4, SpoolBytes: 812}
	})
	h.prompt("a", "block", PromptOptions{})
	h.prompt("b", "approve Bash", PromptOptions{RunOptions: executor.RunOptions{Approvals: true}})
	h.waitEvent(EventStream, "a")
	h.waitEvent(EventApprovalRequested, "b")
	h.cmd(Command{Action: ActionShutdown, RequestID: "bye"})
	if err := h.serveResult(); err != nil {
		t.Fatalf("undelivered events are not a Serve error: %v", err)
	}
	sd := h.lastIsShutdown()
	if sd.Reason != "shutdown requested" || !strings.Contains(sd.Message, "left in the spool") || sd.Forwarder == nil || sd.Forwarder.Pending != 4 {
		t.Errorf("shutdown %+v", sd)
	}
	for _, id := range []string{"a", "b"} {
		if h.count(isRun(EventRunCancelled, id)) != 1 {
			t.Errorf("run %s not cancelled", id)
		}
	}
	if h.count(isRun(EventApprovalCancelled, "b")) != 1 {
		t.Error("no approval_cancelled")
	}
	// The relay's own end events were enqueued before the drain.
	for _, s := range []string{"sess-a", "sess-b"} {
		if got := h.fwd.types(s); got[len(got)-1] != "relay.run_cancelled" {
			t.Errorf("%s forwarded %v", s, got)
		}
	}
	h.fwd.mu.Lock()
	dl, ok := h.fwd.stopCtx.Deadline()
	h.fwd.mu.Unlock()
	if !ok || time.Until(dl) > 3*time.Second {
		t.Errorf("Stop got no drain deadline (%v %v)", dl, ok)
	}
}

func TestShutdownReportsAStopError(t *testing.T) {
	h := newHarness(t, func(_ *setup, f *fakeForwarder) { f.stopErr = errors.New("spool corrupt") })
	h.cmd(Command{Action: ActionShutdown})
	if err := h.serveResult(); err == nil || !strings.Contains(err.Error(), "spool corrupt") {
		t.Errorf("Serve: %v", err)
	}
	if sd := h.lastIsShutdown(); sd.Message != "spool corrupt" {
		t.Errorf("shutdown %+v", sd)
	}
}

func TestNoNewRunsWhileShuttingDown(t *testing.T) {
	hold := make(chan struct{})
	h := newHarness(t, func(_ *setup, f *fakeForwarder) { f.holdOff = hold })
	h.prompt("a", "block", PromptOptions{})
	h.waitEvent(EventStream, "a")
	h.cmd(Command{Action: ActionShutdown})
	h.waitEvent(EventRunCancelled, "a")
	// The forwarder is draining: the helper still reads, but starts nothing.
	h.prompt("late", "x", PromptOptions{})
	h.waitError(CodeShuttingDown, "req-late")
	h.status("during")
	close(hold)
	if err := h.serveResult(); err != nil {
		t.Fatal(err)
	}
	h.lastIsShutdown()
	if n := len(h.exec.Requests()); n != 1 {
		t.Errorf("%d runs started", n)
	}
}

// TestNothingAfterShutdown: commands that arrive after the shutdown event
// was written must not produce more lines; shutdown is the last line.
func TestNothingAfterShutdown(t *testing.T) {
	h := newHarness(t, nil)
	h.cmd(Command{Action: ActionShutdown})
	if err := h.serveResult(); err != nil {
		t.Fatal(err)
	}
	h.send(`{"action":"status","request_id":"late"}`)
	h.send(`{"action":"nope","request_id":"late2"}`)
	// The barrier: the reader handles a line before it reads the next, and
	// the pipe's Write returns only once its bytes were read, so when this
	// blank line is taken both commands above were handled: anything they
	// would write is written.
	h.send("")
	h.lastIsShutdown()
}

func TestSignalCancelsRunsAndShutsDown(t *testing.T) {
	h := newHarness(t, nil)
	h.prompt("s", "block", PromptOptions{})
	h.waitEvent(EventStream, "s")
	h.sig <- syscall.SIGTERM
	if err := h.serveResult(); err != nil {
		t.Fatal(err)
	}
	sig := h.waitFor("signal", func(ev Event) bool { return ev.Event == EventSignal })
	if sig.Signal != syscall.SIGTERM.String() {
		t.Errorf("signal %+v", sig)
	}
	h.waitEvent(EventRunCancelled, "s")
	if sd := h.lastIsShutdown(); !strings.Contains(sd.Reason, "signal") {
		t.Errorf("shutdown reason %q", sd.Reason)
	}
}

func TestSecondSignalForcesExit(t *testing.T) {
	hold := make(chan struct{})
	h := newHarness(t, func(_ *setup, f *fakeForwarder) { f.holdOff = hold })
	h.waitFor("ready", func(ev Event) bool { return ev.Event == EventReady })
	h.sig <- os.Interrupt
	h.waitFor("signal", func(ev Event) bool { return ev.Event == EventSignal })
	h.sig <- os.Interrupt
	if err := h.serveResult(); !errors.Is(err, ErrForced) {
		t.Fatalf("Serve after two signals: %v", err)
	}
	if n := h.count(func(ev Event) bool { return ev.Event == EventSignal }); n != 2 {
		t.Errorf("%d signal events", n)
	}
	close(hold)
	// The background stop still ends with its shutdown line.
	h.waitFor("shutdown", func(ev Event) bool { return ev.Event == EventShutdown })
}

func TestTerminalCommand(t *testing.T) {
	var got []Command
	var mu sync.Mutex
	h := newHarness(t, func(o *setup, _ *fakeForwarder) {
		o.Terminal = func(c Command) ([]string, string, map[string]string, error) {
			mu.Lock()
			got = append(got, c)
			mu.Unlock()
			if c.Options.Model == "bad" {
				return nil, "", nil, errors.New("model bad is not allowed here")
			}
			return []string{"claude-relay", "terminal", "--session=" + c.SessionID}, c.Options.Cwd, map[string]string{"CLAUDE_RELAY_X": "1"}, nil
		}
	})
	p := "fix it"
	h.cmd(Command{Action: ActionTerminal, RequestID: "t1", SessionID: "s1", InteractionID: "i2", Prompt: &p, Options: PromptOptions{RunOptions: executor.RunOptions{Resume: "conv-1"}}})
	ev := h.waitFor("terminal_command", func(ev Event) bool { return ev.Event == EventTerminalCommand && ev.RequestID == "t1" })
	if !slices.Equal(ev.Argv, []string{"claude-relay", "terminal", "--session=s1"}) || ev.Cwd != "/" || ev.Env["CLAUDE_RELAY_X"] != "1" ||
		ev.SessionID != "s1" || ev.InteractionID != "i2" {
		t.Errorf("terminal_command %+v", ev)
	}
	mu.Lock()
	if len(got) != 1 || *got[0].Prompt != "fix it" || got[0].Options.Resume != "conv-1" {
		t.Errorf("Terminal got %+v", got)
	}
	mu.Unlock()
	h.cmd(Command{Action: ActionTerminal, RequestID: "t2", Prompt: &p, Options: PromptOptions{RunOptions: executor.RunOptions{Model: "bad"}}})
	if e := h.waitError(CodeBadValue, "t2"); !strings.Contains(e.Message, "model bad") {
		t.Errorf("error %+v", e)
	}
	h.cmd(Command{Action: ActionTerminal, RequestID: "t3"})
	h.waitError(CodeMissingField, "t3")
	if n := len(h.exec.Requests()); n != 0 {
		t.Errorf("a terminal started %d background runs", n)
	}
}

func TestResumeLastSession(t *testing.T) {
	dir := t.TempDir()
	cwd := t.TempDir()
	h := newHarness(t, func(o *setup, _ *fakeForwarder) { o.Core.State = relay.NewState(dir) })
	h.prompt("first", "hello", PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd}})
	h.waitEvent(EventRunCompleted, "first")
	h.prompt("second", "again", PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd + "/"}, ResumeLastSession: true})
	h.waitEvent(EventRunCompleted, "second")
	h.prompt("explicit", "again", PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd, Resume: "chosen"}, ResumeLastSession: true})
	h.waitEvent(EventRunCompleted, "explicit")
	h.prompt("other", "again", PromptOptions{RunOptions: executor.RunOptions{Cwd: t.TempDir()}, ResumeLastSession: true})
	h.waitEvent(EventRunCompleted, "other")
	reqs := h.exec.Requests()
	if reqs[1].Resume != "conv-first" || reqs[2].Resume != "chosen" || reqs[3].Resume != "" {
		t.Errorf("resumes %q %q %q", reqs[1].Resume, reqs[2].Resume, reqs[3].Resume)
	}
	if _, err := os.Stat(filepath.Join(dir, "last_conversations.json")); err != nil {
		t.Error(err)
	}
}

func TestForwarderErrorsBecomeErrorEvents(t *testing.T) {
	h := newHarness(t, nil)
	h.waitFor("ready", func(ev Event) bool { return ev.Event == EventReady })
	for code, want := range map[forwarder.ErrorCode]string{forwarder.CodeAuth: CodeAuth, forwarder.CodeDeadLetter: CodeDeadLetter,
		forwarder.CodeCorruptSpool: CodeSpool, forwarder.CodeDelivery: CodeSpool, "something_new": CodeSpool} {
		name := string(code)
		h.srv.ReportForwarderError(forwarder.Error{Code: code, SessionID: "s-" + name, Message: "problem " + name})
		ev := h.waitFor(name, func(ev Event) bool { return ev.Event == EventError && ev.SessionID == "s-"+name })
		if ev.Code != want || ev.Message != "problem "+name {
			t.Errorf("%s became %+v", name, ev)
		}
	}
}

// TestConcurrentRunsNeverInterleave runs several chatty runs at once, with
// status requests in between; every line stays whole and each run's lines
// stay in order.
func TestConcurrentRunsNeverInterleave(t *testing.T) {
	const runs, lines = 8, 400
	h := newHarness(t, nil)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() { h.prompt(fmt.Sprintf("c%d", i), fmt.Sprintf("lines %d", lines), PromptOptions{}) })
		wg.Go(func() { h.cmd(Command{Action: ActionStatus, RequestID: fmt.Sprintf("st%d", i)}) })
	}
	wg.Wait()
	for i := range runs {
		h.waitEvent(EventRunCompleted, fmt.Sprintf("c%d", i))
	}
	h.in.Close()
	if err := h.serveResult(); err != nil {
		t.Fatal(err)
	}
	h.lastIsShutdown()
	next := map[string]int{}
	for _, ev := range h.events() {
		if ev.Event != EventStream {
			continue
		}
		var p struct {
			Run string
			N   int
		}
		if err := json.Unmarshal(ev.Payload, &p); err != nil || p.Run != ev.RunID {
			t.Fatalf("payload %s of run %s", ev.Payload, ev.RunID)
		}
		if p.N != next[p.Run] {
			t.Fatalf("run %s: line %d after %d", p.Run, p.N, next[p.Run]-1)
		}
		next[p.Run]++
	}
	for i := range runs {
		if n := next[fmt.Sprintf("c%d", i)]; n != lines {
			t.Errorf("run c%d: %d stream events", i, n)
		}
	}
	if n := h.count(func(ev Event) bool { return ev.Event == EventStatus }); n != runs {
		t.Errorf("%d status answers", n)
	}
	if n := len(h.out.Lines()); n < runs*(lines+2) {
		t.Errorf("only %d lines", n)
	}
}

func TestRequestIDOf(t *testing.T) {
	tests := []struct{ line, want string }{
		{`{"action":"prompt","request_id":"r9",`, "r9"},
		{`{"request_id" : "spaced", "x":`, "spaced"},
		{`{"action":5,"request_id":"typed"}`, "typed"},
		{`{"request_id":5}`, ""},
		{`{"request_id":"unterminated`, ""},
		{`{"request_id":"` + strings.Repeat("x", 300) + `"`, ""},
		{`garbage`, ""},
		{``, ""},
	}
	for _, tt := range tests {
		if got := requestIDOf([]byte(tt.line)); got != tt.want {
			t.Errorf("requestIDOf(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
}

func TestStateFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested")
	s := relay.NewState(dir)
	if got := s.Last("/w"); got != "" {
		t.Errorf("empty state: %q", got)
	}
	if err := s.Set("/w/", "c1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("/v", "c2"); err != nil {
		t.Fatal(err)
	}
	if got := relay.NewState(dir).Last("/w"); got != "c1" {
		t.Errorf("Last(/w) = %q", got)
	}
	fi, err := os.Stat(filepath.Join(dir, "last_conversations.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("state file %v %v", fi, err)
	}
	// A damaged file loses only resume_last_session.
	os.WriteFile(filepath.Join(dir, "last_conversations.json"), []byte("{broken"), 0o600) //nolint:errcheck
	if got := s.Last("/w"); got != "" {
		t.Errorf("damaged state: %q", got)
	}
	if err := s.Set("/w", "c3"); err != nil || s.Last("/w") != "c3" {
		t.Errorf("after damage: %v %q", err, s.Last("/w"))
	}
}

// serveOnce runs a fresh Server with fakes on input until EOF and returns
// its output.
func serveOnce(t testing.TB, input []byte, maxLine int) ([]byte, error) {
	exec := &fakeExecutor{}
	fwd := newFakeForwarder()
	s := setup{Options: Options{Version: "fuzz", MaxLine: maxLine},
		hostOptions: host.Options{Forwarder: fwd, Core: relay.Options{Executor: exec}, DrainTimeout: time.Second}}
	srv := s.server()
	var out lockedBuffer
	done := make(chan error, 1)
	go func() { done <- srv.Serve(strings.NewReader(string(input)), &out, nil) }()
	select {
	case err := <-done:
		return out.Bytes(), err
	case <-time.After(20 * time.Second):
		t.Fatalf("Serve did not end on EOF; input %q", clip(input))
		return nil, nil
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]byte(nil), l.b...)
}

// checkOutput checks a whole stdout: NDJSON, schema-valid, ready first,
// shutdown last and once.
func checkOutput(schema *schemaDoc, out []byte) error {
	if len(out) == 0 || out[len(out)-1] != '\n' {
		return fmt.Errorf("output does not end with a newline: %q", clip(out))
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	var names []string
	for i, l := range lines {
		if probs := checkEventLine(schema, []byte(l)); len(probs) > 0 {
			return fmt.Errorf("line %d %s: %v", i+1, clip([]byte(l)), probs)
		}
		var ev Event
		json.Unmarshal([]byte(l), &ev) //nolint:errcheck // checked above
		names = append(names, ev.Event)
	}
	if names[0] != EventReady || names[len(names)-1] != EventShutdown || slices.Index(names, EventShutdown) != len(names)-1 {
		return fmt.Errorf("events %v: want ready first and one shutdown last", names)
	}
	return nil
}

func FuzzCommandLine(f *testing.F) {
	for _, s := range []string{
		`{"action":"prompt","request_id":"r1","prompt":"hello"}`,
		`{"action":"prompt","request_id":"r9",`,
		`{"action":"prompt","run_id":"x","session_id":"s","prompt":"lines 3","options":{"exit_on_complete":true}}`,
		`{"action":"prompt","prompt":"block","options":{"permission_mode":"plan","env":{"A":"b"},"additional_args":["-x"]}}`,
		`{"action":"prompt","prompt":"approve Bash","options":{"approvals":true}}`,
		`{"action":"prompt","prompt":"fail"}` + "\n" + `{"action":"prompt","prompt":"limit"}`,
		`{"action":"prompt","prompt":"malformed"}`,
		`{"action":"cancel"}`,
		`{"action":"cancel","run_id":"r"}`,
		`{"action":"approve","approval_id":"a","decision":"deny","reason":"no"}`,
		`{"action":"status","request_id":"s"}`,
		`{"action":"terminal","prompt":"p"}`,
		`{"action":"shutdown"}` + "\n" + `{"action":"status"}`,
		`{"action":"prompt","prompt":"` + "\u2028<b>&\xff" + `"}`,
		`{"action":null,"request_id":{"a":1}}`,
		`[]`, `null`, `""`, `{}`, "\x00\x01", strings.Repeat("{", 200),
	} {
		f.Add([]byte(s))
	}
	schema := loadSchema(f)
	f.Fuzz(func(t *testing.T, line []byte) {
		out, err := serveOnce(t, append(line, '\n'), 4096)
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
		if err := checkOutput(schema, out); err != nil {
			t.Fatalf("input %q: %v", clip(line), err)
		}
	})
}

// TestRandomLines replays 1,000 random lines (random bytes, truncated JSON,
// random actions and fields) into one server: it never crashes and answers
// each invalid line with an error.
func TestRandomLines(t *testing.T) {
	rng := newRand(t)
	actions := []string{"prompt", "cancel", "approve", "status", "terminal", "", "dance", "PROMPT"}
	var lines []string
	wantErrors := 0
	for i := range 1000 {
		id := fmt.Sprintf("L%d", i)
		var line string
		var invalid bool
		switch rng.IntN(4) {
		case 0: // random bytes, no newline
			b := make([]byte, 1+rng.IntN(80))
			for j := range b {
				b[j] = byte(rng.IntN(256))
				if b[j] == '\n' {
					b[j] = ' '
				}
			}
			line = string(b)
			invalid = strings.TrimSpace(line) != "" // a blank line is skipped
		case 1: // a command cut short
			full, _ := json.Marshal(randomCommand(rng, actions, id))
			line = string(full[:1+rng.IntN(len(full)-1)])
			invalid = true
		default: // a whole random command
			c := randomCommand(rng, actions, id)
			b, _ := json.Marshal(c)
			line = string(b)
			invalid = !validRandomCommand(c)
		}
		if invalid {
			wantErrors++
		}
		lines = append(lines, line)
	}
	h := newHarness(t, func(o *setup, _ *fakeForwarder) { o.MaxLine = 1 << 16 })
	for _, l := range lines {
		h.send(l)
	}
	h.status("END")
	waitQuiet(h, func(ev Event) bool { return ev.Event == EventRunCompleted || ev.Event == EventRunFailed })
	errorsSeen := h.count(func(ev Event) bool { return ev.Event == EventError })
	if errorsSeen != wantErrors {
		t.Errorf("%d error events for %d invalid lines", errorsSeen, wantErrors)
	}
	// Every readable request_id of an invalid whole command got its error.
	for i, l := range lines {
		var c Command
		if json.Unmarshal([]byte(l), &c) != nil || validRandomCommand(c) {
			continue
		}
		id := fmt.Sprintf("L%d", i)
		if h.count(func(ev Event) bool { return ev.Event == EventError && ev.RequestID == id }) != 1 {
			t.Errorf("line %d %s: no error with its request_id", i, clip([]byte(l)))
		}
	}
	h.in.Close()
	if err := h.serveResult(); err != nil {
		t.Fatal(err)
	}
	h.lastIsShutdown()
	t.Logf("%d lines, %d invalid, %d runs", len(lines), wantErrors, len(h.exec.Requests()))
}

// waitQuiet waits until every started run has ended.
func waitQuiet(h *harness, ended func(Event) bool) {
	h.t.Helper()
	if !poll.Within(waitTimeout, func() bool {
		return h.count(func(ev Event) bool { return ev.Event == EventRunStarted }) == h.count(ended)
	}) {
		h.t.Fatalf("runs did not end:\n%s", h.dump())
	}
}

func randomCommand(rng randSource, actions []string, id string) Command {
	c := Command{Action: actions[rng.IntN(len(actions))], RequestID: id}
	if rng.IntN(2) == 0 {
		p := []string{"", "  ", "hello", "lines 2", "fail", "limit"}[rng.IntN(6)]
		c.Prompt = &p
	}
	if rng.IntN(3) == 0 {
		c.RunID = fmt.Sprintf("run-%s", id) // unique: never a live run
	}
	if rng.IntN(3) == 0 {
		c.ApprovalID = "ap-" + id
	}
	c.Decision = []wire.Decision{"", wire.DecisionAllow, wire.DecisionDeny, "maybe"}[rng.IntN(4)]
	c.Options.PermissionMode = []streamjson.PermissionMode{"", "", "plan", "yolo"}[rng.IntN(4)]
	return c
}

// validRandomCommand says whether the server accepts c without an error
// event (with the fakes, which never fail a spool).
func validRandomCommand(c Command) bool {
	switch c.Action {
	case ActionPrompt:
		return c.Prompt != nil && (c.Options.PermissionMode == "" || streamjson.PermissionMode(c.Options.PermissionMode).Known())
	case ActionCancel:
		return c.RunID == "" // a named run is never live here
	case ActionStatus:
		return true
	}
	return false // approve finds no approval; terminal is unsupported; others are unknown
}

func TestFuzzSeedsDirectly(t *testing.T) {
	// The fuzz target's properties for a few hand-picked inputs, so plain
	// `go test` exercises them (with -race) beyond the seed corpus.
	schema := loadSchema(t)
	for _, in := range []string{
		`{"action":"prompt","prompt":"block"}` + "\n" + `{"action":"prompt","prompt":"approve Bash","options":{"approvals":true}}`,
		`{"action":"shutdown"}` + "\n" + `{"action":"prompt","prompt":"x"}` + "\n" + `{"action":"status"}`,
		strings.Repeat(`{"action":"prompt","prompt":"lines 5"}`+"\n", 20),
		strings.Repeat("x", 5000),
	} {
		out, err := serveOnce(t, []byte(in+"\n"), 4096)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkOutput(schema, out); err != nil {
			t.Errorf("input %q: %v", clip([]byte(in)), err)
		}
	}
}

type randSource interface{ IntN(int) int }

// newRand returns a seeded generator and logs the seed, so a failure can be
// replayed with CLAUDE_RELAY_TEST_SEED.
func newRand(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("CLAUDE_RELAY_TEST_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (CLAUDE_RELAY_TEST_SEED)", seed)
	return rand.New(rand.NewPCG(seed, seed>>1))
}
