package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/proc"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// liveRun is a run of the real CLI fed through Inputs.
type liveRun struct {
	t       *testing.T
	in      chan Input
	rec     *recorder
	stop    context.CancelFunc
	stopFor context.CancelCauseFunc // stop with a cause (a *Stop)
	done    chan struct{}
	res     *Result
	err     error
}

func startLive(t *testing.T, env *realEnv, req Request) *liveRun {
	t.Helper()
	return startLiveWith(t, env, req, nil)
}

// startLiveWith is startLive with an Approver.
func startLiveWith(t *testing.T, env *realEnv, req Request, approver Approver) *liveRun {
	t.Helper()
	ctx, cancelCause := context.WithCancelCause(context.Background())
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	lr := &liveRun{t: t, in: make(chan Input, 8), rec: &recorder{}, stop: cancel, stopFor: cancelCause, done: make(chan struct{})}
	req.Cwd, req.Inputs = env.cwd, lr.in
	if req.MaxTurns == 0 {
		req.MaxTurns = 6
	}
	go func() {
		defer close(lr.done)
		lr.res, lr.err = env.e.Run(ctx, req, lr.rec, approver)
	}()
	t.Cleanup(func() {
		cancel()
		<-lr.done
	})
	return lr
}

// input hands in to the run and returns what Done said.
func (lr *liveRun) input(in Input) error {
	lr.t.Helper()
	done := make(chan error, 1)
	in.Done = done
	lr.in <- in
	select {
	case err := <-done:
		return err
	case <-time.After(60 * time.Second):
		lr.t.Fatalf("input %d: no answer on Done", in.Kind)
		return nil
	}
}

func (lr *liveRun) send(text string) error {
	lr.t.Helper()
	b, _ := json.Marshal(text)
	return lr.input(Input{Kind: InputSend, Content: b})
}

// turn waits for the EventTurnCompleted of turn n.
func (lr *liveRun) turn(n int) Event {
	lr.t.Helper()
	return poll.Value(lr.t, liveWait, fmt.Sprintf("turn %d to complete", n), func() (Event, bool) {
		// Looked at before the events: every event of the run was
		// recorded before it ended.
		ended := false
		select {
		case <-lr.done:
			ended = true
		default:
		}
		for _, e := range lr.rec.kinds(EventTurnCompleted) {
			if e.Turn == n {
				return e, true
			}
		}
		if ended {
			lr.t.Fatalf("the run ended before turn %d completed: %+v, %v", n, lr.res, lr.err)
		}
		return Event{}, false
	})
}

func (lr *liveRun) wait() (*Result, error) {
	lr.t.Helper()
	select {
	case <-lr.done:
		return lr.res, lr.err
	case <-time.After(90 * time.Second):
		lr.t.Fatal("the live run never ended")
		return nil, nil
	}
}

// mentions reports whether any message of a request holds text.
func mentions(r mockapi.Request, role, text string) bool {
	for _, m := range r.Messages {
		for _, c := range m.Content {
			if m.Role == role && strings.Contains(c.Text, text) {
				return true
			}
		}
	}
	return false
}

