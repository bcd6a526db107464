package executor

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/proc"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/testkit/fakecli"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
	"github.com/claude-relay/claude-relay/internal/testkit/syncbuf"
)

// recorder is an Observer that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) Event(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) kinds(k EventKind) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	for _, e := range r.events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

func (r *recorder) types() []string {
	var out []string
	for _, e := range r.kinds(EventLine) {
		out = append(out, e.Message.Type)
	}
	return out
}

// fakeRun runs the fake CLI in mode with fast timings.
func fakeRun(t *testing.T, ctx context.Context, mode fakecli.Mode, req Request, approver Approver, opts ...fakecli.Option) (*Result, *recorder, error) {
	t.Helper()
	path, env := fakecli.Command(mode, opts...)
	e := New(Options{
		CLIPath: path, BaseEnv: append(os.Environ(), env...),
		StartupTimeout: 5 * time.Second, InterruptGrace: 300 * time.Millisecond, SignalGap: 150 * time.Millisecond,
		ApprovalTimeout: 5 * time.Second,
	})
	if req.Prompt == "" {
		req.Prompt = "hello"
	}
	rec := &recorder{}
	res, err := e.Run(ctx, req, rec, approver)
	return res, rec, err
}

func TestNormalTurn(t *testing.T) {
	record := filepath.Join(t.TempDir(), "stdin")
	res, rec, err := fakeRun(t, context.Background(), fakecli.ModeNormal,
		Request{RunOptions: RunOptions{Model: "-weird-model", MaxTurns: 3}}, nil, fakecli.WithRecordFile(record))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusCompleted || res.ExitCode != 0 || res.Stdout != fakecli.ReplyText {
		t.Errorf("result %+v", res)
	}
	if res.ConversationID != fakecli.DefaultSessionID || res.TotalCostUSD == 0 || res.Usage.InputTokens != 10 {
		t.Errorf("conversation/usage: %+v", res)
	}
	types := rec.types()
	if !slices.Contains(types, "system") || types[len(types)-1] != "result" {
		t.Errorf("line types %v", types)
	}
	lines := readLines(t, record)
	if !strings.Contains(lines[0], `"--model=-weird-model"`) || !strings.Contains(lines[0], `"--max-turns=3"`) {
		t.Errorf("argv %s", lines[0])
	}
	// initialize, the modes question and the prompt, in that order.
	want := []string{`"subtype":"initialize"`, `"subtype":"set_permission_mode","mode":""`, `"type":"user"`}
	for i, w := range want {
		if len(lines) <= i+1 || !strings.Contains(lines[i+1], w) {
			t.Fatalf("stdin line %d should contain %s; got %q", i+1, w, lines)
		}
	}
}

