package executor

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
)

// askLog records what an Approver was asked and answers with decide.
type askLog struct {
	mu     sync.Mutex
	asked  []ApprovalRequest
	decide func(n int, r ApprovalRequest) Decision
}

func (a *askLog) Approve(_ context.Context, r ApprovalRequest) (Decision, error) {
	a.mu.Lock()
	a.asked = append(a.asked, r)
	n := len(a.asked)
	a.mu.Unlock()
	return a.decide(n, r), nil
}

func (a *askLog) tools() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, r := range a.asked {
		out = append(out, r.ToolName)
	}
	return out
}

func bash(command string) mockapi.Turn {
	return mockapi.ToolTurn("Bash", map[string]any{"command": command, "description": "Run it"})
}

// allow_always applies the CLI's suggestion ("npm test *") for the rest of
// the run: the same command and one the rule matches run without asking,
// another command still asks, and no settings file is written.
func TestRealAllowAlwaysAppliesSuggestions(t *testing.T) {
	env := newRealEnv(t, mockapi.Script{
		bash("npm test"), bash("npm test"), bash("npm test --silent"), bash("touch other.txt"), mockapi.TextTurn("done"),
	}, nil)
	pkg := `{"name":"t","version":"1.0.0","scripts":{"test":"echo tested-ok"}}`
	if err := os.WriteFile(filepath.Join(env.cwd, "package.json"), []byte(pkg), 0o644); err != nil {
		t.Fatal(err)
	}
	log := &askLog{decide: func(n int, r ApprovalRequest) Decision {
		if n == 1 {
			return Decision{Allow: true, Always: true}
		}
		return Decision{Reason: "not that one"}
	}}
	res, _ := env.run(t, Request{RunOptions: RunOptions{Approvals: true, MaxTurns: 8}, Prompt: "test it"}, log)
	if res.Status != StatusCompleted {
		t.Fatalf("result %+v", res)
	}
	if got := log.tools(); len(got) != 2 {
		t.Fatalf("asked %v, want npm test once and touch once", got)
	}
	log.mu.Lock()
	first, second := log.asked[0], log.asked[1]
	log.mu.Unlock()
	if !strings.Contains(string(first.Suggestions), "npm test") || !strings.Contains(string(second.Input), "touch other.txt") {
		t.Errorf("asked %s (suggestions %s), then %s", first.Input, first.Suggestions, second.Input)
	}
	results := env.api.ToolResults()
	if len(results) != 4 {
		t.Fatalf("tool results %+v", results)
	}
	for i, tr := range results[:3] {
		if !strings.Contains(tr.Content, "tested-ok") {
			t.Errorf("npm test #%d: %+v", i+1, tr)
		}
	}
	if !results[3].IsError || !strings.Contains(results[3].Content, "not that one") {
		t.Errorf("the other command: %+v", results[3])
	}
	// Granted for the session, not written to the project's settings.
	if _, err := os.Stat(filepath.Join(env.cwd, ".claude", "settings.local.json")); !os.IsNotExist(err) {
		t.Errorf("a settings file was written: %v", err)
	}
}

// updated_input: the tool runs with the user's edit, and its output is what
// the model receives.
func TestRealUpdatedInputRunsTheEdit(t *testing.T) {
	env := newRealEnv(t, mockapi.Script{bash("echo original > out.txt"), mockapi.TextTurn("done")}, nil)
	edited := json.RawMessage(`{"command":"echo edited-by-user","description":"Run it"}`)
	log := &askLog{decide: func(int, ApprovalRequest) Decision { return Decision{Allow: true, UpdatedInput: edited} }}
	res, _ := env.run(t, Request{RunOptions: RunOptions{Approvals: true}, Prompt: "run it"}, log)
	if res.Status != StatusCompleted {
		t.Fatalf("result %+v", res)
	}
	results := env.api.ToolResults()
	if len(results) != 1 || results[0].IsError || !strings.Contains(results[0].Content, "edited-by-user") {
		t.Errorf("tool results %+v", results)
	}
	if _, err := os.Stat(filepath.Join(env.cwd, "out.txt")); !os.IsNotExist(err) {
		t.Errorf("the original command ran: %v", err)
	}
}

// A question always reaches the Approver, approvals or not, and its answers
// are the tool's answer.
func TestRealQuestionAnswers(t *testing.T) {
	question := map[string]any{"questions": []any{map[string]any{
		"question": "Which color?", "header": "Color", "multiSelect": false,
		"options": []any{map[string]any{"label": "Red", "description": "warm"}, map[string]any{"label": "Blue", "description": "cool"}},
	}}}
	env := newRealEnv(t, mockapi.Script{mockapi.ToolTurn("AskUserQuestion", question), mockapi.TextTurn("Blue it is.")}, nil)
	log := &askLog{decide: func(int, ApprovalRequest) Decision {
		return Decision{Allow: true, Answers: map[string]string{"Which color?": "Blue"}}
	}}
	res, _ := env.run(t, Request{Prompt: "ask me"}, log)
	if res.Status != StatusCompleted {
		t.Fatalf("result %+v", res)
	}
	if got := log.tools(); len(got) != 1 || got[0] != "AskUserQuestion" {
		t.Fatalf("asked %v", got)
	}
	results := env.api.ToolResults()
	if len(results) != 1 || results[0].IsError || !strings.Contains(results[0].Content, `"Which color?"="Blue"`) {
		t.Errorf("tool results %+v", results)
	}
}

