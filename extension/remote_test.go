package extension

import (
	"encoding/json"
	"io"
	"testing"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/internal/relay"
	"github.com/claude-relay/claude-relay/internal/wire"
)

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// An approval decided in the dashboard (Options.Remote answers the core)
// lets the tool run; the extension sees its approval resolved elsewhere,
// and its own late approve is told who decided what. Remote lives as long
// as Serve.
func TestApprovalDecidedInTheDashboard(t *testing.T) {
	cores := make(chan *relay.Core, 1)
	closed := make(chan struct{})
	h := newHarness(t, func(o *setup, _ *fakeForwarder) {
		o.Remote = func(c *relay.Core) io.Closer {
			cores <- c
			return closerFunc(func() error { close(closed); return nil })
		}
	})
	core := <-cores
	h.prompt("d", "approve Bash", PromptOptions{RunOptions: executor.RunOptions{Approvals: true}})
	req := h.waitEvent(EventApprovalRequested, "d")
	if err := core.Answer("", req.ApprovalID, relay.Reply{Decision: wire.DecisionAllow, By: wire.ByDashboard, ByDetail: "dashboard:phone", DecisionID: "dec-1",
		InputSHA256: wire.InputDigest(req.Input)}); err != nil {
		t.Fatal(err)
	}
	if gone := h.waitEvent(EventApprovalCancelled, "d"); gone.ApprovalID != req.ApprovalID || gone.Reason != "already decided by dashboard (phone): allow" {
		t.Errorf("approval_cancelled %+v", gone)
	}
	if end := h.waitEvent(EventRunCompleted, "d"); end.Result.Stdout != "allowed" {
		t.Errorf("the dashboard's allow: %+v", end.Result)
	}
	h.cmd(Command{Action: ActionApprove, RequestID: "late", RunID: "d", ApprovalID: req.ApprovalID, Decision: "deny"})
	if e := h.waitError(CodeUnknownApprove, "late"); e.Message != `approval "ap-d" already decided by dashboard (phone): allow` {
		t.Errorf("the late approve was told %q", e.Message)
	}
	var resolved []wire.ApprovalResolved
	for _, ev := range h.fwd.Events() {
		if ev.Type == wire.TypeApprovalResolved {
			var r wire.ApprovalResolved
			if err := json.Unmarshal(ev.Data, &r); err != nil {
				t.Fatal(err)
			}
			resolved = append(resolved, r)
		}
	}
	if len(resolved) != 1 || resolved[0].By != "dashboard" || resolved[0].DecidedBy != "dashboard:phone" || resolved[0].DecisionID != "dec-1" {
		t.Errorf("relay.approval_resolved %+v", resolved)
	}
	select {
	case <-closed:
		t.Fatal("Remote was closed while serving")
	default:
	}
	h.cmd(Command{Action: ActionShutdown, RequestID: "bye"})
	if err := h.serveResult(); err != nil {
		t.Fatal(err)
	}
	<-closed
}
