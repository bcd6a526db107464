package relay

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/internal/budget"
)

// fakeBudget answers every check with grant and err, recording the cwds.
type fakeBudget struct {
	mu    sync.Mutex
	grant budget.Grant
	err   error
	cwds  []string
}

func (f *fakeBudget) Check(_ context.Context, cwd string) (budget.Grant, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cwds = append(f.cwds, cwd)
	return f.grant, f.err
}

// budgetExec records the request it ran.
type budgetExec struct{ got chan executor.Request }

func (e budgetExec) Run(ctx context.Context, req executor.Request, obs executor.Observer, ap executor.Approver) (*executor.Result, error) {
	e.got <- req
	return fakeExec{}.Run(ctx, req, obs, ap)
}

func TestBudgetRefusesBeforeAnything(t *testing.T) {
	spool := &fakeSpool{}
	exhausted := &budget.ExhaustedError{Status: budget.Status{Project: "app", Period: budget.Day, CapUSD: 1, SpentUSD: 1.5}}
	fb := &fakeBudget{err: exhausted}
	c := New(Options{Executor: fakeExec{}, Spool: spool, Budget: fb, DefaultCwd: t.TempDir()})
	defer c.Close()
	rec := newRecorder(t, spool)
	_, err := c.Start(Request{Prompt: "x"}, rec)
	var re *RefusedError
	if !errors.As(err, &re) || re.Code != RefuseBudget || !errors.Is(err, budget.ErrExhausted) || re.Message != exhausted.Error() {
		t.Fatalf("Start = %v", err)
	}
	if len(rec.evs) != 0 || len(spool.types()) != 0 {
		t.Errorf("events %v, spooled %v", rec.kinds(), spool.types())
	}
	// A blank prompt runs no CLI and spends nothing: not checked.
	if _, err := c.Start(Request{Prompt: "  "}, rec); err != nil {
		t.Errorf("blank prompt: %v", err)
	}
	rec.wait(t)
	if len(fb.cwds) != 1 {
		t.Errorf("checks: %q", fb.cwds)
	}
}

func TestBudgetCapsTheRun(t *testing.T) {
	for _, tc := range []struct {
		name      string
		own, left float64
		limited   bool
		want      float64
	}{
		{"remaining", 0, 0.25, true, 0.25},
		{"the user's is smaller", 0.1, 0.25, true, 0.1},
		{"the remaining is smaller", 2, 0.25, true, 0.25},
		{"no budget covers it", 2, 0, false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spool := &fakeSpool{}
			ex := budgetExec{got: make(chan executor.Request, 1)}
			fb := &fakeBudget{grant: budget.Grant{Limited: tc.limited, RemainingUSD: tc.left}}
			cwd := t.TempDir()
			c := New(Options{Executor: ex, Spool: spool, Budget: fb, DefaultCwd: cwd})
			defer c.Close()
			rec := newRecorder(t, spool)
			if _, err := c.Start(Request{Prompt: "x", RunOptions: executor.RunOptions{MaxBudgetUSD: tc.own}}, rec); err != nil {
				t.Fatal(err)
			}
			if req := await(t, ex.got, "the run"); req.MaxBudgetUSD != tc.want {
				t.Errorf("--max-budget-usd %v, want %v", req.MaxBudgetUSD, tc.want)
			}
			rec.wait(t)
			if !slices.Equal(fb.cwds, []string{cwd}) {
				t.Errorf("checked %q, want the run's cwd", fb.cwds)
			}
		})
	}
}

func TestBudgetUncheckedIsRecorded(t *testing.T) {
	spool := &fakeSpool{}
	fb := &fakeBudget{grant: budget.Grant{Unchecked: errors.New("connection refused")}}
	c := New(Options{Executor: fakeExec{}, Spool: spool, Budget: fb, DefaultCwd: t.TempDir()})
	defer c.Close()
	rec := newRecorder(t, spool)
	if _, err := c.Start(Request{Prompt: "x"}, rec); err != nil {
		t.Fatal(err)
	}
	rec.wait(t)
	if types := spool.types(); len(types) < 2 || types[0] != "relay.run_started" || types[1] != budget.TypeUnchecked {
		t.Errorf("spooled %v, want relay.run_started then %s", types, budget.TypeUnchecked)
	}
}

// TestBudgetRefusesASend: each send of a live run is checked; a refused one
// is not written to the CLI and records nothing, and the run goes on.
func TestBudgetRefusesASend(t *testing.T) {
	spool := newSeqSpool(t)
	x := newLiveExec()
	fb := &fakeBudget{grant: budget.Grant{Limited: true, RemainingUSD: 1}}
	c := New(Options{Executor: x, Spool: spool, Budget: fb, DefaultCwd: t.TempDir()})
	defer c.Close()
	sink := newTurnSink()
	if _, err := c.Start(Request{RunOptions: executor.RunOptions{KeepAlive: true}, RunID: "r", SessionID: "s", Prompt: "one"}, sink); err != nil {
		t.Fatal(err)
	}
	sink.turn(t)
	fb.mu.Lock()
	fb.err = &budget.ExhaustedError{Status: budget.Status{Project: "*", Period: budget.Day, CapUSD: 1, SpentUSD: 1}}
	fb.mu.Unlock()
	err := c.Send("req-1", "r", "", Message{Prompt: "two"})
	var re *RefusedError
	if !errors.As(err, &re) || re.Code != RefuseBudget {
		t.Fatalf("Send = %v, want a budget refusal", err)
	}
	if err := c.End("req-2", "r"); err != nil {
		t.Fatal(err)
	}
	sink.end(t)
	if sent := spool.ofType("relay.message_sent"); len(sent) != 0 {
		t.Errorf("the refused send was recorded: %d relay.message_sent", len(sent))
	}
	if len(fb.cwds) != 2 {
		t.Errorf("checks %q, want the start and the send", fb.cwds)
	}
}
