package executor

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/proc"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
)

// realEnv is the real pinned CLI against a scripted Messages API.
type realEnv struct {
	cli *realcli.CLI
	api *mockapi.Server
	cwd string
	e   *Executor
}

func newRealEnv(t *testing.T, script mockapi.Script, tune func(*Options)) *realEnv {
	t.Helper()
	cli := realcli.RealCLI(t)
	api := mockapi.New(t, script)
	cwd := t.TempDir()
	cli.TrustDir(cwd)
	opts := Options{CLIPath: cli.Path, BaseEnv: cli.Env(t, api.URL()), SignalGap: 500 * time.Millisecond, InterruptGrace: 2 * time.Second}
	if tune != nil {
		tune(&opts)
	}
	return &realEnv{cli: cli, api: api, cwd: cwd, e: New(opts)}
}

func (r *realEnv) run(t *testing.T, req Request, approver Approver) (*Result, *recorder) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req.Cwd = r.cwd
	if req.MaxTurns == 0 {
		req.MaxTurns = 6
	}
	rec := &recorder{}
	res, err := r.e.Run(ctx, req, rec, approver)
	if err != nil {
		t.Logf("run error: %v; stderr: %s", err, res.StderrTail)
	}
	return res, rec
}

func TestRealBashTurnAsRootWithoutApprovals(t *testing.T) {
	env := newRealEnv(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo relay-$((40+2))", "description": "Compute the answer"}),
		mockapi.TextTurn("The answer is 42."),
	}, nil)
	res, rec := env.run(t, Request{Prompt: "compute"}, nil)
	if res.Status != StatusCompleted || res.ExitCode != 0 || res.Stdout != "The answer is 42." {
		t.Fatalf("result %+v", res)
	}
	var toolOut string
	for _, e := range rec.kinds(EventLine) {
		if e.Message.User != nil {
			for _, tr := range e.Message.User.ToolResults() {
				toolOut += tr.Parse().Text
			}
		}
	}
	if !strings.Contains(toolOut, "relay-42") {
		t.Errorf("tool result %q", toolOut)
	}
	if res.ConversationID == "" || !res.HasUsage || res.Usage.OutputTokens == 0 || res.NumTurns < 2 {
		t.Errorf("conversation/usage: %+v", res)
	}
	// The conversation ID is the session_id of the first non-system line.
	for _, e := range rec.kinds(EventLine) {
		if id, ok := streamjson.ConversationID(e.Message); ok {
			if id != res.ConversationID {
				t.Errorf("conversation ID %s, first line says %s", res.ConversationID, id)
			}
			break
		}
	}
}

func TestRealApprovals(t *testing.T) {
	writeTurn := func(dir string) mockapi.Turn {
		return mockapi.ToolTurn("Write", map[string]any{"file_path": filepath.Join(dir, "out.txt"), "content": "written\n"})
	}
	allow := approverFunc(func(context.Context, ApprovalRequest) (Decision, error) { return Decision{Allow: true}, nil })
	deny := approverFunc(func(context.Context, ApprovalRequest) (Decision, error) {
		return Decision{Reason: "no writes today"}, nil
	})
	hang := approverFunc(func(ctx context.Context, _ ApprovalRequest) (Decision, error) {
		<-ctx.Done()
		return Decision{}, ctx.Err()
	})
	tests := []struct {
		name       string
		approver   Approver
		wantFile   bool
		wantResult string // in the tool_result the model received
		wantStatus Status
	}{
		{"allow", allow, true, "", StatusCompleted},
		{"deny", deny, false, "no writes today", StatusCompleted},
		// A timed-out approval also stops the turn (so no request tells the
		// model), and the run says why.
		{"timeout", hang, false, "", StatusFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			env := newRealEnv(t, mockapi.Script{writeTurn(dir), mockapi.TextTurn("ok")},
				func(o *Options) { o.ApprovalTimeout = time.Second })
			var asked []ApprovalRequest
			var mu sync.Mutex
			res, _ := env.run(t, Request{RunOptions: RunOptions{Approvals: true}, Prompt: "write"}, approverFunc(func(ctx context.Context, r ApprovalRequest) (Decision, error) {
				mu.Lock()
				asked = append(asked, r)
				mu.Unlock()
				return tt.approver.Approve(ctx, r)
			}))
			if res.Status != tt.wantStatus {
				t.Fatalf("result %+v", res)
			}
			if tt.wantStatus == StatusFailed && !strings.Contains(res.Reason, "nobody answered the approval for Write within 1s") {
				t.Errorf("reason %q", res.Reason)
			}
			mu.Lock()
			if len(asked) != 1 || asked[0].ToolName != "Write" || asked[0].ToolUseID == "" {
				t.Errorf("approvals asked: %+v", asked)
			}
			mu.Unlock()
			_, err := os.Stat(filepath.Join(dir, "out.txt"))
			if (err == nil) != tt.wantFile {
				t.Errorf("file written = %v, want %v", err == nil, tt.wantFile)
			}
			if tt.wantResult != "" {
				var found bool
				for _, tr := range env.api.ToolResults() {
					found = found || (tr.IsError && strings.Contains(tr.Content, tt.wantResult))
				}
				if !found {
					t.Errorf("the model never heard %q: %+v", tt.wantResult, env.api.ToolResults())
				}
			}
		})
	}
}

