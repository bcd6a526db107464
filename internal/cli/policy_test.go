package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/extension"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/testkit/browser"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// Tokens of the policy tests' serve: one a helper posts with (ingest and
// decisions), one that reads, one that approves (the browser's).
const (
	polHelperToken  = "policy-helper-token-5b8c1f2e9d"
	polReadToken    = "policy-read-token-0a7e3c9d41"
	polApproveToken = "policy-approve-token-6f2b8e1c"
)

// policyServe starts serve with rules as CLAUDE_RELAY_SERVE_POLICY and the
// three tokens; it returns serve's URL.
func policyServe(t *testing.T, cli *realcli.CLI, rules string) string {
	t.Helper()
	toks, _ := json.Marshal([]map[string]any{
		{"token": polHelperToken, "name": "helper", "scopes": []string{"ingest", "decisions"}},
		{"token": polReadToken, "name": "reader", "scopes": []string{"read"}},
		{"token": polApproveToken, "name": "browser", "scopes": []string{"approve"}},
	})
	return startServe(t, []string{"HOME=" + cli.Home, "PATH=" + os.Getenv("PATH"), "CLAUDE_RELAY_SERVE_TOKENS=" + string(toks),
		"CLAUDE_RELAY_SERVE_POLICY=" + rules}, cli.Home, "")
}

// policyHelperEnv points a helper at backend (backend.url) with the
// helper's token.
func policyHelperEnv(t *testing.T, cli *realcli.CLI, api *mockapi.Server, backend string) []string {
	return helperEnv(t, cli, api, "CLAUDE_RELAY_BACKEND_URL="+backend, "CLAUDE_RELAY_BACKEND_TOKEN="+polHelperToken)
}

// sessionEvents is the backend's record of a session, as raw JSON.
func sessionEvents(t *testing.T, backend, session string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, backend+"/api/sessions/"+url.PathEscape(session)+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+polReadToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

const denyRm = `[{"rule":"Bash(rm *)","effect":"deny","reason":"deleting files needs a person"}]`

// runDenied has the CLI try `rm -f keep.txt` in mode and checks that the
// file survives, the model heard the rule's reason and the run went on.
func runDenied(t *testing.T, p *extProc, api *mockapi.Server, cwd, run string, mode streamjson.PermissionMode) {
	t.Helper()
	keep := filepath.Join(cwd, "keep.txt")
	if err := os.WriteFile(keep, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.prompt(run, "sess-"+run, "clean up", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd, PermissionMode: mode, MaxTurns: 4}})
	end := p.waitEnd(run)
	if end.Event != extension.EventRunCompleted {
		t.Fatalf("%s: the run ended with %s %+v, want run_completed (a denied tool does not end the run)", mode, end.Event, end.Result)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("%s: the policy's deny did not hold: keep.txt is gone (%v)", mode, err)
	}
	var denied bool
	for _, tr := range api.ToolResults() {
		denied = denied || (tr.IsError && strings.Contains(tr.Content, "deleting files needs a person"))
	}
	if !denied {
		t.Errorf("%s: the model never heard the rule's reason: %+v", mode, api.ToolResults())
	}
}

// TestPolicyDenyHoldsInEveryMode: a central deny on Bash(rm *) holds in
// bypassPermissions and acceptEdits, the model hears the reason, the run
// completes, and the backend records relay.policy_decision.
func TestPolicyDenyHoldsInEveryMode(t *testing.T) {
	t.Parallel()
	cli := realcli.RealCLI(t)
	cwd := trustedDir(t, cli)
	backend := policyServe(t, cli, denyRm)
	for _, mode := range []streamjson.PermissionMode{streamjson.PermissionModeBypassPermissions, streamjson.PermissionModeAcceptEdits} {
		api := mockapi.New(t, mockapi.Script{
			mockapi.ToolTurn("Bash", map[string]any{"command": "rm -f keep.txt", "description": "Remove"}),
			mockapi.TextTurn("done"),
		})
		p := startExtension(t, cwd, policyHelperEnv(t, cli, api, backend))
		p.waitFor("ready", func(ev extension.Event) bool { return ev.Event == extension.EventReady })
		run := "deny-" + string(mode)
		runDenied(t, p, api, cwd, run, mode)
		p.shutdownOK()
		rec := sessionEvents(t, backend, "sess-"+run)
		if !strings.Contains(rec, wire.TypePolicyDecision) || !strings.Contains(rec, `Bash(rm *)`) {
			t.Errorf("%s: the backend has no relay.policy_decision for the deny: %.2000s", mode, rec)
		}
	}
}

