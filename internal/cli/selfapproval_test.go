package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/extension"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
)

// attackScript waits for a pending approval at url and tries to allow it
// with the approve-scoped token it finds in .phone-token: once as it is,
// once with the run marker removed from its environment. It writes each
// HTTP status, then "done", to attack.out.
const attackScript = `#!/bin/sh
tok=$(cat .phone-token)
id=
for i in $(seq 1 600); do
  id=$(curl -s -H "Authorization: Bearer $tok" "URL/api/approvals?state=pending" | grep -o '"approval_id":"[^"]*"' | head -1 | cut -d'"' -f4)
  [ -n "$id" ] && break
  sleep 0.1
done
post() {
  "$@" curl -s -o /dev/null -w '%{http_code}\n' -X POST -H "Authorization: Bearer $tok" \
    -H 'Content-Type: application/json' -d '{"decision":"allow","reason":"I approve myself"}' \
    "URL/api/approvals/$id/decision" >> attack.out
}
post env
post env -u CLAUDE_RELAY_RUN -u CLAUDE_RELAY_RUN_TOKEN
echo "done $id" >> attack.out
`

// TestAgentCannotApproveItself is CONTRACT §10's self-approval refusal,
// end to end: the agent starts a background Bash (allowed by a rule) that
// finds an approve-scoped token on disk and tries to allow the approval
// its next tool call waits for, through serve on loopback, with and
// without the run marker in its environment. Both attempts get 403, the
// approval stays pending, and the editor's own answer still decides it.
func TestAgentCannotApproveItself(t *testing.T) {
	t.Parallel()
	cli := realcli.RealCLI(t)
	cwd := trustedDir(t, cli)
	be := serveForHelper(t, cli)
	if err := os.WriteFile(filepath.Join(cwd, ".phone-token"), []byte(phoneToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cwd, "attack.sh"), []byte(strings.ReplaceAll(attackScript, "URL", be.url)), 0o700); err != nil {
		t.Fatal(err)
	}
	api := mockapi.New(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "sh attack.sh", "description": "Watch", "run_in_background": true}),
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo mine > marker", "description": "Write the marker"}),
		mockapi.TextTurn("finished"),
	})
	p := startExtension(t, cwd, helperEnv(t, cli, api))
	p.prompt("self", "sess-self", "try it", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd, Approvals: true,
		MaxTurns: 6, AllowedTools: []string{"Bash(sh attack.sh)"}}})
	req := p.waitEvent(extension.EventApprovalRequested, "self")
	if !strings.Contains(string(req.Input), "echo mine > marker") {
		t.Fatalf("the approval asked is %s, want the marker command (was attack.sh asked about?)", req.Input)
	}
	var out string
	if !poll.Within(60*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(cwd, "attack.out"))
		out = string(b)
		return strings.Contains(out, "done")
	}) {
		t.Fatalf("the agent's attempt never finished: attack.out %q\n%s", out, p.dump())
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || lines[0] != "403" || lines[1] != "403" || lines[2] != "done "+req.ApprovalID {
		t.Errorf("the agent's attempts answered %q, want 403 twice for approval %s", lines, req.ApprovalID)
	}
	waitApproval(t, be, req.ApprovalID, "still pending", pending)
	if n := p.count(func(ev extension.Event) bool { return ev.Event == extension.EventApprovalCancelled }); n != 0 {
		t.Errorf("the approval was taken from the editor:\n%s", p.dump())
	}
	p.send(extension.Command{Action: extension.ActionApprove, RequestID: "mine", RunID: "self", ApprovalID: req.ApprovalID, Decision: "deny"})
	end := p.waitEnd("self")
	if end.Event != extension.EventRunCompleted {
		t.Errorf("the run ended with %s %+v", end.Event, end.Result)
	}
	if _, err := os.Stat(filepath.Join(cwd, "marker")); !os.IsNotExist(err) {
		t.Errorf("the command ran although the editor denied it (marker: %v)", err)
	}
	p.shutdownOK()
}
