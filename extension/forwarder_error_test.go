package extension

import (
	"io"
	"os"
	"testing"

	"github.com/claude-relay/claude-relay/forwarder"
)

// TestForwarderErrorsBeforeServeFollowReady: the forwarder reports what it
// found in the spool at start before the server serves (it is built
// first); those errors wait and go out right after the ready event.
func TestForwarderErrorsBeforeServeFollowReady(t *testing.T) {
	h := &harness{t: t, exec: &fakeExecutor{}, fwd: newFakeForwarder(), sig: make(chan os.Signal, 2), done: make(chan error, 1)}
	h.srv = testSetup(h.exec, h.fwd).server()
	h.srv.ReportForwarderError(forwarder.Error{Code: forwarder.CodeCorruptSpool, SessionID: "s-torn", Message: "torn tail"})
	h.srv.ReportForwarderError(forwarder.Error{Code: forwarder.CodeAuth, SessionID: "s-auth", Message: "token refused"})
	h.out = newSink(loadSchema(t), h.fwd)
	r, w := io.Pipe()
	h.in = w
	t.Cleanup(func() {
		w.Close()
		r.Close()
		for _, p := range h.out.Problems() {
			t.Errorf("stdout: %s", p)
		}
	})
	go func() { h.done <- h.srv.Serve(r, h.out, h.sig) }()
	h.waitFor("the second early error", func(ev Event) bool { return ev.Event == EventError && ev.SessionID == "s-auth" })
	h.cmd(Command{Action: ActionShutdown, RequestID: "bye"})
	if err := h.serveResult(); err != nil {
		t.Fatal(err)
	}
	evs := h.events()
	if len(evs) < 3 || evs[0].Event != EventReady ||
		evs[1].Event != EventError || evs[1].Code != CodeSpool || evs[1].SessionID != "s-torn" || evs[1].Message != "torn tail" ||
		evs[2].Event != EventError || evs[2].Code != CodeAuth || evs[2].SessionID != "s-auth" {
		t.Errorf("want ready, then the two errors in order; got:\n%s", h.dump())
	}
}
