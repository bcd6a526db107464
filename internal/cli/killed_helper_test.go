package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/uuid"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/extension"
	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/server/store/sqlite"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// An `extension` helper is SIGKILLed while a run's tool sleeps. The next
// start on the same data dir (another helper, or `spool flush`) stops what
// the run left and ends it in the backend: failed, reason helper_exited,
// seq after the run's other events, once.
func TestKilledHelperEndsItsRun(t *testing.T) {
	t.Parallel()
	for _, next := range []string{"extension", "spool flush"} {
		t.Run(strings.ReplaceAll(next, " ", "-"), func(t *testing.T) {
			t.Parallel()
			killedHelper(t, next)
		})
	}
}

func killedHelper(t *testing.T, next string) {
	cli := realcli.RealCLI(t)
	cwd := trustedDir(t, cli)
	api := mockapi.New(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo start && sleep 3174", "description": "Wait a long time"}),
		mockapi.TextTurn("never"),
	})
	// serve outlives both helpers, so the backend is the same before and
	// after the kill (the embedded default would die with the helper).
	url := startServe(t, []string{"HOME=" + cli.Home, "PATH=" + os.Getenv("PATH")}, cli.Home, "")
	be := dataDirBackend(t, cli.Home, url)
	env := helperEnv(t, cli, api)

	p := startExtension(t, cwd, env)
	runID, session := "killed-"+uuid.NewString(), "sess-killed-"+uuid.NewString()
	p.prompt(runID, session, "wait", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd, MaxTurns: 4}})
	waitSleeping(t, p, runID, "3174")
	var sess store.Session
	if !poll.Within(extTimeout, func() bool {
		return be.get(t, "/api/sessions/"+session, &sess) == 200 && sess.Status == store.StatusRunning
	}) {
		t.Fatalf("the session never showed running at the backend: %+v", sess)
	}

	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	t.Logf("helper killed; left of the run: %q", runProcesses(runID))

	switch next {
	case "extension":
		p2 := startExtension(t, cwd, env)
		p2.waitFor("ready", func(ev extension.Event) bool { return ev.Event == extension.EventReady })
		defer p2.shutdownOK()
	case "spool flush":
		out, errOut, code := runMain(t, env, "spool", "flush")
		if code != 0 || !strings.Contains(out, "ended 1 run(s) whose helper had died") {
			t.Errorf("spool flush: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
	}

	if !poll.Within(extTimeout, func() bool {
		return be.get(t, "/api/sessions/"+session, &sess) == 200 && sess.Status == store.StatusFailed
	}) {
		t.Fatalf("the session did not become failed: %+v", sess)
	}
	if left := runProcesses(runID); len(left) > 0 {
		t.Errorf("processes of the run outlived the next start: %q", left)
	}
	evs := be.events(t, session)
	var inter []store.Event
	for _, ev := range evs {
		if ev.InteractionID == evs[0].InteractionID {
			inter = append(inter, ev)
		}
	}
	slices.SortFunc(inter, func(a, b store.Event) int { return int(a.Seq - b.Seq) })
	ends := 0
	for i, ev := range inter {
		if ev.Seq != int64(i+1) {
			t.Errorf("seq %d at position %d: the interaction's numbering has a gap or a repeat", ev.Seq, i+1)
		}
		if strings.HasPrefix(ev.EventType, "relay.run_") && ev.EventType != wire.TypeRunStarted {
			ends++
		}
	}
	last := inter[len(inter)-1]
	var end wire.RunEnded
	if err := json.Unmarshal(last.EventData, &end); err != nil || last.EventType != wire.TypeRunFailed {
		t.Fatalf("last event of the interaction: %s %s (%v)", last.EventType, last.EventData, err)
	}
	if ends != 1 || end.RunID != runID || end.Reason != wire.ReasonHelperExited ||
		!strings.Contains(end.Result.Stderr, "exited while this run was live; its processes were stopped at") {
		t.Errorf("%d run ends; the last: %+v", ends, end)
	}
	// Nothing is left to post: another start posts nothing more.
	if out, _, code := runMain(t, env, "spool", "flush"); code != 0 || strings.Contains(out, "ended") {
		t.Errorf("a later spool flush: exit %d, %s", code, out)
	}
	if n := len(be.events(t, session)); n != len(evs) {
		t.Errorf("the session has %d events after another start, had %d", n, len(evs))
	}
}

// A `terminal` helper is SIGKILLed while its CLI runs. Its run was in the
// data dir's run registry, so the next start (here `spool flush`) stops the
// CLI and ends the terminal session failed (helper_exited) instead of
// leaving it "running".
func TestKilledTerminalHelperEndsItsRun(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), t.TempDir()
	const marker = "3177"
	fake := filepath.Join(t.TempDir(), "claude")
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '2.1.330 (Claude Code)'; exit 0; fi\nexec sleep " + marker + "\n"
	if err := os.WriteFile(fake, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "CLAUDE_RELAY_CLAUDE_PATH=" + fake}
	session := "term-killed-" + uuid.NewString()
	cmd := exec.Command(os.Args[0], "terminal", "--session="+session, "hello")
	cmd.Env, cmd.Dir = append(slices.Clone(env), envTestMain+"=1", goraceEnv()), cwd
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited; _ = exec.Command("pkill", "-f", "sleep "+marker).Run() })
	sleeping := func() bool {
		out, _ := exec.Command("pgrep", "-f", "sleep "+marker).Output()
		return strings.TrimSpace(string(out)) != ""
	}
	runs := filepath.Join(home, ".local", "share", "claude-relay", "runs")
	if !poll.Within(extTimeout, func() bool {
		entries, _ := os.ReadDir(runs)
		return sleeping() && len(entries) > 0
	}) {
		t.Fatal("the terminal's CLI never ran, or its run was never recorded")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited

	out, errOut, code := runMain(t, env, "spool", "flush")
	if code != 0 || !strings.Contains(out, "ended 1 run(s) whose helper had died") {
		t.Errorf("spool flush: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !poll.Within(extTimeout, func() bool { return !sleeping() }) {
		t.Error("the dead terminal helper's CLI still runs")
	}
	st, err := sqlite.Open(t.Context(), filepath.Join(home, ".local", "share", "claude-relay", "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sess, err := st.Session(t.Context(), session)
	if err != nil || sess.Status != store.StatusFailed || sess.Source != store.SourceTerminal {
		t.Fatalf("session %+v, %v; want a failed terminal session", sess, err)
	}
	evs, err := st.Events(t.Context(), session, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var ends []string
	for _, e := range evs {
		if e.EventType == wire.TypeRunFailed {
			var d wire.RunEnded
			_ = json.Unmarshal(e.EventData, &d)
			ends = append(ends, d.Reason)
		}
	}
	if !slices.Equal(ends, []string{wire.ReasonHelperExited}) {
		t.Errorf("run ends %q, want one helper_exited", ends)
	}
}
