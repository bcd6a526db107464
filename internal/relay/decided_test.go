package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// funcExec runs a run with a function of the test's.
type funcExec func(ctx context.Context, req executor.Request, obs executor.Observer, ap executor.Approver) (*executor.Result, error)

func (f funcExec) Run(ctx context.Context, req executor.Request, obs executor.Observer, ap executor.Approver) (*executor.Result, error) {
	return f(ctx, req, obs, ap)
}

func completed() *executor.Result { return &executor.Result{Status: executor.StatusCompleted} }

// spooled decodes the spooled events of type typ.
func spooled[T any](t *testing.T, s *fakeSpool, typ string) []T {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []T
	for _, e := range s.evs {
		if e.Type == typ {
			var v T
			if err := json.Unmarshal(e.Data, &v); err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
	}
	return out
}

// A decision from the dashboard wins like any answer; the backend's record
// says who decided there and which decision it was, the front end hears
// that its own question is moot, and its late answer is told who won.
func TestDashboardAnswer(t *testing.T) {
	c, spool, rec := newFakeCore(t)
	late := make(chan error, 1)
	rec.onApp = func(e Event) {
		if err := c.Answer("", e.Approval.ID, Reply{Decision: wire.DecisionAllow, By: wire.ByDashboard, ByDetail: "dashboard:phone", DecisionID: "d-1",
			InputSHA256: wire.InputDigest(e.Approval.Input)}); err != nil {
			t.Error(err)
		}
		late <- c.Answer(e.RunID, e.Approval.ID, Reply{Decision: wire.DecisionDeny, By: wire.ByExtension})
	}
	if _, err := c.Start(Request{RunID: "ap", SessionID: "s", Prompt: "approve"}, rec); err != nil {
		t.Fatal(err)
	}
	if end := rec.wait(t); end.End.Result.Stdout != "done" {
		t.Errorf("the dashboard's allow did not let the tool run: %+v", end.End.Result)
	}
	err := <-late
	var de *DecidedError
	if !errors.As(err, &de) || !errors.Is(err, ErrUnknownApproval) || de.By != wire.ByDashboard ||
		err.Error() != `approval "a1" already decided by dashboard (phone): allow` {
		t.Errorf("the extension's late answer: %v", err)
	}
	res := spooled[wire.ApprovalResolved](t, spool, wire.TypeApprovalResolved)
	if len(res) != 1 || res[0].By != "dashboard" || res[0].DecidedBy != "dashboard:phone" || res[0].DecisionID != "d-1" || res[0].Decision != "allow" {
		t.Errorf("relay.approval_resolved %+v, want one, by dashboard (phone), d-1, allow", res)
	}
	var cancelled []Event
	for _, e := range rec.evs {
		if e.Kind == KindApprovalCancelled {
			cancelled = append(cancelled, e)
		}
	}
	if len(cancelled) != 1 || cancelled[0].Reason != "already decided by dashboard (phone): allow" ||
		cancelled[0].Decided == nil || *cancelled[0].Decided != (Decided{By: "dashboard", ByDetail: "dashboard:phone", Decision: "allow"}) {
		t.Errorf("the front end was told %+v", cancelled)
	}
}

// A dashboard decision made on another input than the one the run asked
// about (the backend showed a forged or altered request) is refused and the
// approval stays pending; the editor's answer still decides it.
func TestDashboardAnswerOnAnotherInput(t *testing.T) {
	c, _, rec := newFakeCore(t)
	refused := make(chan []error, 1)
	rec.onApp = func(e Event) {
		var errs []error
		for _, digest := range []string{"", wire.InputDigest(json.RawMessage(`{"command":"ls -la"}`))} {
			errs = append(errs, c.Answer("", e.Approval.ID, Reply{Decision: wire.DecisionAllow, By: wire.ByDashboard,
				ByDetail: "dashboard:phone", DecisionID: "d-x", InputSHA256: digest}))
		}
		refused <- errs
		if err := c.Answer(e.RunID, e.Approval.ID, Reply{Decision: wire.DecisionDeny, By: wire.ByExtension}); err != nil {
			t.Error(err)
		}
	}
	if _, err := c.Start(Request{RunID: "ap", SessionID: "s", Prompt: "approve"}, rec); err != nil {
		t.Fatal(err)
	}
	end := rec.wait(t)
	for i, err := range <-refused {
		if !errors.Is(err, ErrBadReply) || !strings.Contains(err.Error(), "not the one this run asked about") {
			t.Errorf("dashboard decision %d on another input: %v, want ErrBadReply naming the input", i, err)
		}
	}
	if end.End.Result.Stdout == "done" {
		t.Errorf("the tool ran on a decision made on another input: %+v", end.End.Result)
	}
}

// The front end's own answer is no news to it: no approval_cancelled.
func TestOwnAnswerIsNotCancelled(t *testing.T) {
	c, _, rec := newFakeCore(t)
	rec.onApp = func(e Event) {
		c.Answer(e.RunID, e.Approval.ID, Reply{Decision: wire.DecisionAllow, By: wire.ByExtension}) //nolint:errcheck
	}
	if _, err := c.Start(Request{Prompt: "approve"}, rec); err != nil {
		t.Fatal(err)
	}
	rec.wait(t)
	if k := rec.kinds(); slices.Contains(k, KindApprovalCancelled) {
		t.Errorf("kinds %v: the extension was told of its own answer", k)
	}
}

// Pending lists what waits, and its channel closes at each change: a new
// approval, and its answer.
func TestPending(t *testing.T) {
	c, _, rec := newFakeCore(t)
	list, changed := c.Pending()
	if len(list) != 0 {
		t.Fatalf("pending before any run: %v", list)
	}
	if _, err := c.Start(Request{RunID: "ap", Prompt: "approve"}, rec); err != nil {
		t.Fatal(err)
	}
	await(t, changed, "a change when the approval was asked")
	list, changed = c.Pending()
	if !slices.Equal(list, []PendingApproval{{RunID: "ap", ApprovalID: "a1"}}) {
		t.Fatalf("pending %v", list)
	}
	select {
	case <-changed:
		t.Fatal("changed with nothing new")
	default:
	}
	if err := c.Answer("", "a1", Reply{Decision: wire.DecisionDeny, By: wire.ByTTY}); err != nil {
		t.Fatal(err)
	}
	<-changed // closed when it was taken, before Answer returned
	if list, _ := c.Pending(); len(list) != 0 {
		t.Errorf("pending after the answer: %v", list)
	}
	rec.wait(t)
}

// First answer wins when several sides answer at once: exactly one reply
// is taken, every other one hears which, and the backend gets one outcome.
func TestFirstAnswerWins(t *testing.T) {
	c, spool, rec := newFakeCore(t)
	sides := []Reply{
		{Decision: wire.DecisionAllow, By: wire.ByExtension},
		{Decision: wire.DecisionDeny, By: wire.ByDashboard, ByDetail: "phone", DecisionID: "d-9"},
		{Decision: wire.DecisionAllowAlways, By: wire.ByTTY},
	}
	errs := make([]error, len(sides))
	answered := make(chan struct{})
	rec.onApp = func(e Event) {
		defer close(answered)
		var wg sync.WaitGroup
		for i, rep := range sides {
			rep.InputSHA256 = wire.InputDigest(e.Approval.Input)
			wg.Go(func() { errs[i] = c.Answer(e.RunID, e.Approval.ID, rep) })
		}
		wg.Wait()
	}
	if _, err := c.Start(Request{Prompt: "approve"}, rec); err != nil {
		t.Fatal(err)
	}
	rec.wait(t)
	<-answered
	res := spooled[wire.ApprovalResolved](t, spool, wire.TypeApprovalResolved)
	if len(res) != 1 {
		t.Fatalf("relay.approval_resolved %+v, want exactly one", res)
	}
	winner := -1
	for i, err := range errs {
		var de *DecidedError
		switch {
		case err == nil && winner >= 0:
			t.Errorf("two answers taken: %+v and %+v", sides[winner], sides[i])
		case err == nil:
			winner = i
		case !errors.As(err, &de):
			t.Errorf("%s's answer: %v, want a DecidedError", sides[i].By, err)
		}
	}
	if winner < 0 {
		t.Fatal("no answer was taken")
	}
	w := sides[winner]
	if res[0].By != w.By || res[0].Decision != w.Decision {
		t.Errorf("the backend heard %s/%s, the winner was %s/%s", res[0].By, res[0].Decision, w.By, w.Decision)
	}
	for i, err := range errs {
		if i != winner && !strings.Contains(err.Error(), "already decided by "+string(w.By)) {
			t.Errorf("the loser %s was told %q, want who won (%s)", sides[i].By, err, w.By)
		}
	}
}

// An answer taken in the same instant as the approval's deadline wins:
// the side that answered was told yes, so the tool must get that answer,
// not the timeout's deny.
func TestAnswerTakenBeforeTimeoutWins(t *testing.T) {
	spool := &fakeSpool{}
	var c *Core
	var mu sync.Mutex
	cancels := map[string]context.CancelFunc{}
	var bad []string
	c = New(Options{Spool: spool, Executor: funcExec(func(ctx context.Context, req executor.Request, _ executor.Observer, ap executor.Approver) (*executor.Result, error) {
		for i := range 100 {
			id := fmt.Sprintf("race-%d", i)
			actx, cancel := context.WithCancel(ctx)
			mu.Lock()
			cancels[id] = cancel
			mu.Unlock()
			d, err := ap.Approve(actx, executor.ApprovalRequest{RunID: req.RunID, ApprovalID: id, ToolName: "Bash", Input: json.RawMessage(`{"command":"ls"}`)})
			cancel()
			if err != nil || !d.Allow {
				bad = append(bad, fmt.Sprintf("%s: %+v %v", id, d, err))
			}
		}
		return completed(), nil
	})})
	defer c.Close()
	rec := newRecorder(t, spool)
	// In the sink, so both the answer and the cancel are there before
	// Approve waits: it must not pick the cancel.
	rec.onApp = nil
	sink := SinkFunc(func(e Event) {
		rec.Event(e)
		if e.Kind != KindApprovalRequested {
			return
		}
		if err := c.Answer(e.RunID, e.Approval.ID, Reply{Decision: wire.DecisionAllow, By: wire.ByExtension}); err != nil {
			t.Errorf("answer: %v", err)
		}
		mu.Lock()
		cancels[e.Approval.ID]()
		mu.Unlock()
	})
	if _, err := c.Start(Request{Prompt: "race"}, sink); err != nil {
		t.Fatal(err)
	}
	rec.wait(t)
	if len(bad) > 0 {
		t.Errorf("answers that were taken but lost to a cancel: %q", bad)
	}
	for _, r := range spooled[wire.ApprovalResolved](t, spool, wire.TypeApprovalResolved) {
		if r.By != wire.ByExtension {
			t.Errorf("relay.approval_resolved %+v: the taken answer must be the outcome", r)
		}
	}
}

// A timed-out approval answers a late reply with that, and the front end
// hears it with its Decided.
func TestTimedOutApprovalSaysSo(t *testing.T) {
	spool := &fakeSpool{}
	c := New(Options{Spool: spool, Executor: funcExec(func(ctx context.Context, req executor.Request, _ executor.Observer, ap executor.Approver) (*executor.Result, error) {
		actx, cancel := context.WithTimeout(ctx, time.Millisecond)
		defer cancel()
		ap.Approve(actx, executor.ApprovalRequest{RunID: req.RunID, ApprovalID: "slow", ToolName: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}) //nolint:errcheck
		return completed(), nil
	})})
	defer c.Close()
	rec := newRecorder(t, spool)
	if _, err := c.Start(Request{Prompt: "x"}, rec); err != nil {
		t.Fatal(err)
	}
	rec.wait(t)
	err := c.Answer("", "slow", Reply{Decision: wire.DecisionAllow, By: wire.ByExtension})
	if err == nil || err.Error() != `approval "slow" already timed out: deny` || !errors.Is(err, ErrUnknownApproval) {
		t.Errorf("late answer: %v", err)
	}
	for _, e := range rec.evs {
		if e.Kind == KindApprovalCancelled && (e.Decided == nil || e.Decided.By != wire.ByTimeout || e.Reason != "timed out: denied and the turn stopped") {
			t.Errorf("approval_cancelled %+v %+v", e, e.Decided)
		}
	}
}

// Who decided, for people: the backend's "dashboard:<name>" is not said
// twice; other details are kept.
func TestDecidedWords(t *testing.T) {
	for _, tc := range []struct {
		d    Decided
		want string
	}{
		{Decided{By: "dashboard", ByDetail: "dashboard:phone", Decision: "deny"}, "already decided by dashboard (phone): deny"},
		{Decided{By: "dashboard", ByDetail: "api:ci", Decision: "allow"}, "already decided by dashboard (api:ci): allow"},
		{Decided{By: "dashboard", Decision: "allow"}, "already decided by dashboard: allow"},
		{Decided{By: "extension", Decision: "allow_always"}, "already decided by extension: allow_always"},
		{Decided{By: "timeout", Decision: "deny"}, "already timed out: deny"},
		{Decided{By: "cancelled", Decision: "deny"}, "already cancelled: deny"},
	} {
		if got := tc.d.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.d, got, tc.want)
		}
	}
}

