package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/extension"
	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/pgtest"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// These tests are CONTRACT §10 from the helper's side: a decision made
// through the backend (POST /api/approvals/{id}/decision with an
// approve-scoped token, as the dashboard's Allow button does) reaches the
// helper that asked, through its decisions long-poll (internal/remote), and
// answers the CLI; the first answer wins and every side agrees on it.

// Tokens of the serve these tests run: the helper posts (and polls) with
// the data dir's own token, which may not approve; "phone" may.
const phoneToken = "phone-token-0c6f1b2e9d"

// phoneTokens is serve.tokens with the approve-scoped phone token.
func phoneTokens(extra ...map[string]any) string {
	b, _ := json.Marshal(append([]map[string]any{{"token": phoneToken, "name": "phone", "scopes": []string{"approve"}}}, extra...))
	return "CLAUDE_RELAY_SERVE_TOKENS=" + string(b)
}

// serveForHelper starts `claude-relay serve` on the helper's data dir (the
// helper then posts to it) with the phone token, and returns it with the
// data dir's token for reading.
func serveForHelper(t *testing.T, cli *realcli.CLI) backendAPI {
	t.Helper()
	url := startServe(t, []string{"HOME=" + cli.Home, "PATH=" + os.Getenv("PATH"), phoneTokens()}, cli.Home, "")
	return dataDirBackend(t, cli.Home, url)
}

// decide posts a decision with token, as the dashboard does; it returns the
// status and the body.
func decide(t *testing.T, url, token, approvalID, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/api/approvals/"+approvalID+"/decision", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("POST decision: %v", err) // Errorf: callers run on other goroutines
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// approvalAt reads one approval from the backend.
func approvalAt(t *testing.T, be backendAPI, id string) (store.Approval, int) {
	t.Helper()
	var a store.Approval
	return a, be.get(t, "/api/approvals/"+id, &a)
}

// waitApproval waits until the backend has approval id in a state ok
// accepts.
func waitApproval(t *testing.T, be backendAPI, id, what string, ok func(store.Approval) bool) store.Approval {
	t.Helper()
	var last store.Approval
	var code int
	if !poll.Within(30*time.Second, func() bool {
		last, code = approvalAt(t, be, id)
		return code == http.StatusOK && ok(last)
	}) {
		t.Fatalf("the backend at %s never had approval %s %s: HTTP %d %+v", be.url, id, what, code, last)
	}
	return last
}

func pending(a store.Approval) bool  { return a.State == store.ApprovalPending }
func resolved(a store.Approval) bool { return a.State == store.ApprovalResolved }

// resolvedEvents is the relay.approval_resolved events of a session at the
// backend, for approval id.
func resolvedEvents(t *testing.T, be backendAPI, session, id string) []wire.ApprovalResolved {
	t.Helper()
	var out []wire.ApprovalResolved
	for _, e := range be.events(t, session) {
		var r wire.ApprovalResolved
		if e.EventType == wire.TypeApprovalResolved && json.Unmarshal(e.EventData, &r) == nil && r.ApprovalID == id {
			out = append(out, r)
		}
	}
	return out
}

// bashScript is one Bash turn that writes file with the word, then text.
func bashScript(file, word, after string) mockapi.Script {
	return mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo " + word + " > " + file, "description": "Write " + file}),
		mockapi.TextTurn(after),
	}
}

// fileHas reports whether dir/file holds word.
func fileHas(dir, file, word string) bool {
	b, err := os.ReadFile(filepath.Join(dir, file))
	return err == nil && strings.TrimSpace(string(b)) == word
}

// An extension helper with approvals on; the real CLI asks to run Bash;
// nobody answers in the editor; a decision posted to the backend lets the
// tool run within the turn. The extension sees the approval resolved
// elsewhere, and its own approve afterwards is told who decided what. The
// backend's approval is resolved by the dashboard, and the helper's
// relay.approval_resolved names the decision that won. The same with the
// data dir's serve and with the helper's embedded default backend.
func TestRemoteApprovalDecidedThroughTheBackend(t *testing.T) {
	t.Parallel()
	for _, serve := range []bool{true, false} {
		name := map[bool]string{true: "serve", false: "embedded default"}[serve]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			decidedThroughTheBackend(t, serve)
		})
	}
}

