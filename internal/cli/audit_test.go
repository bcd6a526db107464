package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/extension"
	"github.com/claude-relay/claude-relay/internal/server/audit"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
	"github.com/claude-relay/claude-relay/internal/wire"
)

const auditTok = "siem-token-5b1e7c0d2a"

// The real CLI on the scripted API, a real serve: three runs whose Bash
// calls are allowed in the editor, denied in the editor, and allowed from
// the backend's API (as the dashboard does), one with a mode change. GET
// /api/audit lists every decision in order with its input digest, the
// machine and project, and `claude-relay audit export` writes the same
// bytes.
func TestAuditTrailOfRealRuns(t *testing.T) {
	t.Parallel()
	cli := realcli.RealCLI(t)
	cwd := trustedDir(t, cli)
	var script mockapi.Script
	for _, w := range []string{"one", "two", "three"} {
		script = append(script, bashScript(w+".txt", w, w+" done")...)
	}
	api := mockapi.New(t, script)
	siem := map[string]any{"token": auditTok, "name": "siem", "scopes": []string{"audit"}}
	url := startServe(t, []string{"HOME=" + cli.Home, "PATH=" + os.Getenv("PATH"), phoneTokens(siem)}, cli.Home, "")
	be := dataDirBackend(t, cli.Home, url)
	env := helperEnv(t, cli, api)
	p := startExtension(t, cwd, env)
	p.waitFor("ready", func(ev extension.Event) bool { return ev.Event == extension.EventReady })

	for _, how := range []string{"allow", "deny", "dashboard"} {
		run := "audit-" + how
		// set_mode needs a live run.
		p.prompt(run, "sess-"+how, "write it", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd, Approvals: true, MaxTurns: 4,
			KeepAlive: how == "dashboard"}})
		req := p.waitEvent(extension.EventApprovalRequested, run)
		if how == "dashboard" {
			p.send(extension.Command{Action: extension.ActionSetMode, RequestID: "mode", RunID: run, PermissionMode: "acceptEdits"})
			p.waitEvent(extension.EventModeChanged, run)
			waitApproval(t, be, req.ApprovalID, "pending", pending)
			if code, body := decide(t, be.url, phoneToken, req.ApprovalID, `{"decision":"allow"}`); code != http.StatusOK {
				t.Fatalf("POST decision: HTTP %d %s", code, body)
			}
			p.waitEvent(extension.EventTurnCompleted, run)
			p.send(extension.Command{Action: extension.ActionEnd, RequestID: "end", RunID: run})
		} else {
			p.send(extension.Command{Action: extension.ActionApprove, RequestID: "a", RunID: run, ApprovalID: req.ApprovalID, Decision: wire.Decision(how)})
		}
		p.waitEnd(run)
		be.waitForEnd(t, "sess-"+how)
	}
	p.shutdownOK()

	// The helper's token reads sessions but not the trail.
	if code, _ := auditBody(t, be.url, be.token); code != http.StatusForbidden {
		t.Errorf("GET /api/audit with the data dir's token: %d, want 403", code)
	}
	var body []byte
	var recs []audit.Record
	poll.Until(t, 30*time.Second, "the trail to hold the three runs' ends", func() bool {
		var code int
		code, body = auditBody(t, be.url, auditTok)
		recs = parseRecords(t, body)
		ends := 0
		for _, r := range recs {
			if strings.HasPrefix(r.Type, "relay.run_") {
				ends++
			}
		}
		return code == http.StatusOK && ends == 3
	})
	host, _ := os.Hostname()
	var got []string
	digests := map[string]string{}
	for _, r := range recs {
		line := r.SessionID + " " + r.Type
		switch r.Type {
		case "relay.approval_resolved":
			line += " " + r.Decision + " by " + r.By
			if r.InputSHA256 == "" || r.InputSHA256 != digests[r.ApprovalID] {
				t.Errorf("decision of %s: input_sha256 %q, the request's %q", r.ApprovalID, r.InputSHA256, digests[r.ApprovalID])
			}
		case "relay.approval_requested":
			digests[r.ApprovalID] = r.InputSHA256
		case "relay.mode_changed":
			line += " " + r.PermissionMode
		}
		got = append(got, line)
		if r.Machine != host || r.Project != cwd || r.ReceivedAt.IsZero() {
			t.Errorf("record %s: machine %q (want %q) project %q (want %q) received %v", r.Type, r.Machine, host, r.Project, cwd, r.ReceivedAt)
		}
	}
	want := []string{
		"sess-allow relay.approval_requested", "sess-allow relay.approval_resolved allow by extension", "sess-allow relay.run_completed",
		"sess-deny relay.approval_requested", "sess-deny relay.approval_resolved deny by extension", "sess-deny relay.run_completed",
		"sess-dashboard relay.approval_requested", "sess-dashboard relay.mode_changed acceptEdits",
		"sess-dashboard relay.approval_resolved allow by dashboard", "sess-dashboard relay.run_completed",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the trail:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	out := filepath.Join(t.TempDir(), "audit.jsonl")
	cmd := exec.Command(os.Args[0], "audit", "export", "--out", out)
	cmd.Env = append(env, "CLAUDE_RELAY_AUDIT_TOKEN="+auditTok)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("audit export: %v: %s", err, b)
	}
	exported, err := os.ReadFile(out)
	if err != nil || !bytes.Equal(exported, body) {
		t.Errorf("audit export wrote (%v)\n%s\nthe API answered\n%s", err, exported, body)
	}
	cmd = exec.Command(os.Args[0], "audit", "export")
	cmd.Env = env // the helper's token lacks the scope
	if b, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(b), "audit scope") {
		t.Errorf("audit export without the scope: %v: %s", err, b)
	}
}

func auditBody(t *testing.T, url, token string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+"/api/audit", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /api/audit: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func parseRecords(t *testing.T, body []byte) []audit.Record {
	t.Helper()
	var out []audit.Record
	for _, line := range bytes.Split(bytes.TrimSpace(body), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var r audit.Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}