// lastUserText is the text of a request's last user message.
func lastUserText(r mockapi.Request) string {
	if len(r.Messages) == 0 {
		return ""
	}
	var parts []string
	for _, c := range r.Messages[len(r.Messages)-1].Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

func TestLiveFollowUpsQueueAndEnd(t *testing.T) {
	env := newRealEnv(t, mockapi.Script{
		mockapi.TextTurn("one"),
		{Blocks: []mockapi.Block{mockapi.Text("two, slowly streamed")}, DeltaDelay: 150 * time.Millisecond},
		mockapi.TextTurn("three"),
	}, nil)
	lr := startLive(t, env, Request{
		RunOptions: RunOptions{
			KeepAlive: true,
		},
		Prompt:  "first prompt alpha",
		Content: json.RawMessage(`[{"type":"text","text":"first prompt alpha"}]`),
	})

	first := lr.turn(1)
	if tr := first.TurnResult; tr == nil || tr.Status != StatusCompleted || tr.Stdout != "one" || !tr.HasUsage ||
		tr.Usage.InputTokens != 10 || tr.TotalCostUSD <= 0 || tr.ConversationID == "" {
		t.Fatalf("turn 1 result %+v", first.TurnResult)
	}
	if err := lr.send("second prompt beta"); err != nil {
		t.Fatalf("send while idle: %v", err)
	}
	// Turn 2 streams slowly: this one waits for it, then the end for both.
	if err := lr.send("third prompt gamma"); err != nil {
		t.Fatalf("send during a turn: %v", err)
	}
	if err := lr.input(Input{Kind: InputEnd}); err != nil {
		t.Fatalf("end: %v", err)
	}
	if err := lr.send("too late"); !errors.Is(err, ErrRunEnding) {
		t.Errorf("send after end: err = %v, want ErrRunEnding", err)
	}
	res, err := lr.wait()
	if err != nil || res.Status != StatusCompleted || res.ExitCode != 0 {
		t.Fatalf("result %+v, %v", res, err)
	}
	if res.Stdout != "one\ntwo, slowly streamed\nthree" {
		t.Errorf("stdout %q", res.Stdout)
	}
	turns := lr.rec.kinds(EventTurnCompleted)
	var cost float64
	for i, want := range []string{"one", "two, slowly streamed", "three"} {
		if len(turns) != 3 || turns[i].Turn != i+1 || turns[i].TurnResult.Stdout != want {
			t.Fatalf("turns %+v", turns)
		}
		cost += turns[i].TurnResult.TotalCostUSD
	}
	// Usage is summed once per result; the cost is the sum of the turns'.
	if !res.HasUsage || res.Usage.InputTokens != 30 || res.Usage.OutputTokens != 15 || res.NumTurns != 3 ||
		math.Abs(res.TotalCostUSD-cost) > 1e-12 || res.ConversationID != first.TurnResult.ConversationID {
		t.Errorf("aggregate %+v (turn costs sum to %v)", res, cost)
	}

	// The scripted API saw each turn with the whole history, one turn at a time.
	var second, third *mockapi.Request
	for _, r := range env.api.MainRequests() {
		switch last := lastUserText(r); {
		case strings.Contains(last, "second prompt beta"):
			second = &r
		case strings.Contains(last, "third prompt gamma"):
			third = &r
		case strings.Contains(last, "too late"):
			t.Error("a send after end reached the CLI")
		}
	}
	if second == nil || third == nil {
		t.Fatalf("requests for the follow-ups: second %v, third %v", second != nil, third != nil)
	}
	if !mentions(*second, "user", "first prompt alpha") || !mentions(*second, "assistant", "one") || mentions(*second, "user", "third prompt gamma") {
		t.Errorf("turn 2 request lacks the first exchange or holds the queued send: %+v", second.Messages)
	}
	if !mentions(*third, "assistant", "two, slowly streamed") {
		t.Errorf("turn 3 request does not follow turn 2: %+v", third.Messages)
	}

	infos := lr.rec.kinds(EventSessionInfo)
	if len(infos) != 1 {
		t.Fatalf("session info events: %d", len(infos))
	}
	var info map[string]json.RawMessage
	if err := json.Unmarshal(infos[0].SessionInfo, &info); err != nil || info["commands"] == nil || info["models"] == nil {
		t.Errorf("session info %.300s: %v", infos[0].SessionInfo, err)
	}
}

func TestLiveInterruptKeepsTheRun(t *testing.T) {
	env := newRealEnv(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo start && sleep 300", "description": "Wait a long time"}),
		mockapi.TextTurn("after the interrupt"),
	}, nil)
	runID := "live-interrupt-" + strings.ReplaceAll(t.Name(), "/", "-")
	lr := startLive(t, env, Request{RunOptions: RunOptions{KeepAlive: true}, RunID: runID, Prompt: "wait"})
	poll.Until(t, liveWait, "the Bash tool runs sleep 300", func() bool { return sleeping(runID) })

	if err := lr.input(Input{Kind: InputInterrupt, By: wire.ByExtension}); err != nil {
		t.Fatalf("interrupt: %v", err)
	}
	// The user pressed Stop: nothing failed, and the turn says who stopped
	// it; the CLI's own words stay in Stderr.
	first := lr.turn(1)
	if tr := first.TurnResult; tr.Subtype != streamjson.ResultErrorDuringExecution || tr.Status != StatusInterrupted ||
		tr.StoppedBy != wire.ByExtension || tr.Reason != "stopped from the editor" || !strings.Contains(tr.Stderr, "during execution") {
		t.Errorf("interrupted turn %+v", first.TurnResult)
	}
	poll.Until(t, liveWait, "the interrupted sleep is gone", func() bool { return !sleeping(runID) })
	started := lr.rec.kinds(EventStarted)
	if cli, err := proc.Lookup(started[0].PID); err != nil || !proc.Alive(cli) {
		t.Fatalf("the CLI did not outlive the interrupt: %v", err)
	}

	if err := lr.send("go on"); err != nil {
		t.Fatalf("send after interrupt: %v", err)
	}
	if second := lr.turn(2); second.TurnResult.Stdout != "after the interrupt" || second.TurnResult.Status != StatusCompleted {
		t.Errorf("turn 2 %+v", second.TurnResult)
	}
	// Interrupting an idle run stops nothing and is no error.
	if err := lr.input(Input{Kind: InputInterrupt}); err != nil {
		t.Errorf("interrupt while idle: %v", err)
	}
	if err := lr.input(Input{Kind: InputEnd}); err != nil {
		t.Fatal(err)
	}
	if res, err := lr.wait(); err != nil || res.Status != StatusCompleted {
		t.Fatalf("result %+v, %v", res, err)
	}
	if left, _ := proc.FindMarked(runID); len(left) != 0 {
		t.Errorf("processes left: %+v", left)
	}
}