func decidedThroughTheBackend(t *testing.T, serve bool) {
	cli := realcli.RealCLI(t)
	cwd := trustedDir(t, cli)
	api := mockapi.New(t, bashScript("remote.txt", "decided-remotely", "remote done"))
	var be backendAPI
	var p *extProc
	if serve {
		be = serveForHelper(t, cli)
		p = startExtension(t, cwd, helperEnv(t, cli, api))
	} else {
		// No serve: the helper starts the backend in-process, with the
		// phone token from its own configuration.
		p = startExtension(t, cwd, helperEnv(t, cli, api, phoneTokens()))
	}
	ready := p.waitFor("ready", func(ev extension.Event) bool { return ev.Event == extension.EventReady })
	switch {
	case !serve:
		be = dataDirBackend(t, cli.Home, ready.Backend)
	case ready.Backend != be.url:
		t.Fatalf("the helper posts to %q, not to serve at %q", ready.Backend, be.url)
	}
	p.prompt("remote", "sess-remote", "write it", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd, Approvals: true, MaxTurns: 4}})
	req := p.waitEvent(extension.EventApprovalRequested, "remote")
	waitApproval(t, be, req.ApprovalID, "pending", pending)

	// The data dir's token may read but not decide.
	if code, body := decide(t, be.url, be.token, req.ApprovalID, `{"decision":"deny"}`); code != http.StatusForbidden {
		t.Errorf("a decision with the helper's token: HTTP %d %s, want 403", code, body)
	}
	posted := time.Now()
	if code, body := decide(t, be.url, phoneToken, req.ApprovalID, `{"decision":"allow","reason":"from the phone"}`); code != http.StatusOK {
		t.Fatalf("POST decision: HTTP %d %s", code, body)
	}
	gone := p.waitEvent(extension.EventApprovalCancelled, "remote")
	t.Logf("the decision reached the extension %s after the POST", time.Since(posted).Round(time.Millisecond))
	if gone.ApprovalID != req.ApprovalID || !strings.HasPrefix(gone.Reason, "already decided by dashboard") || !strings.HasSuffix(gone.Reason, ": allow") {
		t.Errorf("approval_cancelled %+v, want already decided by dashboard …: allow", gone)
	}
	end := p.waitEnd("remote")
	if end.Event != extension.EventRunCompleted || end.Result.Stdout != "remote done" {
		t.Errorf("the run ended with %s %+v", end.Event, end.Result)
	}
	if !fileHas(cwd, "remote.txt", "decided-remotely") {
		t.Error("the tool allowed through the backend did not run")
	}
	p.send(extension.Command{Action: extension.ActionApprove, RequestID: "late", RunID: "remote", ApprovalID: req.ApprovalID, Decision: "deny"})
	late := p.waitFor("the late approve's error", func(ev extension.Event) bool { return ev.Event == extension.EventError && ev.RequestID == "late" })
	if late.Code != extension.CodeUnknownApprove || !strings.Contains(late.Message, "already decided by dashboard") || !strings.HasSuffix(late.Message, ": allow") {
		t.Errorf("the late approve: %s %q, want who decided and what", late.Code, late.Message)
	}

	a := waitApproval(t, be, req.ApprovalID, "resolved", resolved)
	if a.By != string(wire.ByDashboard) || a.Decision != "allow" || a.Remote == nil || a.Remote.Decision != "allow" {
		t.Errorf("the backend's approval %+v (remote %+v), want resolved by dashboard: allow", a, a.Remote)
	}
	be.waitForEnd(t, "sess-remote")
	res := resolvedEvents(t, be, "sess-remote", req.ApprovalID)
	if len(res) != 1 || res[0].By != wire.ByDashboard || a.Remote == nil || res[0].DecisionID != a.Remote.DecisionID || res[0].DecidedBy != a.Remote.By {
		t.Errorf("relay.approval_resolved %+v, want one by dashboard naming the remote decision %+v", res, a.Remote)
	}
	p.shutdownOK()
}

