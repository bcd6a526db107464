package relay

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// fakeExec plays a run by its prompt: "lines N", "approve", "block".
type fakeExec struct{}

func (fakeExec) Run(ctx context.Context, req executor.Request, obs executor.Observer, ap executor.Approver) (*executor.Result, error) {
	line := func(i int) {
		b := []byte(`{"type":"assistant","session_id":"conv-1","n":` + string(rune('0'+i)) + `}`)
		m, _ := streamjson.Decode(b)
		obs.Event(executor.Event{Kind: executor.EventLine, RunID: req.RunID, Line: b, Message: m})
	}
	switch req.Prompt {
	case "block":
		line(0)
		<-ctx.Done()
		return &executor.Result{Status: executor.StatusCancelled, CommandResult: executor.CommandResult{ExitCode: 130}}, nil
	case "approve":
		d, err := ap.Approve(ctx, executor.ApprovalRequest{RunID: req.RunID, ApprovalID: "a1", ToolName: "Bash",
			Input: json.RawMessage(`{"command":"rm -rf x","description":"tidy"}`)})
		if err != nil || !d.Allow {
			return &executor.Result{Status: executor.StatusCompleted, CommandResult: executor.CommandResult{Stdout: "denied"}}, nil
		}
	}
	for i := range 3 {
		line(i)
	}
	return &executor.Result{Status: executor.StatusCompleted, ConversationID: "conv-1", HasUsage: true,
		Usage: streamjson.Usage{InputTokens: 2, OutputTokens: 3}, TotalCostUSD: 0.5,
		CommandResult: executor.CommandResult{Stdout: "done"}}, nil
}

// fakeSpool records what it took; fail makes it refuse.
type fakeSpool struct {
	mu   sync.Mutex
	evs  []forwarder.Event
	fail error
}

func (s *fakeSpool) Enqueue(ev forwarder.Event) (forwarder.Accepted, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return forwarder.Accepted{}, s.fail
	}
	s.evs = append(s.evs, ev)
	return forwarder.Accepted{}, nil
}

func (s *fakeSpool) has(line []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.evs {
		if string(e.Data) == string(line) {
			return true
		}
	}
	return false
}

func (s *fakeSpool) types() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var t []string
	for _, e := range s.evs {
		t = append(t, e.Type)
	}
	return t
}

// recorder is a sink that checks the spool-first rule as events arrive.
type recorder struct {
	t     *testing.T
	spool *fakeSpool
	mu    sync.Mutex
	evs   []Event
	ended chan Event
	onApp func(Event)
}

func newRecorder(t *testing.T, s *fakeSpool) *recorder {
	return &recorder{t: t, spool: s, ended: make(chan Event, 8)}
}

func (r *recorder) Event(e Event) {
	if e.Kind == KindStream && !r.spool.has(e.Line) {
		r.t.Errorf("a line reached the front end before the spool: %s", e.Line)
	}
	r.mu.Lock()
	r.evs = append(r.evs, e)
	r.mu.Unlock()
	if e.Kind == KindApprovalRequested && r.onApp != nil {
		go r.onApp(e)
	}
	if e.Kind == KindEnded {
		r.ended <- e
	}
}

func (r *recorder) wait(t *testing.T) Event {
	t.Helper()
	return await(t, r.ended, "the run to end")
}

// await receives from ch, failing t when nothing comes within 10 seconds:
// a safety net against a hang, not a timing assertion.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("waited 10s for %s", what)
		var zero T
		return zero
	}
}

// newFakeCore is a Core running fakeExec into a fakeSpool, closed when t
// ends, and a recorder of that spool to start runs with.
func newFakeCore(t *testing.T) (*Core, *fakeSpool, *recorder) {
	t.Helper()
	spool := &fakeSpool{}
	c := New(Options{Executor: fakeExec{}, Spool: spool})
	t.Cleanup(c.Close)
	return c, spool, newRecorder(t, spool)
}

func (r *recorder) kinds() []Kind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var k []Kind
	for _, e := range r.evs {
		k = append(k, e.Kind)
	}
	return k
}