func TestLiveSetModePlanStopsWrites(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.txt")
	env := newRealEnv(t, mockapi.Script{
		mockapi.TextTurn("ready"),
		mockapi.ToolTurn("Write", map[string]any{"file_path": out, "content": "planned\n"}),
		mockapi.TextTurn("planned"),
	}, nil)
	lr := startLive(t, env, Request{RunOptions: RunOptions{KeepAlive: true}, Prompt: "hello"})
	lr.turn(1)

	if err := lr.input(Input{Kind: InputSetMode, Mode: streamjson.PermissionModePlan}); err != nil {
		t.Fatalf("set_mode plan: %v", err)
	}
	changed := lr.rec.kinds(EventModeChanged)
	if len(changed) != 1 || changed[0].Mode != streamjson.PermissionModePlan {
		t.Fatalf("mode changes %+v", changed)
	}
	err := lr.input(Input{Kind: InputSetMode, Mode: "bogus"})
	if !errors.Is(err, ErrCLIRefused) || !strings.Contains(err.Error(), "bogus") || !strings.Contains(err.Error(), "Cannot set permission mode") {
		t.Errorf("refused set_mode: %v (want the CLI's words)", err)
	}
	if err := lr.send("write the file"); err != nil {
		t.Fatal(err)
	}
	lr.turn(2)
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("plan mode let the Write through: %v", err)
	}
	var denied bool
	for _, tr := range env.api.ToolResults() {
		denied = denied || (tr.IsError && strings.Contains(tr.Content, "Plan mode is on"))
	}
	if !denied {
		t.Errorf("the model was not told why: %+v", env.api.ToolResults())
	}
	if err := lr.input(Input{Kind: InputEnd}); err != nil {
		t.Fatal(err)
	}
	if res, err := lr.wait(); err != nil || res.Status != StatusCompleted {
		t.Fatalf("result %+v, %v", res, err)
	}
	if changed := lr.rec.kinds(EventModeChanged); len(changed) != 1 {
		t.Errorf("mode changes after the turn %+v", changed)
	}
}

func TestLiveSetModel(t *testing.T) {
	env := newRealEnv(t, mockapi.Script{mockapi.TextTurn("a"), mockapi.TextTurn("b")}, nil)
	lr := startLive(t, env, Request{RunOptions: RunOptions{KeepAlive: true}, Prompt: "hello"})
	lr.turn(1)
	before, _ := env.api.LastMainRequest()
	if err := lr.input(Input{Kind: InputSetModel, Model: "claude-haiku-4-5"}); err != nil {
		t.Fatalf("set_model: %v", err)
	}
	if err := lr.send("again"); err != nil {
		t.Fatal(err)
	}
	lr.turn(2)
	after, _ := env.api.LastMainRequest()
	if before.Model == "claude-haiku-4-5" || after.Model != "claude-haiku-4-5" {
		t.Errorf("model before %q, after %q", before.Model, after.Model)
	}
	if err := lr.input(Input{Kind: InputEnd}); err != nil {
		t.Fatal(err)
	}
	if res, err := lr.wait(); err != nil || res.Status != StatusCompleted || res.Stdout != "a\nb" {
		t.Fatalf("result %+v, %v", res, err)
	}
}