// First answer wins: the extension denies while a decision to allow is
// posted to the backend. Exactly one of them is the outcome, and the
// extension, the tool and the backend all agree on which.
func TestRemoteApprovalFirstAnswerWins(t *testing.T) {
	t.Parallel()
	cli := realcli.RealCLI(t)
	cwd := trustedDir(t, cli)
	api := mockapi.New(t, bashScript("raced.txt", "raced", "race over"))
	be := serveForHelper(t, cli)
	p := startExtension(t, cwd, helperEnv(t, cli, api))
	p.prompt("race", "sess-race", "write it", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd, Approvals: true, MaxTurns: 4}})
	req := p.waitEvent(extension.EventApprovalRequested, "race")
	waitApproval(t, be, req.ApprovalID, "pending", pending)

	var wg sync.WaitGroup
	var code int
	var body string
	wg.Go(func() { code, body = decide(t, be.url, phoneToken, req.ApprovalID, `{"decision":"allow"}`) })
	p.send(extension.Command{Action: extension.ActionApprove, RequestID: "ext", RunID: "race", ApprovalID: req.ApprovalID,
		Decision: "deny", Reason: "the editor said no"})
	wg.Wait()
	p.waitEnd("race")
	// Commands are handled in order: once status answers, approve has been.
	p.send(extension.Command{Action: extension.ActionStatus, RequestID: "after"})
	p.waitFor("status", func(ev extension.Event) bool { return ev.Event == extension.EventStatus && ev.RequestID == "after" })

	extErrs := p.all(func(ev extension.Event) bool { return ev.Event == extension.EventError && ev.RequestID == "ext" })
	cancelled := p.count(func(ev extension.Event) bool {
		return ev.Event == extension.EventApprovalCancelled && ev.ApprovalID == req.ApprovalID
	})
	ran := fileHas(cwd, "raced.txt", "raced")
	a := waitApproval(t, be, req.ApprovalID, "resolved", resolved)
	be.waitForEnd(t, "sess-race")
	res := resolvedEvents(t, be, "sess-race", req.ApprovalID)
	t.Logf("POST decision: HTTP %d %s; extension errors %+v; approval_cancelled %d; tool ran %v; backend %s/%s",
		code, strings.TrimSpace(body), extErrs, cancelled, ran, a.By, a.Decision)
	if len(res) != 1 {
		t.Fatalf("relay.approval_resolved %+v, want exactly one outcome", res)
	}
	if a.By != string(res[0].By) || a.Decision != string(res[0].Decision) {
		t.Errorf("the backend's approval says %s/%s, the helper's event %s/%s", a.By, a.Decision, res[0].By, res[0].Decision)
	}
	switch wire.By(a.By) {
	case wire.ByDashboard:
		if len(extErrs) != 1 || !strings.Contains(extErrs[0].Message, "already decided by dashboard") || cancelled != 1 || !ran ||
			a.Decision != "allow" || code != http.StatusOK {
			t.Errorf("the dashboard won, but the extension was told %+v, saw %d approval_cancelled, tool ran %v, POST %d",
				extErrs, cancelled, ran, code)
		}
	case wire.ByExtension:
		if len(extErrs) != 0 || cancelled != 0 || ran || a.Decision != "deny" {
			t.Errorf("the extension won, but it was told %+v, saw %d approval_cancelled, tool ran %v", extErrs, cancelled, ran)
		}
		// The decision was stored before the helper's deny arrived (200)
		// or refused after it (409, naming the extension).
		if code != http.StatusOK && (code != http.StatusConflict || !strings.Contains(body, "extension")) {
			t.Errorf("POST decision: HTTP %d %s", code, body)
		}
	default:
		t.Errorf("resolved by %q", a.By)
	}
	p.shutdownOK()
}