func TestRunSpoolsBeforeShowing(t *testing.T) {
	spool := &fakeSpool{}
	c := New(Options{Executor: fakeExec{}, Spool: spool, State: NewState(t.TempDir()), DefaultCwd: t.TempDir()})
	defer c.Close()
	rec := newRecorder(t, spool)
	if _, err := c.Start(Request{RunID: "r", SessionID: "s", Prompt: "lines"}, rec); err != nil {
		t.Fatal(err)
	}
	end := rec.wait(t)
	if end.End.Status != executor.StatusCompleted || end.End.ConversationID != "conv-1" || *end.End.TotalCostUSD != 0.5 ||
		end.End.Usage.OutputTokens != 3 || end.Live != 0 {
		t.Errorf("end %+v", end.End)
	}
	want := []Kind{KindStarted, KindStream, KindStream, KindStream, KindEnded}
	if got := rec.kinds(); !slices.Equal(got, want) {
		t.Errorf("kinds %v, want %v", got, want)
	}
	types := spool.types()
	if types[0] != wire.TypeRunStarted || types[len(types)-1] != wire.TypeRunCompleted {
		t.Errorf("spooled %v", types)
	}
	var ended wire.RunEnded
	spool.mu.Lock()
	json.Unmarshal(spool.evs[len(spool.evs)-1].Data, &ended) //nolint:errcheck
	spool.mu.Unlock()
	if ended.Status != "completed" || ended.ConversationID != "conv-1" || ended.Result.Stdout != "done" {
		t.Errorf("relay.run_completed %+v", ended)
	}
	if got := c.opts.State.Last(c.opts.DefaultCwd); got != "conv-1" {
		t.Errorf("last conversation %q", got)
	}
}

func TestSpoolFailureHidesTheLine(t *testing.T) {
	spool := &fakeSpool{fail: forwarder.ErrSpoolFull}
	c := New(Options{Executor: fakeExec{}, Spool: spool})
	defer c.Close()
	rec := newRecorder(t, spool)
	if _, err := c.Start(Request{Prompt: "lines"}, rec); err != nil {
		t.Fatal(err)
	}
	rec.wait(t)
	for _, e := range rec.evs {
		if e.Kind == KindStream {
			t.Errorf("a line not in the spool was shown: %s", e.Line)
		}
	}
	if k := rec.kinds(); !slices.Contains(k, KindSpoolError) {
		t.Errorf("no spool error in %v", k)
	}
}

func TestApprovalsThroughTheCore(t *testing.T) {
	c, _, rec := newFakeCore(t)
	rec.onApp = func(e Event) {
		if e.Approval.Title != "$ rm -rf x — tidy" {
			t.Errorf("title %q", e.Approval.Title)
		}
		if err := c.Answer("other-run", e.Approval.ID, Reply{Decision: wire.DecisionAllow, By: "test"}); !errors.Is(err, ErrUnknownApproval) {
			t.Errorf("answer on another run: %v", err)
		}
		// Replies that do not fit are refused, and the approval stays
		// pending for the one that does.
		for _, bad := range []Reply{
			{Decision: wire.DecisionAcceptEdits},
			{Decision: "yes"},
			{Decision: wire.DecisionAllow, UpdatedInput: json.RawMessage(`"rm -rf /"`)},
			{Decision: wire.DecisionDeny, UpdatedInput: json.RawMessage(`{"command":"ls"}`)},
			{Decision: wire.DecisionAllow, Answers: json.RawMessage(`{"Which?":"A"}`)},
			{Decision: wire.DecisionAllow, Interrupt: true},
		} {
			if err := c.Answer(e.RunID, e.Approval.ID, bad); !errors.Is(err, ErrBadReply) || !strings.Contains(err.Error(), "still pending") {
				t.Errorf("%+v: %v", bad, err)
			}
		}
		if err := c.Answer(e.RunID, e.Approval.ID, Reply{Decision: wire.DecisionAllow, By: "test"}); err != nil {
			t.Error(err)
		}
		if err := c.Answer(e.RunID, e.Approval.ID, Reply{Decision: wire.DecisionAllow, By: "test"}); !errors.Is(err, ErrUnknownApproval) {
			t.Errorf("second answer: %v", err)
		}
	}
	if _, err := c.Start(Request{RunID: "ap", Prompt: "approve"}, rec); err != nil {
		t.Fatal(err)
	}
	if end := rec.wait(t); end.End.Result.Stdout != "done" {
		t.Errorf("allowed run ended with %+v", end.End.Result)
	}
}