// TestPolicyCacheOffline: a helper that fetched the policy keeps it on
// disk; with the backend down, the next helper enforces it.
func TestPolicyCacheOffline(t *testing.T) {
	t.Parallel()
	cli := realcli.RealCLI(t)
	cwd := trustedDir(t, cli)
	serveURL := policyServe(t, cli, denyRm)
	target, _ := url.Parse(serveURL)
	// The helper's backend.url is a proxy: closing it takes the backend
	// down at the same URL, which is the cache's key.
	proxy := httptest.NewServer(httputil.NewSingleHostReverseProxy(target))
	backend := proxy.URL

	// A tool call: the policy is fetched when a hook first asks.
	api := mockapi.New(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo hi", "description": "Say hi"}),
		mockapi.TextTurn("hello"),
	})
	p := startExtension(t, cwd, policyHelperEnv(t, cli, api, backend))
	p.waitFor("ready", func(ev extension.Event) bool { return ev.Event == extension.EventReady })
	p.prompt("warm", "sess-warm", "hi", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd, MaxTurns: 3}})
	p.waitEnd("warm")
	p.shutdownOK()
	cache := filepath.Join(cli.Home, ".local", "share", "claude-relay", "policy.json")
	if b, err := os.ReadFile(cache); err != nil || !strings.Contains(string(b), "Bash(rm *)") {
		t.Fatalf("no policy cache after a run with the backend up: %q (%v)", b, err)
	}
	proxy.Close()

	api2 := mockapi.New(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "rm -f keep.txt", "description": "Remove"}),
		mockapi.TextTurn("done"),
	})
	p2 := startExtension(t, cwd, policyHelperEnv(t, cli, api2, backend))
	p2.waitFor("ready", func(ev extension.Event) bool { return ev.Event == extension.EventReady })
	runDenied(t, p2, api2, cwd, "offline", streamjson.PermissionModeBypassPermissions)
	p2.shutdownOK()
}

// TestPolicyDashboardApprover: ask + approver dashboard on Bash(git push
// *): the extension sees the request, its approve is refused with
// policy_denied, and a click in the dashboard (real Chromium, approve
// token) lets the run continue.
func TestPolicyDashboardApprover(t *testing.T) {
	t.Parallel()
	cli := realcli.RealCLI(t)
	cwd := trustedDir(t, cli)
	backend := policyServe(t, cli, `[{"rule":"Bash(git push *)","effect":"ask","approver":"dashboard","reason":"pushes need a reviewer"}]`)
	const command = "git push origin main"
	api := mockapi.New(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": command, "description": "Push"}),
		mockapi.TextTurn("pushed"),
	})
	p := startExtension(t, cwd, policyHelperEnv(t, cli, api, backend))
	p.waitFor("ready", func(ev extension.Event) bool { return ev.Event == extension.EventReady })

	tab := browser.New(t, browser.Options{Width: 1280, Height: 800, Timeout: 4 * time.Minute})
	ctx := tab.Ctx
	abMust(t, chromedp.Do(ctx,
		chromedp.Navigate(backend+"/login?next=/approvals"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), polApproveToken),
		chromedp.Click(chromedp.ID("login")),
	))
	browser.WaitJS(t, ctx, `location.pathname === "/approvals"`, 30*time.Second)

	// bypassPermissions: the policy's ask outranks the mode.
	p.prompt("push", "sess-push", "push it", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd,
		PermissionMode: streamjson.PermissionModeBypassPermissions, MaxTurns: 4}})
	req := p.waitEvent(extension.EventApprovalRequested, "push")
	if req.Approver != "dashboard" || req.PolicyRule != "Bash(git push *)" || req.PolicyReason != "pushes need a reviewer" {
		t.Errorf("approval_requested: approver %q rule %q reason %q, want dashboard, the rule and its reason", req.Approver, req.PolicyRule, req.PolicyReason)
	}
	p.send(extension.Command{Action: extension.ActionApprove, RequestID: "try-allow", RunID: "push", ApprovalID: req.ApprovalID, Decision: wire.DecisionAllow})
	refused := p.waitFor("the refusal", func(ev extension.Event) bool { return ev.Event == extension.EventError && ev.RequestID == "try-allow" })
	if refused.Code != extension.CodePolicyDenied {
		t.Fatalf("the extension's approve got %q (%s), want policy_denied", refused.Code, refused.Message)
	}

	card := `.approval[data-approval-id=` + abJSString(req.ApprovalID) + `]`
	browser.WaitJS(t, ctx, `!!document.querySelector(`+abJSString(card)+`)`, 30*time.Second)
	if dir := os.Getenv(envScreenshots); dir != "" {
		abMust(t, os.MkdirAll(dir, 0o755))
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		abMust(t, err)
		abMust(t, os.WriteFile(filepath.Join(dir, "policy-approval.png"), png, 0o644))
	}
	abMust(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(card+` button[data-decision="allow"]`))))
	end := p.waitEnd("push")
	if end.Event != extension.EventRunCompleted || end.Result.Stdout != "pushed" {
		t.Fatalf("the run ended with %s %+v, want run_completed", end.Event, end.Result)
	}
	for _, tr := range api.ToolResults() {
		if strings.Contains(tr.Content, "Denied") || strings.Contains(tr.Content, "doesn't want to proceed") {
			t.Errorf("the dashboard allowed the push but the tool was denied: %+v", tr)
		}
	}
	p.shutdownOK()
	rec := sessionEvents(t, backend, "sess-push")
	if !strings.Contains(rec, wire.TypePolicyDecision) || !strings.Contains(rec, `"decided_by":"dashboard"`) {
		t.Errorf("the backend has no relay.policy_decision decided by the dashboard: %.3000s", rec)
	}
}
