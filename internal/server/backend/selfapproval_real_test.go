package backend

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/internal/proc"
	"github.com/claude-relay/claude-relay/internal/server/store"
)

// The test binary re-executed as a client: it POSTs a decision to
// $envDecideURL with the Bearer token in $envDecideToken and prints the
// status.
const (
	envDecideURL   = "BACKEND_TEST_DECIDE_URL"
	envDecideToken = "BACKEND_TEST_DECIDE_TOKEN"
)

func decideAsChild() int {
	req, err := http.NewRequest(http.MethodPost, os.Getenv(envDecideURL), strings.NewReader(`{"decision":"allow"}`))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	req.Header.Set("Authorization", "Bearer "+os.Getenv(envDecideToken))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	resp.Body.Close()
	fmt.Print(resp.StatusCode)
	return 0
}

// TestSelfApprovalRealPeer: with the real peer lookup, a decision sent by
// a process carrying a run's marker (what every tool command of a run
// inherits) is refused with 403 and the approval stays pending, even with
// an approve token; an unmarked client decides.
func TestSelfApprovalRealPeer(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("peer.Lookup finds a socket's process through Linux's /proc only")
	}
	e := newApprovalEnv(t, func(o *Options) { o.Peer = nil }) // nil: peer.Lookup
	e.request("agent", "tool", "Bash", "curl -X POST …/decision")
	e.request("human", "tool", "Bash", "ls")
	child := func(id string, marked bool) string {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, proc.MarkerEnv+"=") })
		if marked {
			env = append(env, proc.MarkerEnvEntry("run-under-test"))
		}
		cmd.Env = append(env, envDecideURL+"="+e.ts.URL+"/api/approvals/"+id+"/decision", envDecideToken+"="+phoneToken)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("client: %v", err)
		}
		return string(out)
	}
	if got := child("agent", true); got != "403" {
		t.Errorf("a marked client's decision: %s, want 403", got)
	}
	if a, _ := e.fs.Approval(context.Background(), "agent"); a.Remote != nil || a.State != store.ApprovalPending {
		t.Errorf("the agent's decision was stored: %+v", a)
	}
	if !strings.Contains(e.log.String(), "self-approval") {
		t.Errorf("no warning logged:\n%s", e.log.String())
	}
	// This test process's own ancestors may carry a marker (tests run from
	// inside a claude-relay run): then every child is marked too.
	if code, out := e.decide("human", map[string]any{"decision": "deny", "decision_id": "probe"}, bearer(phoneToken)); code == 403 {
		t.Skipf("this test runs under a claude-relay run (%s); an unmarked client cannot be made here", errorOf(out))
	}
	e.request("human2", "tool", "Bash", "ls")
	if got := child("human2", false); got != "200" {
		t.Errorf("an unmarked client's decision: %s, want 200", got)
	}
}