func TestRealExitPlanModeSwitchesMode(t *testing.T) {
	dir := t.TempDir()
	env := newRealEnv(t, mockapi.Script{
		mockapi.ToolTurn("ExitPlanMode", map[string]any{"plan": "Write out.txt"}),
		mockapi.ToolTurn("Write", map[string]any{"file_path": filepath.Join(dir, "out.txt"), "content": "planned\n"}),
		mockapi.TextTurn("done"),
	}, nil)
	var asked []string
	var mu sync.Mutex
	res, rec := env.run(t, Request{RunOptions: RunOptions{PermissionMode: streamjson.PermissionModePlan, Approvals: true}, Prompt: "plan it"},
		approverFunc(func(_ context.Context, r ApprovalRequest) (Decision, error) {
			mu.Lock()
			asked = append(asked, r.ToolName)
			mu.Unlock()
			return Decision{Allow: true}, nil
		}))
	if res.Status != StatusCompleted {
		t.Fatalf("result %+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) == 0 || asked[0] != "ExitPlanMode" {
		t.Fatalf("approvals asked %v", asked)
	}
	if _, err := os.Stat(filepath.Join(dir, "out.txt")); err != nil {
		t.Errorf("after the plan was approved the write should run: %v (asked %v)", err, asked)
		for _, e := range rec.kinds(EventLine) {
			t.Logf("%s", e.Line)
		}
	}
}

func TestRealResumeAndFork(t *testing.T) {
	env := newRealEnv(t, mockapi.Script{mockapi.TextTurn("first answer"), mockapi.TextTurn("second answer"), mockapi.TextTurn("third answer")}, nil)
	first, _ := env.run(t, Request{Prompt: "remember the word pelican"}, nil)
	if first.Status != StatusCompleted || first.ConversationID == "" {
		t.Fatalf("first run %+v", first)
	}
	resumed, _ := env.run(t, Request{RunOptions: RunOptions{Resume: first.ConversationID}, Prompt: "what was the word?"}, nil)
	if resumed.Status != StatusCompleted || resumed.ConversationID != first.ConversationID || resumed.Stdout != "second answer" {
		t.Fatalf("resumed run %+v", resumed)
	}
	last, ok := env.api.LastMainRequest()
	if !ok || !strings.Contains(string(last.Body), "remember the word pelican") {
		t.Errorf("the resumed run did not send the earlier history")
	}
	forked, _ := env.run(t, Request{RunOptions: RunOptions{Resume: first.ConversationID, Fork: true}, Prompt: "fork it"}, nil)
	if forked.Status != StatusCompleted || forked.ConversationID == "" || forked.ConversationID == first.ConversationID {
		t.Fatalf("fork should yield a new conversation ID: %+v (first %s)", forked, first.ConversationID)
	}
}

func TestRealCancelLeavesNoProcess(t *testing.T) {
	env := newRealEnv(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo start && sleep 300", "description": "Wait a long time"}),
		mockapi.TextTurn("never"),
	}, nil)
	runID := "cancel-" + strings.ReplaceAll(t.Name(), "/", "-")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan *Result, 1)
	go func() {
		res, _ := env.e.Run(ctx, Request{RunOptions: RunOptions{Cwd: env.cwd, MaxTurns: 4}, RunID: runID, Prompt: "wait"}, nil, nil)
		done <- res
	}()
	// Wait until the tool's sleep runs, in its own session, carrying our marker.
	poll.Until(t, 60*time.Second, "the Bash tool to start sleep 300", func() bool { return sleeping(runID) })
	cancelled := time.Now()
	cancel()
	res := <-done
	if res.Status != StatusCancelled || res.ExitCode != 130 {
		t.Errorf("result %+v", res)
	}
	var left []proc.Proc
	if !poll.Within(10*time.Second-time.Since(cancelled), func() bool {
		left, _ = proc.FindMarked(runID)
		return len(left) == 0
	}) {
		t.Fatalf("processes outlived the cancel by 10s: %+v", left)
	}
	t.Logf("tree gone %v after cancel", time.Since(cancelled).Round(time.Millisecond))
}

// sleeping reports whether a marked process of the run is running sleep.
func sleeping(runID string) bool {
	ps, _ := proc.FindMarked(runID)
	for _, p := range ps {
		if b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.PID), "cmdline")); err == nil && strings.Contains(string(b), "sleep") {
			return true
		}
	}
	return false
}

func TestRealRateLimitEndsAsCompletionWithNotice(t *testing.T) {
	env := newRealEnv(t, mockapi.Script{
		{Fail: &mockapi.Failure{Status: 429, Times: -1, RetryAfter: 10 * time.Millisecond, Message: "Number of request tokens has exceeded your per-minute rate limit"}},
	}, func(o *Options) { o.Env = map[string]string{"CLAUDE_CODE_MAX_RETRIES": "1"} })
	res, rec := env.run(t, Request{Prompt: "hi"}, nil)
	if res.Status != StatusCompleted || res.ExitCode != 0 || res.LimitNotice == "" {
		t.Fatalf("a rate limit must end as a completion with a notice: %+v", res)
	}
	if len(rec.kinds(EventLimitNotice)) != 1 {
		t.Errorf("limit notice events: %d", len(rec.kinds(EventLimitNotice)))
	}
}
