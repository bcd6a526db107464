package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/extension"
	"github.com/claude-relay/claude-relay/internal/testkit/browser"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
)

// envScreenshots names a directory for pictures of the dashboard: the
// approvals page is saved there as approvals.png, and copied into
// docs/screenshots for the README.
const envScreenshots = "CLAUDE_RELAY_SCREENSHOTS"

// TestApprovalFromTheDashboard is issue 17 end to end: the real CLI (on
// the scripted API) asks to run a Bash command in a run the extension
// helper started with approvals on; `serve` knows the approval is pending;
// the dashboard, logged in with an approve-scoped token in real Chromium,
// shows the full command; a click on Allow reaches the helper through the
// backend, the command runs and the run completes. Nobody answers on the
// extension's side.
func TestApprovalFromTheDashboard(t *testing.T) {
	t.Parallel()
	const command = "echo remote-ok > marker"
	cwd, p, ctx, tab, pushes := dashboardApprovalSetup(t, command, "marker left")

	p.prompt("remote", "sess-remote", "leave a marker", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd, Approvals: true, MaxTurns: 4}})
	req := p.waitEvent(extension.EventApprovalRequested, "remote")
	card := `.approval[data-approval-id=` + abJSString(req.ApprovalID) + `]`
	browser.WaitJS(t, ctx, `!!document.querySelector(`+abJSString(card)+`)`, 30*time.Second)
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(`+abJSString(card+` .a-cmd`)+`).textContent`))
	if err != nil || shown != command {
		t.Errorf("the card shows the command %q (%v), want %q", shown, err, command)
	}
	if title, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.title`)); !strings.HasPrefix(title, "(1) ") {
		t.Errorf("tab title %q lacks the pending count", title)
	}
	if dir := os.Getenv(envScreenshots); dir != "" {
		abScreenshot(t, ctx, dir)
	}

	abMust(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(card+` button[data-decision="allow"]`))))
	end := p.waitEnd("remote")
	if end.Event != extension.EventRunCompleted || end.Result.Stdout != "marker left" {
		t.Fatalf("the run ended with %s %+v, want run_completed", end.Event, end.Result)
	}
	if b, err := os.ReadFile(filepath.Join(cwd, "marker")); err != nil || strings.TrimSpace(string(b)) != "remote-ok" {
		t.Errorf("the allowed command did not run: marker %q (%v)", b, err)
	}
	// The page lets go of the approval and lists it as allowed from here.
	item := `#resolved li[data-approval-id=` + abJSString(req.ApprovalID) + `]`
	browser.WaitJS(t, ctx, `!document.querySelector(`+abJSString(card)+`) && !!document.querySelector(`+abJSString(item)+`)`, 30*time.Second)
	outcome, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(`+abJSString(item+` .r-outcome`)+`).textContent`))
	if err != nil || !strings.HasPrefix(outcome, "Allowed by ") || !strings.Contains(outcome, "browser") {
		t.Errorf("resolved as %q (%v), want allowed by the browser's token", outcome, err)
	}
	if n := p.count(func(ev extension.Event) bool { return ev.Event == extension.EventError }); n != 0 {
		t.Errorf("%d error events:\n%s", n, p.dump())
	}
	if e := tab.Exceptions(); len(e) > 0 {
		t.Errorf("uncaught exceptions in the page: %q", e)
	}
	pushes.checkOne(t, req.ApprovalID, cmdOf(t, req.Input))
	p.shutdownOK()
}

// abScreenshot saves the approvals page at 1280x800 in dir and in
// docs/screenshots.
func abScreenshot(t *testing.T, ctx context.Context, dir string) {
	t.Helper()
	abMust(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)))
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	abMust(t, err)
	for _, d := range []string{dir, filepath.Join("..", "..", "docs", "screenshots")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatalf("screenshot directory: %v", err)
		}
		p := filepath.Join(d, "approvals.png")
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatalf("saving the screenshot: %v", err)
		}
		t.Logf("approvals page: %s", p)
	}
}

func abMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func abJSString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// dashboardApprovalSetup starts serve with an approve-scoped token for the
// browser, an extension helper whose CLI will ask to run command and then
// answer final, and a Chromium tab logged in on /approvals.
func dashboardApprovalSetup(t *testing.T, command, final string) (string, *extProc, context.Context, *browser.Tab, *pushReceiver) {
	t.Helper()
	cli := realcli.RealCLI(t)
	cwd := trustedDir(t, cli)
	api := mockapi.New(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": command, "description": "Leave a marker"}),
		mockapi.TextTurn(final),
	})

	// serve on the helper's data dir, with a token that may approve. The
	// helper posts with the data dir's own token, which may not.
	const approveToken = "approve-token-for-the-browser-7c1d2e"
	scoped, _ := json.Marshal([]map[string]any{{"token": approveToken, "name": "browser", "scopes": []string{"approve"}}})
	pushes := newPushReceiver(t)
	url := startServe(t, []string{"HOME=" + cli.Home, "PATH=" + os.Getenv("PATH"), "CLAUDE_RELAY_SERVE_TOKENS=" + string(scoped),
		"CLAUDE_RELAY_SERVE_NOTIFY_URL=" + pushes.url + "/relay-topic"}, cli.Home, "")

	p := startExtension(t, cwd, helperEnv(t, cli, api))
	ready := p.waitFor("ready", func(ev extension.Event) bool { return ev.Event == extension.EventReady })
	if ready.Backend != url {
		t.Fatalf("the helper posts to %q, not to serve at %q", ready.Backend, url)
	}
	tab := browser.New(t, browser.Options{Width: 1280, Height: 800, Timeout: 4 * time.Minute})
	ctx := tab.Ctx
	abMust(t, chromedp.Do(ctx,
		chromedp.Navigate(url+"/login?next=/approvals"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), approveToken),
		chromedp.Click(chromedp.ID("login")),
	))
	// The login line comes from its own request (/api/whoami), which may
	// answer after the list's.
	browser.WaitJS(t, ctx, `location.pathname === "/approvals" && document.body.dataset.pendingApprovals === "0" && !document.getElementById("who").hidden`, 30*time.Second)
	who, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('who').textContent`))
	if err != nil || !strings.Contains(who, "approve") {
		t.Errorf("the page does not say this login may approve: %q (%v)", who, err)
	}
	return cwd, p, ctx, tab, pushes
}

