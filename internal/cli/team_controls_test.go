package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/extension"
	"github.com/claude-relay/claude-relay/internal/billing"
	"github.com/claude-relay/claude-relay/internal/server/audit"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// TestTeamControlsAudited (issue 26): the real CLI on the scripted API, one
// real serve with a central policy, a budget and an audit token. A policy
// deny refuses `rm` (the file survives); a run over its project's $0.01
// cap is stopped by the CLI's own budget and the next one is refused
// before it starts; a run billed to ANTHROPIC_API_KEY under claude.billing
// subscription is refused before the API hears of it. GET /api/audit, read
// with the audit token, lists the policy decision, the budget stop and the
// billing refusal in that order, each with its session, project, machine
// and time, and `claude-relay audit export` writes the same bytes.
func TestTeamControlsAudited(t *testing.T) {
	t.Parallel()
	cli := realcli.RealCLI(t)
	const helperTok = "team-helper-token-3c9e7a1f"
	toks, _ := json.Marshal([]map[string]any{
		{"token": helperTok, "name": "helper", "scopes": []string{"ingest", "decisions"}},
		{"token": auditTok, "name": "siem", "scopes": []string{"audit"}},
	})
	serveHome := t.TempDir()
	url := startServe(t, []string{"HOME=" + serveHome, "PATH=" + os.Getenv("PATH"), "CLAUDE_RELAY_SERVE_TOKENS=" + string(toks),
		"CLAUDE_RELAY_SERVE_POLICY=" + denyRm,
		`CLAUDE_RELAY_SERVE_BUDGETS=[{"project":"budget-proj","period":"day","usd":0.01}]`}, serveHome, "")
	env := func(api *mockapi.Server, extra ...string) []string {
		return helperEnv(t, cli, api, append([]string{"CLAUDE_RELAY_BACKEND_URL=" + url, "CLAUDE_RELAY_BACKEND_TOKEN=" + helperTok}, extra...)...)
	}
	project := func(name string) string {
		d := filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		cli.TrustDir(d)
		return d
	}

	// 1. The policy: rm is denied even in bypassPermissions; the run goes on.
	polCwd := project("policy-proj")
	polAPI := mockapi.New(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "rm -f keep.txt", "description": "Remove"}),
		mockapi.TextTurn("done"),
	})
	p := startExtension(t, polCwd, env(polAPI))
	p.waitFor("ready", func(ev extension.Event) bool { return ev.Event == extension.EventReady })
	runDenied(t, p, polAPI, polCwd, "team-policy", streamjson.PermissionModeBypassPermissions)
	p.shutdownOK()

	// 2. The budget: the CLI's own budget stops the first run, the backend
	// refuses the second before the CLI starts.
	budCwd := project("budget-proj")
	budAPI := mockapi.New(t, budgetScript())
	stdout, stderr, code := runMain(t, env(budAPI), "run", "--cwd", budCwd, "--max-turns", "4", "use the tool")
	if out := stdout + stderr; code != 1 || !strings.Contains(out, "Maximum budget reached") {
		t.Fatalf("the budgeted run: exit %d, output:\n%s\nwant exit 1 with the CLI's budget stop", code, out)
	}
	_, stderr, code = runMain(t, env(budAPI), "run", "--cwd", budCwd, "--max-turns", "4", "use the tool")
	if code != exitBudget || !strings.Contains(stderr, "budget exhausted") {
		t.Fatalf("the run after the cap: exit %d, want %d; stderr:\n%s", code, exitBudget, stderr)
	}
	if n := len(budAPI.MainRequests()); n != 1 {
		t.Errorf("the API got %d requests; the budget should have allowed one response and refused the second run", n)
	}

	// 3. The billing guard: ANTHROPIC_API_KEY (the isolated CLI's) under
	// claude.billing subscription.
	billCwd := project("billing-proj")
	billAPI := mockapi.New(t, mockapi.Script{mockapi.TextTurn("should not be asked")})
	stdout, stderr, code = runMain(t, env(billAPI, "CLAUDE_RELAY_CLAUDE_BILLING=subscription"), "run", "--cwd", billCwd, "--max-turns", "2", "hello")
	if code != billing.ExitStatus || !strings.Contains(stdout, "! billing_refused: billing guard: the Claude CLI would bill this run to API key ANTHROPIC_API_KEY") {
		t.Fatalf("the run billed to an API key: exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, billing.ExitStatus, stdout, stderr)
	}
	if n := len(billAPI.Requests()); n != 0 {
		t.Errorf("the billing guard let %d requests reach the API", n)
	}

	// The trail: every helper drained before it exited, so the three runs'
	// ends are there (the wait covers serve's ingest, not the helpers').
	var body []byte
	var recs []audit.Record
	poll.Until(t, 30*time.Second, "the trail to hold the three runs' ends", func() bool {
		var code int
		code, body = auditBody(t, url, auditTok)
		if code != http.StatusOK {
			return false
		}
		recs = parseRecords(t, body)
		ends := 0
		for _, r := range recs {
			if strings.HasPrefix(r.Type, "relay.run_") {
				ends++
			}
		}
		return ends == 3
	})
	host, _ := os.Hostname()
	projects := map[string]string{polCwd: "policy", budCwd: "budget", billCwd: "billing"}
	var got []string
	sessions := map[string]string{} // project label → session
	last := 0
	for _, r := range recs {
		label := projects[r.Project]
		line := label + " " + r.Type
		switch r.Type {
		case wire.TypePolicyDecision:
			var d wire.PolicyDecision
			if err := json.Unmarshal(r.Data, &d); err != nil {
				t.Errorf("policy decision data %s: %v", r.Data, err)
			}
			line += " " + d.Effect + " " + d.Rule
		case wire.TypeBillingRefused:
			var d wire.Billing
			if err := json.Unmarshal(r.Data, &d); err != nil {
				t.Errorf("billing data %s: %v", r.Data, err)
			}
			line += " " + d.Policy
		case wire.TypeRunFailed, wire.TypeRunCompleted:
			line += " " + r.Status
			if label == "budget" && !strings.Contains(r.Reason, "Maximum budget reached") {
				t.Errorf("the budget stop's reason %q does not name the budget", r.Reason)
			}
		}
		got = append(got, line)
		if s, ok := sessions[label]; ok && s != r.SessionID {
			t.Errorf("%s: records of two sessions, %s and %s", r.Type, s, r.SessionID)
		}
		sessions[label] = r.SessionID
		if label == "" || r.SessionID == "" || r.Machine != host || r.ReceivedAt.IsZero() || r.Timestamp.IsZero() {
			t.Errorf("record %s: session %q project %q machine %q (want %q) received %v at %v",
				r.Type, r.SessionID, r.Project, r.Machine, host, r.ReceivedAt, r.Timestamp)
		}
		// The trail's order is the backend's ingest order.
		if c, err := strconv.Atoi(r.Cursor); err != nil || c <= last {
			t.Errorf("record %s: cursor %q after %d", r.Type, r.Cursor, last)
		} else {
			last = c
		}
	}
	want := []string{
		"policy relay.policy_decision deny Bash(rm *)", "policy relay.run_completed completed",
		"budget relay.run_failed failed",
		"billing relay.billing_refused subscription", "billing relay.run_failed failed",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the trail:\n%s\nwant:\n%s\n\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), body)
	}
	if sessions["policy"] != "sess-team-policy" {
		t.Errorf("the policy decision's session %q, want sess-team-policy", sessions["policy"])
	}

	out := filepath.Join(t.TempDir(), "audit.jsonl")
	cmd := exec.Command(os.Args[0], "audit", "export", "--out", out)
	cmd.Env = append(env(billAPI), "CLAUDE_RELAY_AUDIT_TOKEN="+auditTok)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("audit export: %v: %s", err, b)
	}
	if exported, err := os.ReadFile(out); err != nil || !bytes.Equal(exported, body) {
		t.Errorf("audit export wrote (%v)\n%s\nthe API answered\n%s", err, exported, body)
	}
}