func TestRefusedBeforeAnything(t *testing.T) {
	spool := &fakeSpool{}
	tests := []struct {
		req  Request
		opts Options
		code RefuseCode
		msg  string
	}{
		{Request{RunOptions: executor.RunOptions{Cwd: "/nonexistent"}, Prompt: "x"}, Options{}, RefuseBadValue, `cwd "/nonexistent": no such file or directory`},
		{Request{RunOptions: executor.RunOptions{Fork: true}, Prompt: "x"}, Options{}, RefuseBadValue, "fork needs resume"},
		{Request{RunOptions: executor.RunOptions{PermissionMode: "yolo"}, Prompt: "x"}, Options{}, RefuseBadValue, `permission_mode "yolo"`},
		{Request{Prompt: "x"}, Options{CLIError: "none found"}, RefuseNoCLI, "cannot run the Claude CLI: none found"},
	}
	for _, tt := range tests {
		tt.opts.Executor, tt.opts.Spool = fakeExec{}, spool
		c := New(tt.opts)
		rec := newRecorder(t, spool)
		_, err := c.Start(tt.req, rec)
		var re *RefusedError
		if !errors.As(err, &re) || re.Code != tt.code || !strings.Contains(re.Message, tt.msg) {
			t.Errorf("%+v: %v", tt.req, err)
		}
		c.Close()
		if len(rec.evs) != 0 || len(spool.types()) != 0 {
			t.Errorf("%+v: events %v, spooled %v", tt.req, rec.kinds(), spool.types())
		}
	}
}

func TestCloseCancelsAndRefuses(t *testing.T) {
	c, _, rec := newFakeCore(t)
	if _, err := c.Start(Request{RunID: "b", Prompt: "block"}, rec); err != nil {
		t.Fatal(err)
	}
	if err := c.Cancel("nope", StopClosed); !errors.Is(err, ErrUnknownRun) {
		t.Errorf("cancel of an unknown run: %v", err)
	}
	if n := len(c.Runs()); n != 1 {
		t.Errorf("%d live runs", n)
	}
	c.Close()
	if end := rec.wait(t); end.End.Status != executor.StatusCancelled {
		t.Errorf("end %+v", end.End)
	}
	var re *RefusedError
	if _, err := c.Start(Request{Prompt: "x"}, rec); !errors.As(err, &re) || re.Code != RefuseShuttingDown {
		t.Errorf("start after close: %v", err)
	}
	c.Close() // idempotent
}

// The backend learns what was asked and who decided what (CONTRACT §10).
func TestApprovalEventsAreSpooled(t *testing.T) {
	c, spool, rec := newFakeCore(t)
	rec.onApp = func(e Event) {
		if e.Approval.Kind != wire.ApprovalTool || !slices.Equal(e.Approval.Options, wire.OptionsFor(wire.ApprovalTool)) {
			t.Errorf("approval %+v", e.Approval)
		}
		c.Answer(e.RunID, e.Approval.ID, Reply{Decision: wire.DecisionAllow, By: "tty"}) //nolint:errcheck
	}
	if _, err := c.Start(Request{RunID: "ap", SessionID: "s", Prompt: "approve"}, rec); err != nil {
		t.Fatal(err)
	}
	rec.wait(t)
	spool.mu.Lock()
	defer spool.mu.Unlock()
	var req wire.ApprovalRequested
	var res wire.ApprovalResolved
	for _, e := range spool.evs {
		switch e.Type {
		case wire.TypeApprovalRequested:
			json.Unmarshal(e.Data, &req) //nolint:errcheck
		case wire.TypeApprovalResolved:
			json.Unmarshal(e.Data, &res) //nolint:errcheck
		}
	}
	if req.ApprovalID != "a1" || req.Title != "$ rm -rf x — tidy" || req.Kind != "tool" {
		t.Errorf("relay.approval_requested %+v", req)
	}
	if res.ApprovalID != "a1" || res.Decision != "allow" || res.By != "tty" {
		t.Errorf("relay.approval_resolved %+v", res)
	}
}

func TestApprovalKinds(t *testing.T) {
	for _, tt := range []struct {
		tool, input string
		kind        wire.Kind
		questions   bool
	}{
		{"Bash", `{"command":"ls"}`, wire.ApprovalTool, false},
		{"ExitPlanMode", `{"plan":"1. read\n2. fix"}`, wire.ApprovalPlan, false},
		{"AskUserQuestion", `{"questions":[{"question":"Which?","options":[{"label":"A"}]}]}`, wire.ApprovalQuestion, true},
	} {
		a := approvalOf(executor.ApprovalRequest{ApprovalID: "x", ToolName: tt.tool, Input: json.RawMessage(tt.input)})
		if a.Kind != tt.kind || (len(a.Questions) > 0) != tt.questions {
			t.Errorf("%s: kind %q questions %s", tt.tool, a.Kind, a.Questions)
		}
	}
}