// A plan always asks, approvals or not; each of the three answers does what
// it says.
func TestRealPlanOptions(t *testing.T) {
	tests := []struct {
		name       string
		decide     func(n int, r ApprovalRequest) Decision
		wantAsked  []string
		wantMode   streamjson.PermissionMode
		wantResult string // in the ExitPlanMode tool_result the model received
	}{
		{"accept_edits", func(int, ApprovalRequest) Decision {
			return Decision{Allow: true, Mode: streamjson.PermissionModeAcceptEdits}
		}, []string{"ExitPlanMode"}, streamjson.PermissionModeAcceptEdits, ""},
		// "Ask for each edit": the write after the plan asks, though the
		// run started without approvals.
		{"default", func(int, ApprovalRequest) Decision {
			return Decision{Allow: true, Mode: streamjson.PermissionModeDefault}
		}, []string{"ExitPlanMode", "Write"}, streamjson.PermissionModeDefault, ""},
		{"keep_planning", func(n int, _ ApprovalRequest) Decision {
			if n == 1 {
				return Decision{Reason: "add a test step first"}
			}
			return Decision{Allow: true, Mode: streamjson.PermissionModeAcceptEdits}
		}, []string{"ExitPlanMode", "ExitPlanMode"}, streamjson.PermissionModeAcceptEdits, "add a test step first"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.txt")
			script := mockapi.Script{mockapi.ToolTurn("ExitPlanMode", map[string]any{"plan": "Write out.txt"})}
			if tt.wantResult != "" {
				script = append(script, mockapi.ToolTurn("ExitPlanMode", map[string]any{"plan": "Test, then write out.txt"}))
			}
			script = append(script, mockapi.ToolTurn("Write", map[string]any{"file_path": out, "content": "planned\n"}), mockapi.TextTurn("done"))
			env := newRealEnv(t, script, nil)
			log := &askLog{decide: tt.decide}
			res, rec := env.run(t, Request{RunOptions: RunOptions{PermissionMode: streamjson.PermissionModePlan}, Prompt: "plan it"}, log)
			if res.Status != StatusCompleted {
				t.Fatalf("result %+v", res)
			}
			if got := log.tools(); strings.Join(got, ",") != strings.Join(tt.wantAsked, ",") {
				t.Errorf("asked %v, want %v", got, tt.wantAsked)
			}
			// The CLI asks with the plan's input empty; the request has the
			// model's plan.
			if plan := string(log.asked[0].Input); !strings.Contains(plan, "Write out.txt") {
				t.Errorf("the plan asked about: %s", plan)
			}
			if _, err := os.Stat(out); err != nil {
				t.Errorf("the write after the plan: %v", err)
			}
			changed := rec.kinds(EventModeChanged)
			if len(changed) != 1 || changed[0].Mode != tt.wantMode {
				t.Errorf("mode changes %+v, want one to %s", changed, tt.wantMode)
			}
			if tt.wantResult != "" {
				first := env.api.ToolResults()[0]
				if !first.IsError || !strings.Contains(first.Content, tt.wantResult) {
					t.Errorf("the model heard %+v", first)
				}
			}
		})
	}
}

// A deny with interrupt stops the turn: the model gets no further request,
// and the run ends cancelled, saying why.
func TestRealDenyWithInterrupt(t *testing.T) {
	env := newRealEnv(t, mockapi.Script{bash("touch never.txt"), mockapi.TextTurn("should not be asked")}, nil)
	log := &askLog{decide: func(int, ApprovalRequest) Decision { return Decision{Reason: "stop here", Interrupt: true} }}
	res, _ := env.run(t, Request{RunOptions: RunOptions{Approvals: true}, Prompt: "touch it"}, log)
	if res.Status != StatusCancelled || !strings.Contains(res.Reason, "Bash was denied and the turn stopped") {
		t.Fatalf("result %+v", res)
	}
	if n := len(env.api.ToolResults()); n != 0 {
		t.Errorf("the model was asked again with %d tool results", n)
	}
	if _, err := os.Stat(filepath.Join(env.cwd, "never.txt")); !os.IsNotExist(err) {
		t.Errorf("the denied command ran: %v", err)
	}
}

// In a live run a deny with interrupt stops the turn only: the turn ends
// cancelled saying why, and the next message runs.
func TestRealLiveDenyWithInterruptKeepsTheRun(t *testing.T) {
	env := newRealEnv(t, mockapi.Script{bash("touch never.txt"), mockapi.TextTurn("next turn ran")}, nil)
	log := &askLog{decide: func(int, ApprovalRequest) Decision { return Decision{Reason: "stop here", Interrupt: true} }}
	lr := startLiveWith(t, env, Request{RunOptions: RunOptions{Approvals: true, KeepAlive: true}, RunID: "live-deny", Prompt: "touch it"}, log)
	first := lr.turn(1)
	if first.TurnResult.Status != StatusInterrupted || !strings.Contains(first.TurnResult.Reason, "Bash was denied and the turn stopped") {
		t.Errorf("turn 1 %+v", first.TurnResult)
	}
	if err := lr.send("go on"); err != nil {
		t.Fatal(err)
	}
	if second := lr.turn(2); second.TurnResult.Status != StatusCompleted || second.TurnResult.Stdout != "next turn ran" {
		t.Errorf("turn 2 %+v", second.TurnResult)
	}
	if err := lr.input(Input{Kind: InputEnd}); err != nil {
		t.Fatal(err)
	}
	if res, err := lr.wait(); err != nil || res.Status != StatusCompleted {
		t.Errorf("result %+v, %v", res, err)
	}
}