func TestLiveIdleTimeoutCompletes(t *testing.T) {
	env := newRealEnv(t, mockapi.Script{mockapi.TextTurn("hi")}, nil)
	lr := startLive(t, env, Request{RunOptions: RunOptions{KeepAlive: true}, Prompt: "hello", IdleTimeout: 200 * time.Millisecond})
	res, err := lr.wait()
	if err != nil || res.Status != StatusCompleted || res.Stdout != "hi" || res.CLIExitCode != 0 {
		t.Fatalf("result %+v, %v", res, err)
	}
	if turns := lr.rec.kinds(EventTurnCompleted); len(turns) != 1 {
		t.Errorf("turns %+v", turns)
	}
}

func TestLiveClosedInputsEndTheRun(t *testing.T) {
	env := newRealEnv(t, mockapi.Script{mockapi.TextTurn("hi")}, nil)
	lr := startLive(t, env, Request{RunOptions: RunOptions{KeepAlive: true}, Prompt: "hello"})
	lr.turn(1)
	close(lr.in)
	if res, err := lr.wait(); err != nil || res.Status != StatusCompleted {
		t.Fatalf("result %+v, %v", res, err)
	}
}

// A live run closed while idle lost nothing: it completes, as End would
// have ended it.
func TestLiveCancelWhileIdle(t *testing.T) {
	env := newRealEnv(t, mockapi.Script{mockapi.TextTurn("hi")}, nil)
	runID := "live-cancel-" + strings.ReplaceAll(t.Name(), "/", "-")
	lr := startLive(t, env, Request{RunOptions: RunOptions{KeepAlive: true}, RunID: runID, Prompt: "hello"})
	lr.turn(1)
	lr.stopFor(&Stop{Why: "closed by the client"})
	res, err := lr.wait()
	if err != nil || res.Status != StatusCompleted || res.ExitCode != 0 || res.NumTurns != 1 {
		t.Errorf("result %+v, %v", res, err)
	}
	poll.Until(t, liveWait, "the run's processes are gone", func() bool {
		left, _ := proc.FindMarked(runID)
		return len(left) == 0
	})
}

// A live run closed during a turn is cancelled with the cause, and the turn
// it stopped is interrupted with the same words.
func TestLiveClosedDuringATurn(t *testing.T) {
	env := newRealEnv(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo start && sleep 300", "description": "Wait a long time"}),
		mockapi.TextTurn("never"),
	}, nil)
	runID := "live-closed-" + strings.ReplaceAll(t.Name(), "/", "-")
	lr := startLive(t, env, Request{RunOptions: RunOptions{KeepAlive: true}, RunID: runID, Prompt: "wait"})
	poll.Until(t, liveWait, "the Bash tool runs sleep 300", func() bool { return sleeping(runID) })
	lr.stopFor(&Stop{By: wire.ByACP, Why: "closed by the client"})
	res, err := lr.wait()
	if err != nil || res.Status != StatusCancelled || res.ExitCode != 130 || res.Reason != "closed by the client during a turn" ||
		res.StoppedBy != wire.ByACP {
		t.Errorf("result %+v, %v", res, err)
	}
	if turns := lr.rec.kinds(EventTurnCompleted); len(turns) == 1 {
		if tr := turns[0].TurnResult; tr.Status != StatusInterrupted || tr.Reason != "closed by the client during a turn" {
			t.Errorf("the stopped turn %+v", tr)
		}
	}
	poll.Until(t, liveWait, "the run's processes are gone", func() bool {
		left, _ := proc.FindMarked(runID)
		return len(left) == 0
	})
}