// pushReceiver is an ntfy-style topic on loopback: it records every POST.
type pushReceiver struct {
	url string
	mu  sync.Mutex
	got []pushed
}

// pushed is one push as the receiver got it.
type pushed struct{ path, title, click, body string }

func newPushReceiver(t *testing.T) *pushReceiver {
	t.Helper()
	r := &pushReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, pushed{req.URL.Path, req.Header.Get("Title"), req.Header.Get("Click"), string(b)})
		r.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

// checkOne checks that exactly one push announced approval id, linking to
// it, naming the tool and none of the input (not command).
func (r *pushReceiver) checkOne(t *testing.T, id, command string) {
	t.Helper()
	poll.Until(t, 10*time.Second, "a push to the topic", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.got) > 0
	})
	// The barrier: the run has ended, long after serve announced the
	// approval, and its push arrived. A second one would go out of the
	// same notifier right behind it; nothing outside serve marks that it
	// did not, so a short look is all there is.
	time.Sleep(200 * time.Millisecond)
	r.mu.Lock()
	got := append([]pushed(nil), r.got...)
	r.mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("%d pushes, want exactly one: %+v", len(got), got)
	}
	p := got[0]
	t.Logf("push: title %q, click %q, body %q", p.title, p.click, p.body)
	if p.path != "/relay-topic" || p.title != "Claude wants to run Bash" || !strings.HasSuffix(p.click, "/approvals#"+id) ||
		!strings.HasPrefix(p.body, "Bash") || strings.Contains(p.body, command) || len(p.body) > 400 {
		t.Errorf("push %+v: want the topic, the title, a link to approval %s and the tool, not the command %q (serve.notify_include_input is off)", p, id, command)
	}
}

// TestDenyFromTheDashboardWhileTheEditorWaits: the extension has the
// approval open and says nothing; a Deny (with a reason) in the dashboard
// wins: the command never runs, the extension hears who decided, and its
// own late answer is refused with the same words.
func TestDenyFromTheDashboardWhileTheEditorWaits(t *testing.T) {
	t.Parallel()
	cwd, p, ctx, tab, pushes := dashboardApprovalSetup(t, "echo denied > marker", "not run, then")
	p.prompt("deny", "sess-deny", "leave a marker", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd, Approvals: true, MaxTurns: 4}})
	req := p.waitEvent(extension.EventApprovalRequested, "deny")
	card := `.approval[data-approval-id=` + abJSString(req.ApprovalID) + `]`
	browser.WaitJS(t, ctx, `!!document.querySelector(`+abJSString(card)+`)`, 30*time.Second)
	abMust(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(card+` input.reason`), "not on this machine"),
		chromedp.Click(chromedp.CSS(card+` button[data-decision="deny"]`)),
	))
	gone := p.waitEvent(extension.EventApprovalCancelled, "deny")
	if gone.ApprovalID != req.ApprovalID || !strings.HasPrefix(gone.Reason, "already decided by dashboard") || !strings.HasSuffix(gone.Reason, ": deny") {
		t.Errorf("approval_cancelled %+v, want already decided by dashboard …: deny", gone)
	}
	p.send(extension.Command{Action: extension.ActionApprove, RequestID: "late", RunID: "deny", ApprovalID: req.ApprovalID, Decision: "allow"})
	late := p.waitFor("the late approve's error", func(ev extension.Event) bool { return ev.Event == extension.EventError && ev.RequestID == "late" })
	if late.Code != extension.CodeUnknownApprove || !strings.Contains(late.Message, "already decided by dashboard") {
		t.Errorf("the late approve: %s %q, want who decided", late.Code, late.Message)
	}
	end := p.waitEnd("deny")
	if end.Event != extension.EventRunCompleted {
		t.Fatalf("the run ended with %s %+v, want run_completed", end.Event, end.Result)
	}
	if _, err := os.Stat(filepath.Join(cwd, "marker")); !os.IsNotExist(err) {
		t.Errorf("the denied command ran (marker: %v)", err)
	}
	item := `#resolved li[data-approval-id=` + abJSString(req.ApprovalID) + `]`
	browser.WaitJS(t, ctx, `!document.querySelector(`+abJSString(card)+`) && !!document.querySelector(`+abJSString(item)+`)`, 30*time.Second)
	outcome, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(`+abJSString(item+` .r-outcome`)+`).textContent`))
	if err != nil || !strings.HasPrefix(outcome, "Denied by ") {
		t.Errorf("resolved as %q (%v), want denied", outcome, err)
	}
	if e := tab.Exceptions(); len(e) > 0 {
		t.Errorf("uncaught exceptions in the page: %q", e)
	}
	pushes.checkOne(t, req.ApprovalID, cmdOf(t, req.Input))
	p.shutdownOK()
}

// cmdOf is the Bash command of an approval's input.
func cmdOf(t *testing.T, input json.RawMessage) string {
	t.Helper()
	var in struct {
		Command string `json:"command"`
	}
	if err := json.Unmarshal(input, &in); err != nil || in.Command == "" {
		t.Fatalf("approval input %s has no command (%v)", input, err)
	}
	return in.Command
}