// The Core remembers a bounded number of outcomes.
func TestDecidedIsBounded(t *testing.T) {
	c := New(Options{})
	c.ap.maxQueue = 3
	for i := range 5 {
		c.approvalSettled(fmt.Sprint(i), Decided{By: wire.ByTTY, Decision: wire.DecisionAllow})
	}
	if _, ok := c.decidedOf("1"); ok {
		t.Error("the second oldest outcome is still kept")
	}
	if _, ok := c.decidedOf("4"); !ok || len(c.ap.decided) != 3 {
		t.Errorf("kept %v", c.ap.decided)
	}
	if err := c.Answer("", "0", Reply{}); err == nil || errors.As(err, new(*DecidedError)) || !errors.Is(err, ErrUnknownApproval) {
		t.Errorf("a forgotten approval: %v", err)
	}
}

// ACP's runs say so in relay.run_started and at their end; other modes are
// refused before anything starts.
func TestRunMode(t *testing.T) {
	c, spool, rec := newFakeCore(t)
	if _, err := c.Start(Request{Prompt: "lines", Mode: wire.ModeACP}, rec); err != nil {
		t.Fatal(err)
	}
	rec.wait(t)
	started := spooled[wire.RunStarted](t, spool, wire.TypeRunStarted)
	ended := spooled[wire.RunEnded](t, spool, wire.TypeRunCompleted)
	if len(started) != 1 || started[0].Mode != "acp" || len(ended) != 1 || ended[0].Mode != "acp" {
		t.Errorf("run_started %+v, run_completed %+v: want mode acp", started, ended)
	}
	var re *RefusedError
	if _, err := c.Start(Request{Prompt: "x", Mode: "terminal"}, rec); !errors.As(err, &re) || re.Code != RefuseBadValue ||
		!strings.Contains(re.Message, `mode "terminal" (allowed: acp, or none for a background run)`) {
		t.Errorf("mode terminal: %v", err)
	}
}