func TestOneShotTakesInterruptNotSends(t *testing.T) {
	env := newRealEnv(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo start && sleep 300", "description": "Wait a long time"}),
		mockapi.TextTurn("never"),
	}, nil)
	runID := "oneshot-interrupt-" + strings.ReplaceAll(t.Name(), "/", "-")
	lr := startLive(t, env, Request{RunID: runID, Prompt: "wait"})
	poll.Until(t, liveWait, "the Bash tool runs sleep 300", func() bool { return sleeping(runID) })
	if err := lr.send("more"); !errors.Is(err, ErrNotLive) {
		t.Errorf("send into a one-shot run: err = %v, want ErrNotLive", err)
	}
	if err := lr.input(Input{Kind: InputInterrupt}); err != nil {
		t.Fatalf("interrupt: %v", err)
	}
	// The result of the interrupted turn closes stdin, as for any one-shot
	// run; someone stopped it, so the run is cancelled, not failed.
	res, err := lr.wait()
	if err != nil || res.Status != StatusCancelled || res.Subtype != streamjson.ResultErrorDuringExecution ||
		res.Reason != "the turn was stopped" {
		t.Errorf("result %+v, %v", res, err)
	}
	if n := len(lr.rec.kinds(EventTurnCompleted)); n != 0 {
		t.Errorf("a one-shot run reported %d turn ends", n)
	}
	if left, _ := proc.FindMarked(runID); len(left) != 0 {
		t.Errorf("processes left: %+v", left)
	}
}

func TestPartialMessagesReachTheObserver(t *testing.T) {
	env := newRealEnv(t, mockapi.Script{mockapi.TextTurn("streamed in pieces")}, nil)
	res, rec := env.run(t, Request{RunOptions: RunOptions{PartialMessages: true}, Prompt: "hello"}, nil)
	if res.Status != StatusCompleted || res.Stdout != "streamed in pieces" {
		t.Fatalf("result %+v", res)
	}
	var deltas int
	for _, e := range rec.kinds(EventLine) {
		if e.Message.StreamEvent != nil && e.Message.StreamEvent.EventType() == "content_block_delta" {
			deltas++
		}
	}
	if deltas == 0 {
		t.Errorf("no stream_event deltas among %v", rec.types())
	}
}

// liveWait bounds a wait on the real CLI: a turn on the scripted API
// takes seconds, not a minute.
const liveWait = 60 * time.Second

