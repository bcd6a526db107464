//go:build unix

package terminal

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/internal/policy"
	"github.com/claude-relay/claude-relay/internal/relay"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// fixedPolicy is a PolicySource that always has the same policy.
type fixedPolicy struct{ p *policy.Policy }

func (f fixedPolicy) Current(context.Context) (*policy.Policy, policy.Source) {
	return f.p, policy.FromBackend
}

func policyRunner(t *testing.T, rules ...policy.Rule) (*runner, *fakeEvents) {
	t.Helper()
	p, err := policy.Compile(rules)
	if err != nil {
		t.Fatal(err)
	}
	ev := &fakeEvents{}
	o := Options{RunID: "run-1", SessionID: "s", InteractionID: "i", Cwd: "/work/proj", Events: ev, Policy: fixedPolicy{p}}
	r := &runner{o: o, res: &Result{}, seen: map[string]struct{}{}}
	r.rec = relay.NewLifecycle(ev, nil, relay.Frame{RunID: o.RunID, SessionID: o.SessionID, InteractionID: o.InteractionID}, nil)
	return r, ev
}

func preToolUse(id, cmd string) []byte {
	b, _ := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "session_id": "c", "tool_name": "Bash",
		"tool_use_id": id, "tool_input": map[string]any{"command": cmd}})
	return b
}

// hookAnswer is the part of the answer the CLI reads.
type hookAnswer struct {
	HookSpecificOutput *struct {
		HookEventName            string `json:"hookEventName"`
		PermissionDecision       string `json:"permissionDecision"`
		PermissionDecisionReason string `json:"permissionDecisionReason"`
	} `json:"hookSpecificOutput"`
}

func decisions(t *testing.T, ev *fakeEvents) []wire.PolicyDecision {
	t.Helper()
	var out []wire.PolicyDecision
	for _, e := range ev.all() {
		if e.Type != wire.TypePolicyDecision {
			continue
		}
		var d wire.PolicyDecision
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatalf("%s: %v", e.Data, err)
		}
		out = append(out, d)
	}
	return out
}

func TestTerminalPolicyAnswer(t *testing.T) {
	rules := []policy.Rule{
		{Rule: "Bash(rm *)", Effect: policy.Deny, Reason: "victims stay"},
		{Rule: "Bash(git push *)", Effect: policy.Ask, Approver: policy.Dashboard},
		{Rule: "Bash(git *)", Effect: policy.Ask},
		{Rule: "Bash(echo *)", Effect: policy.Allow},
	}
	for _, tc := range []struct {
		cmd, decision, reason string // reason: a part of it
		outcome               string
		by                    wire.By
	}{
		{"rm victim", "deny", "Denied by the team's central policy (rule Bash(rm *)): victims stay.", "deny", wire.ByPolicy},
		{"git push origin", "deny", "Only the dashboard may approve this call", "deny", wire.ByPolicy},
		{"git status", "ask", "the central policy asks: Bash(git *)", "", ""},
		{"echo hi", "allow", "Bash(echo *)", "allow", wire.ByPolicy},
		{"ls", "", "", "", ""},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			r, ev := policyRunner(t, rules...)
			got := r.onHook(context.Background(), "PreToolUse", preToolUse("tu1", tc.cmd))
			var a hookAnswer
			if got != nil {
				b, _ := json.Marshal(got)
				json.Unmarshal(b, &a) //nolint:errcheck // checked below
			}
			switch {
			case tc.decision == "" && got != nil:
				t.Errorf("answer %+v, want none: no rule matches", got)
			case tc.decision != "" && (a.HookSpecificOutput == nil || a.HookSpecificOutput.HookEventName != "PreToolUse" ||
				a.HookSpecificOutput.PermissionDecision != tc.decision || !strings.Contains(a.HookSpecificOutput.PermissionDecisionReason, tc.reason)):
				t.Errorf("answer %+v, want %s with a reason containing %q", a.HookSpecificOutput, tc.decision, tc.reason)
			}
			ds := decisions(t, ev)
			if tc.outcome == "" {
				if len(ds) != 0 {
					t.Errorf("decisions %+v, want none yet", ds)
				}
				return
			}
			if len(ds) != 1 || ds[0].Outcome != tc.outcome || ds[0].DecidedBy != tc.by || ds[0].RunID != "run-1" ||
				ds[0].ToolUseID != "tu1" || ds[0].InputSHA256 == "" || ds[0].Source != "backend" {
				t.Errorf("decisions %+v, want one %s by %s", ds, tc.outcome, tc.by)
			}
		})
	}
}

