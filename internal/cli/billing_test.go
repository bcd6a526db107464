package cli

import (
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/internal/billing"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
)

// refusedByBilling runs the command args with ANTHROPIC_API_KEY set (the
// real CLI on the scripted API) and claude.billing subscription, posting
// to a recording backend.
func refusedByBilling(t *testing.T, args ...string) (*recordingBackend, *mockapi.Server, int, *strings.Builder, *strings.Builder) {
	t.Helper()
	cli := realcli.RealCLI(t)
	api := mockapi.New(t, mockapi.Script{mockapi.TextTurn("should not be asked")})
	be := &recordingBackend{}
	srv := httptest.NewServer(be)
	t.Cleanup(srv.Close)
	cwd := t.TempDir()
	cli.TrustDir(cwd)
	env := map[string]string{"HOME": t.TempDir(), "CLAUDE_RELAY_BACKEND_URL": srv.URL, "CLAUDE_RELAY_CLAUDE_PATH": cli.Path,
		"PATH": os.Getenv("PATH"), "CLAUDE_RELAY_CLAUDE_BILLING": "subscription"}
	code, out, errb := runApp(t, env, cli.Env(t, api.URL()), cwd, args...)
	return be, api, code, out, errb
}

// `claude-relay run` with ANTHROPIC_API_KEY set and claude.billing
// subscription: the run stops before the scripted API gets a request, exits
// with billing.ExitStatus saying which credential it found, and the backend
// gets relay.billing_source, relay.billing_refused and relay.run_failed.
func TestRunBillingGuard(t *testing.T) {
	be, api, code, out, errb := refusedByBilling(t, "run", "--max-turns=2", "hello")
	t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	if n := len(api.Requests()); n != 0 {
		t.Fatalf("the scripted API got %d requests", n)
	}
	all := out.String() + errb.String()
	if code != billing.ExitStatus || !strings.Contains(all, "API key ANTHROPIC_API_KEY") || !strings.Contains(all, "claude.billing is subscription") {
		t.Fatalf("exit %d", code)
	}
	if strings.Contains(all, realcli.APIKey) {
		t.Errorf("the key's value is in the output")
	}
	be.mu.Lock()
	defer be.mu.Unlock()
	var types []string
	for _, e := range be.events {
		types = append(types, e["event_type"].(string))
	}
	if got := strings.Join(types, " "); !strings.Contains(got, "relay.billing_source relay.billing_refused") || !strings.HasSuffix(got, "relay.run_failed") {
		t.Errorf("backend got %v", types)
	}
}

// doctor names where runs are billed and fails when claude.billing would
// refuse them.
func TestDoctorReportsBilling(t *testing.T) {
	cli := realcli.RealCLI(t)
	api := mockapi.New(t, nil)
	cwd := t.TempDir()
	env := map[string]string{"HOME": t.TempDir(), "CLAUDE_RELAY_CLAUDE_PATH": cli.Path, "PATH": os.Getenv("PATH"),
		"CLAUDE_RELAY_CLAUDE_BILLING": "subscription"}
	_, out, _ := runApp(t, env, cli.Env(t, api.URL()), cwd, "doctor")
	t.Logf("doctor:\n%s", out.String())
	var line string
	for l := range strings.Lines(out.String()) {
		if strings.Contains(l, "billing") && (strings.HasPrefix(l, "FAIL") || strings.HasPrefix(l, "ok")) {
			line = l
		}
	}
	if !strings.HasPrefix(line, "FAIL") || !strings.Contains(line, "API key ANTHROPIC_API_KEY") || strings.Contains(line, realcli.APIKey) {
		t.Errorf("billing line %q", line)
	}
	if n := len(api.Requests()); n != 0 {
		t.Errorf("the scripted API got %d requests", n)
	}
}

// `claude-relay terminal` with ANTHROPIC_API_KEY set and claude.billing
// subscription: the probe (print mode, initialize only) finds the key, the
// interactive CLI never starts, the scripted API gets nothing, and the exit
// status and line are `run`'s; the backend gets the refusal.
func TestTerminalBillingGuard(t *testing.T) {
	be, api, code, out, errb := refusedByBilling(t, "terminal", "--session=term-bill", "hello")
	t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	if n := len(api.Requests()); n != 0 {
		t.Fatalf("the scripted API got %d requests", n)
	}
	if code != billing.ExitStatus || !strings.Contains(out.String(), "! billing_refused: billing guard: the Claude CLI would bill this run to API key ANTHROPIC_API_KEY, but claude.billing is subscription") {
		t.Fatalf("exit %d", code)
	}
	if strings.Contains(out.String()+errb.String(), realcli.APIKey) {
		t.Errorf("the key's value is in the output")
	}
	be.mu.Lock()
	defer be.mu.Unlock()
	var types []string
	for _, e := range be.events {
		types = append(types, e["event_type"].(string))
	}
	if got := strings.Join(types, " "); got != "relay.run_started relay.billing_source relay.billing_refused relay.run_failed" {
		t.Errorf("backend got %v", types)
	}
}