// PostgreSQL replicas: two serves (A and B) on one database. The helper
// posts to B and long-polls B; the decision is made through A and reaches
// it through the database's notifications. The wake-up latency on loopback
// is logged, not asserted (the target: 1 s).
func TestRemoteApprovalAcrossReplicas(t *testing.T) {
	t.Parallel()
	cli := realcli.RealCLI(t)
	pg, err := pgtest.Start(context.Background())
	switch {
	case errors.Is(err, pgtest.ErrNoPostgres) && os.Getenv("CI") != "true":
		t.Skip(err)
	case err != nil:
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Stop() }) //nolint:errcheck // the test is over
	db := pg.Database(t)
	const helperToken = "helper-token-5e0d7a"
	tokens := phoneTokens(map[string]any{"token": helperToken, "name": "helper"})
	serveOn := func(name string) backendAPI {
		home := filepath.Join(t.TempDir(), name)
		url := startServe(t, []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), tokens}, home, db)
		return backendAPI{url: url, token: helperToken}
	}
	a, b := serveOn("replica-a"), serveOn("replica-b")

	cwd := trustedDir(t, cli)
	api := mockapi.New(t, bashScript("replica.txt", "across-replicas", "replicas done"))
	p := startExtension(t, cwd, helperEnv(t, cli, api, "CLAUDE_RELAY_BACKEND_URL="+b.url, "CLAUDE_RELAY_BACKEND_TOKEN="+helperToken))
	if ready := p.waitFor("ready", func(ev extension.Event) bool { return ev.Event == extension.EventReady }); ready.Backend != b.url {
		t.Fatalf("the helper posts to %q, not to replica B %s", ready.Backend, b.url)
	}
	p.prompt("replica", "sess-replica", "write it", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd, Approvals: true, MaxTurns: 4}})
	req := p.waitEvent(extension.EventApprovalRequested, "replica")
	waitApproval(t, a, req.ApprovalID, "pending at replica A", pending)

	posted := time.Now()
	if code, body := decide(t, a.url, phoneToken, req.ApprovalID, `{"decision":"allow"}`); code != http.StatusOK {
		t.Fatalf("POST decision to replica A: HTTP %d %s", code, body)
	}
	p.waitEvent(extension.EventApprovalCancelled, "replica")
	t.Logf("a decision made through replica A woke the helper on replica B after %s", time.Since(posted).Round(time.Millisecond))
	end := p.waitEnd("replica")
	if end.Event != extension.EventRunCompleted || !fileHas(cwd, "replica.txt", "across-replicas") {
		t.Errorf("the run ended with %s %+v; the tool ran: %v", end.Event, end.Result, fileHas(cwd, "replica.txt", "across-replicas"))
	}
	for name, be := range map[string]backendAPI{"A": a, "B": b} {
		if got := waitApproval(t, be, req.ApprovalID, "resolved", resolved); got.By != string(wire.ByDashboard) || got.Decision != "allow" {
			t.Errorf("replica %s: approval %+v, want resolved by dashboard: allow", name, got)
		}
	}
	p.shutdownOK()
}

// `run --approvals` on a terminal: while it asks, a decision posted to the
// backend answers instead; the question ends with a line that says so, and
// the tool runs.
func TestRunTTYDecidedThroughTheBackend(t *testing.T) {
	cli := realcli.RealCLI(t)
	api := mockapi.New(t, bashScript("tty-remote.txt", "tty-remote", "tty remote done"))
	be := serveForHelper(t, cli)
	r := startTTYRun(t, cli, api, trustedDir(t, cli), nil, "--approvals", "--max-turns=4", "write it")
	r.waitScreen("Allow Bash? [y]es / [a]lways / [e]dit / [n]o")
	var list struct {
		Approvals []store.Approval `json:"approvals"`
	}
	if !poll.Within(30*time.Second, func() bool {
		code := be.get(t, "/api/approvals?state=pending", &list)
		return code == http.StatusOK && len(list.Approvals) == 1
	}) {
		r.Fail("the backend never listed the pending approval: %+v", list.Approvals)
	}
	if code, body := decide(t, be.url, phoneToken, list.Approvals[0].ApprovalID, `{"decision":"allow"}`); code != http.StatusOK {
		r.Fail("POST decision: HTTP %d %s", code, body)
	}
	r.waitScreen("decided in the dashboard: allow")
	if got := r.exit(); got != "exit=0" {
		r.Fail("run ended with %s", got)
	}
	t.Logf("screen:\n%s", r.Screen())
	if !screenHasLine(r.Screen(), "decided in the dashboard: allow") {
		r.Fail("the question does not end with its own line saying the dashboard decided")
	}
	if !fileHas(r.cwd, "tty-remote.txt", "tty-remote") {
		r.Fail("the tool allowed through the backend did not run")
	}
}

// The same interruption for the approval's own timeout: the question does
// not wait for an answer that can no longer count.
func TestRunTTYQuestionEndsOnTimeout(t *testing.T) {
	cli := realcli.RealCLI(t)
	api := mockapi.New(t, bashScript("never.txt", "never", "unused"))
	r := startTTYRun(t, cli, api, trustedDir(t, cli), []string{"CLAUDE_RELAY_APPROVALS_TIMEOUT=2s"}, "--approvals", "--max-turns=4", "write it")
	r.waitScreen("Allow Bash?")
	r.waitScreen("timed out: denied and the turn stopped")
	r.exit()
	t.Logf("screen:\n%s", r.Screen())
	if !screenHasLine(r.Screen(), "timed out: denied and the turn stopped") {
		r.Fail("the question does not end with its own line saying it timed out")
	}
	if _, err := os.Stat(filepath.Join(r.cwd, "never.txt")); !os.IsNotExist(err) {
		r.Fail("the tool ran after its approval timed out")
	}
}

func screenHasLine(screen, line string) bool {
	for _, l := range strings.Split(screen, "\n") {
		if strings.TrimRight(l, " ") == line {
			return true
		}
	}
	return false
}