func TestAggregatorTurns(t *testing.T) {
	var a aggregator
	line := func(s string) streamjson.Message {
		m, err := streamjson.Decode([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	// total_cost_usd grows over the process; usage and num_turns are per turn.
	a.add(line(`{"type":"assistant","session_id":"s1","message":{"role":"assistant","content":[{"type":"text","text":"one"}]}}`))
	a.add(line(`{"type":"result","subtype":"success","session_id":"s1","num_turns":1,"total_cost_usd":0.25,"usage":{"input_tokens":10,"output_tokens":5}}`))
	first := a.endTurn()
	a.add(line(`{"type":"assistant","session_id":"s1","message":{"role":"assistant","content":[{"type":"text","text":"two"}]}}`))
	a.add(line(`{"type":"result","subtype":"error_during_execution","is_error":true,"session_id":"s1","num_turns":2,"total_cost_usd":0.75,"usage":{"input_tokens":20,"output_tokens":7}}`))
	second := a.endTurn()
	if first.Stdout != "one" || first.TotalCostUSD != 0.25 || first.Usage.InputTokens != 10 || first.Status != StatusCompleted || first.ConversationID != "s1" {
		t.Errorf("turn 1 %+v", first)
	}
	if second.Stdout != "two" || second.TotalCostUSD != 0.5 || second.Status != StatusFailed || second.ExitCode != 1 ||
		!strings.HasPrefix(second.Stderr, "Error during execution") || second.NumTurns != 2 {
		t.Errorf("turn 2 %+v", second)
	}
	if a.totalCost() != 0.75 || a.usage.InputTokens != 30 || a.usage.OutputTokens != 12 || a.numTurns != 3 ||
		strings.TrimSpace(a.stdout.String()) != "one\ntwo" {
		t.Errorf("totals cost %v usage %+v turns %d stdout %q", a.totalCost(), a.usage, a.numTurns, a.stdout.String())
	}
	// A CLI that starts counting afresh reports that turn's cost alone.
	a.add(line(`{"type":"result","subtype":"success","session_id":"s1","num_turns":1,"total_cost_usd":0.1,"usage":{}}`))
	if third := a.endTurn(); third.TotalCostUSD != 0.1 {
		t.Errorf("turn 3 cost %v", third.TotalCostUSD)
	}
}

func TestStdinWriterOrderAndShutdown(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sw := newStdinWriter()
	go sw.run()
	var got []int
	results := make(chan error, 3)
	for i := range 2 {
		sw.add(writeOp{write: func() error { got = append(got, i); return nil }, done: func(err error) { results <- err }})
	}
	// Nobody reads the pipe: this write blocks until shutdown cuts it.
	big := make([]byte, 1<<20)
	writing := make(chan struct{})
	sw.add(writeOp{write: func() error { close(writing); _, err := w.Write(big); return err }, done: func(err error) { results <- err }})
	for range 2 {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	<-writing
	var warned bool
	sw.shutdown(w, func() { warned = true })
	if err := <-results; err == nil || !warned {
		t.Errorf("stuck write: err %v, warned %v", err, warned)
	}
	if len(got) != 2 || got[0] != 0 || got[1] != 1 {
		t.Errorf("order %v", got)
	}
	late := make(chan error, 1)
	sw.add(writeOp{write: func() error { t.Error("written after shutdown"); return nil }, done: func(err error) { late <- err }})
	if err := <-late; !errors.Is(err, ErrNoAnswer) {
		t.Errorf("after shutdown: %v", err)
	}
}

// A plan-mode run without approvals plans first: a change before the plan is
// approved is denied; after ExitPlanMode the CLI's new mode is reported and
// the change goes through.
func TestPlanRunWithoutApprovalsPlansFirst(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.txt")
	write := map[string]any{"file_path": out, "content": "planned\n"}
	env := newRealEnv(t, mockapi.Script{
		mockapi.ToolTurn("Write", write),
		mockapi.ToolTurn("ExitPlanMode", map[string]any{"plan": "Write out.txt"}),
		mockapi.ToolTurn("Write", write),
		mockapi.TextTurn("done"),
	}, nil)
	res, rec := env.run(t, Request{RunOptions: RunOptions{PermissionMode: streamjson.PermissionModePlan}, Prompt: "plan it"}, nil)
	if res.Status != StatusCompleted {
		t.Fatalf("result %+v", res)
	}
	results := env.api.ToolResults()
	if len(results) != 3 || !results[0].IsError || !strings.Contains(results[0].Content, "Plan mode is on") || results[2].IsError {
		t.Errorf("tool results %+v", results)
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("the write after the plan: %v", err)
	}
	changed := rec.kinds(EventModeChanged)
	if len(changed) != 1 || changed[0].Mode == streamjson.PermissionModePlan {
		t.Errorf("mode changes %+v", changed)
	}
}

func TestLiveCancelDuringATurn(t *testing.T) {
	env := newRealEnv(t, mockapi.Script{
		mockapi.TextTurn("first"),
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo start && sleep 300", "description": "Wait a long time"}),
		mockapi.TextTurn("never"),
	}, nil)
	runID := "live-cancel-turn-" + strings.ReplaceAll(t.Name(), "/", "-")
	lr := startLive(t, env, Request{RunOptions: RunOptions{KeepAlive: true}, RunID: runID, Prompt: "hello"})
	lr.turn(1)
	if err := lr.send("wait"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, liveWait, "the Bash tool runs sleep 300", func() bool { return sleeping(runID) })
	lr.stop()
	res, _ := lr.wait()
	if res.Status != StatusCancelled || res.ExitCode != 130 {
		t.Errorf("result %+v", res)
	}
	poll.Until(t, liveWait, "the run's processes are gone", func() bool {
		left, _ := proc.FindMarked(runID)
		return len(left) == 0
	})
}

// An idle start runs the CLI and its initialize with no turn: the first send
// is the first turn, in the conversation the session ID names.
func TestLiveIdleStartWaitsForTheFirstSend(t *testing.T) {
	env := newRealEnv(t, mockapi.Script{mockapi.TextTurn("first answer")}, nil)
	id := "0b8f8a57-6a55-4a43-9d55-6d7a1b0f3c21"
	lr := startLive(t, env, Request{RunOptions: RunOptions{KeepAlive: true}, RunID: "idle-" + t.Name(), Idle: true, SessionID: id})
	poll.Until(t, liveWait, "the initialize response", func() bool { return len(lr.rec.kinds(EventSessionInfo)) == 1 })
	if n := len(env.api.Requests()); n != 0 {
		t.Fatalf("%d Messages API requests before the first send", n)
	}
	if err := lr.send("hello"); err != nil {
		t.Fatal(err)
	}
	if first := lr.turn(1); first.TurnResult.Stdout != "first answer" || first.TurnResult.ConversationID != id {
		t.Errorf("turn 1 %+v", first.TurnResult)
	}
	if err := lr.input(Input{Kind: InputEnd}); err != nil {
		t.Fatal(err)
	}
	if res, err := lr.wait(); err != nil || res.Status != StatusCompleted || res.ConversationID != id {
		t.Fatalf("result %+v, %v", res, err)
	}
}

// An idle start ended before any message completes: nothing ran.
func TestLiveIdleStartEndedBeforeAnySend(t *testing.T) {
	env := newRealEnv(t, mockapi.Script{mockapi.TextTurn("unused")}, nil)
	lr := startLive(t, env, Request{RunOptions: RunOptions{KeepAlive: true}, RunID: "idle-end-" + t.Name(), Idle: true})
	poll.Until(t, liveWait, "the initialize response", func() bool { return len(lr.rec.kinds(EventSessionInfo)) == 1 })
	if err := lr.input(Input{Kind: InputEnd}); err != nil {
		t.Fatal(err)
	}
	if res, err := lr.wait(); err != nil || res.Status != StatusCompleted {
		t.Fatalf("result %+v, %v", res, err)
	}
}

// A fork can be given its conversation ID too.
func TestRealForkWithSessionID(t *testing.T) {
	env := newRealEnv(t, mockapi.Script{mockapi.TextTurn("first"), mockapi.TextTurn("forked")}, nil)
	first, _ := env.run(t, Request{Prompt: "remember pelican"}, nil)
	if first.Status != StatusCompleted {
		t.Fatalf("first %+v", first)
	}
	id := "5d1c9a63-2b1e-4f7a-9c1e-0a6f3b2d8e47"
	forked, _ := env.run(t, Request{RunOptions: RunOptions{Resume: first.ConversationID, Fork: true}, Prompt: "fork it", SessionID: id}, nil)
	if forked.Status != StatusCompleted || forked.ConversationID != id {
		t.Fatalf("forked %+v, want conversation %s", forked, id)
	}
	last, _ := env.api.LastMainRequest()
	if !strings.Contains(string(last.Body), "remember pelican") {
		t.Error("the fork lost the history")
	}
}

// A live run's registry record names the interaction of the turn that runs,
// from the moment it starts, so that a start after a crash ends that turn;
// the record is gone once the run ended.
func TestLiveRecordFollowsTheTurn(t *testing.T) {
	reg := &proc.Registry{Dir: filepath.Join(t.TempDir(), "runs")}
	env := newRealEnv(t, mockapi.Script{
		mockapi.TextTurn("one"),
		{Blocks: []mockapi.Block{mockapi.Text("two, slowly streamed")}, DeltaDelay: 150 * time.Millisecond},
		mockapi.TextTurn("three"),
	}, func(o *Options) { o.Registry = reg })
	recorded := func() proc.Record {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(reg.Dir, "live-rec.json"))
		if err != nil {
			t.Fatalf("the run's record: %v", err)
		}
		var rec proc.Record
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatal(err)
		}
		return rec
	}
	lr := startLive(t, env, Request{
		RunOptions: RunOptions{
			KeepAlive: true,
		},
		RunID:  "live-rec",
		Prompt: "first",
		Spool:  proc.SpoolKey{SessionID: "s1", InteractionID: "i1"},
	})
	lr.turn(1)
	if got := recorded().Spool; got != (proc.SpoolKey{SessionID: "s1", InteractionID: "i1"}) {
		t.Errorf("during turn 1 the record names %+v", got)
	}
	started := recorded().Started
	send := func(text, inter string) {
		b, _ := json.Marshal(text)
		if err := lr.input(Input{Kind: InputSend, Content: b, Interaction: inter}); err != nil {
			t.Fatalf("send %q: %v", text, err)
		}
	}
	send("second", "i2") // idle: turn 2 starts at once
	if got := recorded().Spool.InteractionID; got != "i2" {
		t.Errorf("once turn 2 started the record names %q, want i2", got)
	}
	send("third", "i3") // queued behind turn 2
	lr.turn(3)
	if rec := recorded(); rec.Spool.InteractionID != "i3" || !rec.Started.Equal(started) {
		t.Errorf("during turn 3 the record names %q, started %v; want i3, started %v as at first", rec.Spool.InteractionID, rec.Started, started)
	}
	if err := lr.input(Input{Kind: InputEnd}); err != nil {
		t.Fatal(err)
	}
	if res, err := lr.wait(); err != nil || res.Status != StatusCompleted {
		t.Fatalf("result %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(reg.Dir, "live-rec.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the record outlived the run: %v", err)
	}
}