// A request that names no mode starts in the CLI's configured one, except
// bypassPermissions, which settings the agent can write must not grant; a
// named mode is set before the prompt. The session info says the mode and
// the modes the CLI takes.
func TestStartingMode(t *testing.T) {
	for _, c := range []struct {
		name, configured string
		req              streamjson.PermissionMode
		want             streamjson.PermissionMode
		set              string // the set_permission_mode before the prompt, if any
	}{
		{"configured", "acceptEdits", "", "acceptEdits", ""},
		{"configured bypass", "bypassPermissions", "", "default", `"mode":"default"`},
		{"named", "acceptEdits", "plan", "plan", `"mode":"plan"`},
		{"named bypass", "", "bypassPermissions", "bypassPermissions", `"mode":"default"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			record := filepath.Join(t.TempDir(), "stdin")
			_, rec, err := fakeRun(t, context.Background(), fakecli.ModeNormal, Request{RunOptions: RunOptions{PermissionMode: c.req}}, nil,
				fakecli.WithRecordFile(record), fakecli.WithConfiguredMode(c.configured))
			if err != nil {
				t.Fatal(err)
			}
			infos := rec.kinds(EventSessionInfo)
			if len(infos) != 1 || infos[0].Mode != c.want || len(infos[0].Modes) != 6 {
				t.Fatalf("session info events %+v; want one, mode %s, six modes", infos, c.want)
			}
			lines := readLines(t, record)[1:] // after the argv
			user := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, `"type":"user"`) })
			var set []string
			for _, l := range lines[:max(user, 0)] {
				if strings.Contains(l, `"subtype":"set_permission_mode"`) && !strings.Contains(l, `"mode":""`) {
					set = append(set, l)
				}
			}
			switch {
			case user < 0:
				t.Fatalf("no prompt written: %q", lines)
			case c.set == "" && len(set) > 0, c.set != "" && (len(set) != 1 || !strings.Contains(set[0], c.set)):
				t.Errorf("mode lines before the prompt %q, want %s", set, cmp.Or(c.set, "none"))
			}
		})
	}
}

// A run logs no warning of its own making: the modes question's refusal is
// expected, and answers are reported by whoever asked.
func TestQuietStart(t *testing.T) {
	path, env := fakecli.Command(fakecli.ModeNormal)
	var logs syncbuf.Buffer
	e := New(Options{CLIPath: path, BaseEnv: append(os.Environ(), env...), StartupTimeout: 5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	for _, mode := range []streamjson.PermissionMode{"", "plan"} {
		if res, err := e.Run(context.Background(), Request{Prompt: "hello", RunOptions: RunOptions{PermissionMode: mode}}, &recorder{}, nil); err != nil || res.Status != StatusCompleted {
			t.Fatalf("mode %q: %+v, %v", mode, res, err)
		}
	}
	if logs.String() != "" {
		t.Errorf("warnings from a normal run:\n%s", logs.String())
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func TestBlankPromptStartsNothing(t *testing.T) {
	e := New(Options{CLIPath: "/nonexistent/claude"})
	res, err := e.Run(context.Background(), Request{Prompt: "  \n"}, nil, nil)
	if err != nil || res.Status != StatusCompleted || res.ExitCode != 0 || res.DurationMS != 0 {
		t.Fatalf("blank prompt: %+v %v", res, err)
	}
}

func TestMalformedLinesAreReportedNotFatal(t *testing.T) {
	res, rec, err := fakeRun(t, context.Background(), fakecli.ModeMalformed, Request{}, nil)
	if err != nil || res.Status != StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	bad := rec.kinds(EventMalformed)
	if len(bad) < 2 {
		t.Fatalf("malformed events: %d", len(bad))
	}
	for _, e := range bad {
		if e.Err == nil || len(e.Line) == 0 {
			t.Errorf("malformed event without error or text: %+v", e)
		}
	}
	var unknown bool
	for _, e := range rec.kinds(EventLine) {
		unknown = unknown || e.Message.Unknown()
	}
	if !unknown {
		t.Error("an unknown message type must be passed on")
	}
}

func TestHugeLinePassesIntact(t *testing.T) {
	const size = 20 << 20
	res, rec, err := fakeRun(t, context.Background(), fakecli.ModeHugeLine, Request{}, nil, fakecli.WithHugeLineSize(size))
	if err != nil || res.Status != StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	var longest int
	for _, e := range rec.kinds(EventLine) {
		longest = max(longest, len(e.Line))
		if len(e.Line) > size {
			if txt := e.Message.Assistant.Text(); len(txt) < size {
				t.Errorf("huge text decoded to %d bytes", len(txt))
			}
		}
	}
	if longest <= size {
		t.Fatalf("longest line %d, want > %d", longest, size)
	}
	if len(res.Stdout) < size {
		t.Errorf("stdout %d bytes", len(res.Stdout))
	}
}

func TestStartupTimeoutKills(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	path, env := fakecli.Command(fakecli.ModeHang, fakecli.WithPidFile(pids))
	e := New(Options{CLIPath: path, BaseEnv: append(os.Environ(), env...), StartupTimeout: 300 * time.Millisecond})
	res, err := e.Run(context.Background(), Request{Prompt: "hi"}, nil, nil)
	if !errors.Is(err, ErrStartupTimeout) || res.Status != StatusFailed || !strings.Contains(res.Stderr, "no output within 300ms") {
		t.Fatalf("%+v %v", res, err)
	}
	assertGone(t, pids)
}

func TestCrashMidTurn(t *testing.T) {
	res, _, err := fakeRun(t, context.Background(), fakecli.ModeCrash, Request{}, nil)
	if !errors.Is(err, ErrNoResult) || res.Status != StatusFailed || res.ExitCode != 3 || res.Stderr == "" {
		t.Fatalf("%+v %v", res, err)
	}
	if res.ConversationID == "" {
		t.Error("the conversation ID seen before the crash should be kept")
	}
}

func TestANSIStderrStripped(t *testing.T) {
	_, rec, err := fakeRun(t, context.Background(), fakecli.ModeANSI, Request{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	lines := rec.kinds(EventStderr)
	if len(lines) == 0 {
		t.Fatal("no stderr events")
	}
	for _, e := range lines {
		if strings.Contains(e.Text, "\x1b") {
			t.Errorf("ANSI left in %q", e.Text)
		}
	}
}

func TestCancelEscalatesToSIGKILLAndFindsGrandchild(t *testing.T) {
	for _, mode := range []fakecli.Mode{fakecli.ModeIgnoreSignals, fakecli.ModeGrandchild} {
		t.Run(string(mode), func(t *testing.T) {
			pids := filepath.Join(t.TempDir(), "pids")
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				waitPids(t, pids, map[fakecli.Mode]int{fakecli.ModeIgnoreSignals: 1, fakecli.ModeGrandchild: 3}[mode])
				cancel()
			}()
			res, _, err := fakeRun(t, ctx, mode, Request{}, nil, fakecli.WithPidFile(pids))
			cancel()
			if err != nil || res.Status != StatusCancelled || res.ExitCode != 130 {
				t.Fatalf("%+v %v", res, err)
			}
			assertGone(t, pids)
		})
	}
}

func TestCancelOfAHealthyRunIsCancelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	res, _, err := fakeRun(t, ctx, fakecli.ModeSlow, Request{}, nil, fakecli.WithLineDelay(400*time.Millisecond))
	if err != nil || res.Status != StatusCancelled {
		t.Fatalf("a run we cancelled must end cancelled whatever the CLI says: %+v %v", res, err)
	}
}

// approverFunc adapts a function to Approver.
type approverFunc func(context.Context, ApprovalRequest) (Decision, error)

func (f approverFunc) Approve(ctx context.Context, r ApprovalRequest) (Decision, error) {
	return f(ctx, r)
}

func TestApprovalsWithFakeCLI(t *testing.T) {
	tests := []struct {
		name     string
		approver Approver
		timeout  time.Duration
		want     string // in what the fake read on stdin
	}{
		{"allow", approverFunc(func(context.Context, ApprovalRequest) (Decision, error) { return Decision{Allow: true}, nil }), 0, `"behavior":"allow"`},
		{"deny", approverFunc(func(context.Context, ApprovalRequest) (Decision, error) {
			return Decision{Reason: "not today"}, nil
		}), 0, "the user said: not today"},
		{"deny without a reason", approverFunc(func(context.Context, ApprovalRequest) (Decision, error) {
			return Decision{}, nil
		}), 0, "STOP what you are doing and wait for the user to tell you how to proceed."},
		{"timeout", approverFunc(func(ctx context.Context, _ ApprovalRequest) (Decision, error) {
			<-ctx.Done()
			return Decision{}, ctx.Err()
		}), 200 * time.Millisecond, "did not answer the approval request in time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			record := filepath.Join(t.TempDir(), "stdin")
			path, env := fakecli.Command(fakecli.ModeTool, fakecli.WithRecordFile(record))
			e := New(Options{CLIPath: path, BaseEnv: append(os.Environ(), env...), ApprovalTimeout: max(tt.timeout, 5*time.Second)})
			if tt.timeout > 0 {
				e.opts.ApprovalTimeout = tt.timeout
			}
			var seen ApprovalRequest
			var mu sync.Mutex
			wrapped := approverFunc(func(ctx context.Context, r ApprovalRequest) (Decision, error) {
				mu.Lock()
				seen = r
				mu.Unlock()
				return tt.approver.Approve(ctx, r)
			})
			res, err := e.Run(context.Background(), Request{RunOptions: RunOptions{Approvals: true}, Prompt: "go"}, nil, wrapped)
			if err != nil || res.Status != StatusCompleted {
				t.Fatalf("%+v %v", res, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if seen.ToolName != "Bash" || seen.ApprovalID == "" || seen.ToolUseID != fakecli.ToolUseID {
				t.Errorf("approval request %+v", seen)
			}
			if all := strings.Join(readLines(t, record), "\n"); !strings.Contains(all, tt.want) {
				t.Errorf("CLI stdin lacks %q:\n%s", tt.want, all)
			}
		})
	}
}

func TestHooksConfiguration(t *testing.T) {
	// The hook only makes sure the plan and the user's questions ask; the
	// CLI's own rules ask for the rest.
	if h := hooks(Request{}); len(h) != 1 || h["PreToolUse"][0].Matcher != "^(ExitPlanMode|AskUserQuestion)$" {
		t.Errorf("no approvals: %v", h)
	}
	h := hooks(Request{RunOptions: RunOptions{Approvals: true, StopGitCheck: true}})
	if h["PreToolUse"][0].Matcher != "^(ExitPlanMode|AskUserQuestion)$" || h["Stop"][0].HookCallbackIDs[0] != callbackStopGit {
		t.Errorf("hooks %+v", h)
	}
}

func waitPids(t *testing.T, path string, n int) []int {
	t.Helper()
	var pids []int
	if !poll.Within(10*time.Second, func() bool { pids = readPids(path); return len(pids) >= n }) {
		t.Errorf("pid file %s never had %d pids", path, n)
		return nil
	}
	return pids
}

func readPids(path string) []int {
	b, _ := os.ReadFile(path)
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// assertGone fails if any pid in the file is still a live process.
func assertGone(t *testing.T, path string) {
	t.Helper()
	var alive []int
	if !poll.Within(10*time.Second, func() bool {
		alive = nil
		for _, pid := range readPids(path) {
			if p, err := proc.Lookup(pid); err == nil && proc.Alive(p) {
				alive = append(alive, pid)
			}
		}
		return len(alive) == 0
	}) {
		t.Fatalf("processes outlived the run: %v", alive)
	}
}

func TestInterruptCancelsPendingApprovals(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var approverErr error
	done := make(chan struct{})
	approver := approverFunc(func(actx context.Context, _ ApprovalRequest) (Decision, error) {
		cancel() // the user cancels the run while the approval is pending
		<-actx.Done()
		approverErr = actx.Err()
		close(done)
		return Decision{}, actx.Err()
	})
	res, _, err := fakeRun(t, ctx, fakecli.ModeTool, Request{RunOptions: RunOptions{Approvals: true}}, approver)
	if err != nil || res.Status != StatusCancelled {
		t.Fatalf("%+v %v", res, err)
	}
	select {
	case <-done:
	default:
		t.Fatal("the pending approval was never released")
	}
	if !errors.Is(approverErr, context.Canceled) {
		t.Errorf("approval ended with %v, want context.Canceled", approverErr)
	}
}

func TestConcurrentRunsAreIndependent(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type out struct {
		res *Result
		err error
	}
	slow := make(chan out, 1)
	go func() {
		res, _, err := fakeRun(t, ctx, fakecli.ModeIgnoreSignals, Request{RunID: "slow"}, nil)
		slow <- out{res, err}
	}()
	var wg sync.WaitGroup
	results := make([]*Result, 4)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], _, _ = fakeRun(t, context.Background(), fakecli.ModeNormal,
				Request{RunID: "n" + strconv.Itoa(i)}, nil, fakecli.WithSessionID("session-"+strconv.Itoa(i)))
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.Status != StatusCompleted || r.ConversationID != "session-"+strconv.Itoa(i) {
			t.Errorf("run %d: %+v", i, r)
		}
	}
	cancel()
	if o := <-slow; o.res.Status != StatusCancelled {
		t.Errorf("cancelled run: %+v %v", o.res, o.err)
	}
}

func TestKillLiveLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	path, env := fakecli.Command(fakecli.ModeGrandchild, fakecli.WithPidFile(pids))
	e := New(Options{CLIPath: path, BaseEnv: append(os.Environ(), env...), Registry: &proc.Registry{Dir: filepath.Join(dir, "runs")},
		InterruptGrace: time.Minute, SignalGap: 100 * time.Millisecond})
	done := make(chan *Result, 1)
	go func() {
		res, _ := e.Run(context.Background(), Request{Prompt: "run until killed"}, nil, nil)
		done <- res
	}()
	waitPids(t, pids, 3)
	if n := e.KillLive(); n != 1 {
		t.Errorf("KillLive found %d runs, want 1", n)
	}
	assertGone(t, pids)
	if res := <-done; res.Status != StatusFailed {
		t.Errorf("a killed run fails: %+v", res)
	}
}