// An ask is recorded once the CLI shows how the person answered it.
func TestTerminalPolicyAskOutcome(t *testing.T) {
	rule := policy.Rule{Rule: "Bash(git *)", Effect: policy.Ask}
	ctx := context.Background()

	r, ev := policyRunner(t, rule)
	r.onHook(ctx, "PreToolUse", preToolUse("tu1", "git status"))
	r.onHook(ctx, "PostToolUse", []byte(`{"hook_event_name":"PostToolUse","tool_use_id":"tu1"}`))
	r.onHook(ctx, "Stop", []byte(`{"hook_event_name":"Stop"}`))
	if ds := decisions(t, ev); len(ds) != 1 || ds[0].Outcome != "allow" || ds[0].DecidedBy != wire.ByTTY || ds[0].Effect != "ask" {
		t.Errorf("run after the prompt: %+v, want one allow by tty", ds)
	}

	r, ev = policyRunner(t, rule)
	r.onHook(ctx, "PreToolUse", preToolUse("tu2", "git status"))
	r.onHook(ctx, "UserPromptSubmit", []byte(`{"hook_event_name":"UserPromptSubmit","prompt":"no"}`))
	r.onHook(ctx, "Stop", []byte(`{"hook_event_name":"Stop"}`))
	if ds := decisions(t, ev); len(ds) != 1 || ds[0].Outcome != "deny" || ds[0].DecidedBy != wire.ByTTY {
		t.Errorf("refused at the prompt: %+v, want one deny by tty", ds)
	}

	r, ev = policyRunner(t, rule)
	r.onHook(ctx, "PreToolUse", preToolUse("tu3", "git status"))
	r.endAsks(wire.ByCancelled)
	if ds := decisions(t, ev); len(ds) != 1 || ds[0].Outcome != "deny" || ds[0].DecidedBy != wire.ByCancelled {
		t.Errorf("the CLI ended first: %+v, want one deny by cancelled", ds)
	}
}

// The hook relays the server's answer, and refuses the call when there is
// none to relay.
func TestPolicyHook(t *testing.T) {
	const answer = `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}`
	var got []byte
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = readAll(r)
		w.Write([]byte(answer)) //nolint:errcheck
	}))
	defer ok.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "gone", http.StatusNotFound)
	}))
	defer failing.Close()
	garbled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("{}}")) //nolint:errcheck
	}))
	defer garbled.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/hook/x"
	ln.Close()

	const in = `{"hook_event_name":"PreToolUse","tool_name":"Bash"}`
	var out, errb bytes.Buffer
	if code := PolicyHook(context.Background(), ok.URL+"/hook/x", strings.NewReader(in), &out, &errb); code != 0 || out.String() != answer || errb.Len() != 0 {
		t.Errorf("answered: exit %d, stdout %q, stderr %q; want 0 and the answer", code, out.String(), errb.String())
	}
	if string(got) != in {
		t.Errorf("posted %q, want the hook input", got)
	}
	_, port, _ := net.SplitHostPort(ok.Listener.Addr().String())
	for name, url := range map[string]string{
		"closed port":    closed,
		"404":            failing.URL + "/hook/x",
		"not JSON":       garbled.URL + "/hook/x",
		"not 127.0.0.1":  "http://localhost:" + port + "/hook/x",
		"not even a URL": "http://127.0.0.1:%zz",
	} {
		t.Run(name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := PolicyHook(context.Background(), url, strings.NewReader(in), &out, &errb)
			if code != ExitBlock || out.Len() != 0 || !strings.Contains(errb.String(), "so it is refused") {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d and the refusal", code, out.String(), errb.String(), ExitBlock)
			}
		})
	}
}

func readAll(r *http.Request) []byte {
	var b bytes.Buffer
	b.ReadFrom(r.Body) //nolint:errcheck
	return b.Bytes()
}
