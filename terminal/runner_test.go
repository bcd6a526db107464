//go:build unix

package terminal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/launch"
	"github.com/claude-relay/claude-relay/internal/proc"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
	"github.com/claude-relay/claude-relay/internal/testkit/syncbuf"
)

// The fake interactive CLI is this test binary run with helperEnv=fakecli:
// it reads --settings like the real CLI, fires hooks the way each is
// configured (HTTP POST, or the command through sh with the input on stdin;
// the command is `<test binary> hook-post URL`, served by the same helper),
// writes a transcript, and exits with FAKE_EXIT.
const (
	fakeOut        = "FAKE_OUT"        // directory for what the fake reports
	fakeTranscript = "FAKE_TRANSCRIPT" // the transcript path the hooks name
	fakeExit       = "FAKE_EXIT"       // exit status (default 0)
	fakeConv       = "conv-123"        // the session_id of every hook input
)

func helperMain(role string, args []string) int {
	if len(args) == 2 && args[0] == "hook-post" {
		return hookPost(args[1])
	}
	switch role {
	case "fakeusage": // usage_runner_test.go
		if err := fakeUsageCLI(args); err != nil {
			fmt.Fprintln(os.Stderr, "fake CLI:", err)
			return 97
		}
		return 0
	case "fakecli":
		if err := fakeCLI(args); err != nil {
			fmt.Fprintln(os.Stderr, "fake CLI:", err)
			return 97
		}
		var code int
		fmt.Sscan(os.Getenv(fakeExit), &code) //nolint:errcheck // default 0
		return code
	case "sleeper":
		// Waits for SIGTERM, then dies of it the default way.
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM)
		os.WriteFile(filepath.Join(os.Getenv(fakeOut), "ready"), nil, 0o600) //nolint:errcheck
		select {
		case <-c:
		case <-time.After(time.Minute):
		}
		signal.Reset(syscall.SIGTERM)
		syscall.Kill(os.Getpid(), syscall.SIGTERM) //nolint:errcheck
		time.Sleep(time.Minute)
		return 1
	case "stubborn":
		// Ignores SIGTERM: only the SIGKILL that follows ends it.
		signal.Ignore(syscall.SIGTERM)
		os.WriteFile(filepath.Join(os.Getenv(fakeOut), "ready"), nil, 0o600) //nolint:errcheck
		time.Sleep(time.Minute)
		return 1
	}
	fmt.Fprintln(os.Stderr, "unknown helper role", role)
	return 98
}

// hookPost is what `claude-relay hook-post URL` does: stdin to URL.
func hookPost(url string) int {
	body, _ := io.ReadAll(os.Stdin)
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err == nil {
		resp.Body.Close()
	}
	return 0
}

type fakeSettings struct {
	Hooks map[string][]struct {
		Matcher string `json:"matcher"`
		Hooks   []struct {
			Type    string `json:"type"`
			URL     string `json:"url"`
			Command string `json:"command"`
			Timeout int    `json:"timeout"`
		} `json:"hooks"`
	} `json:"hooks"`
}

// fakeReport is what the fake CLI saw, for the test to check.
type fakeReport struct {
	Args         []string
	Env          []string
	SettingsPath string
	SettingsMode os.FileMode
	Settings     fakeSettings
	Statuses     map[string]int
}

func fakeCLI(args []string) error {
	rep := fakeReport{Args: args, Env: os.Environ(), Statuses: map[string]int{}}
	for _, a := range args {
		if p, ok := strings.CutPrefix(a, "--settings="); ok {
			rep.SettingsPath = p
		}
	}
	fi, err := os.Stat(rep.SettingsPath)
	if err != nil {
		return err
	}
	rep.SettingsMode = fi.Mode().Perm()
	b, err := os.ReadFile(rep.SettingsPath)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &rep.Settings); err != nil {
		return err
	}
	defer func() {
		b, _ := json.Marshal(rep)
		os.WriteFile(filepath.Join(os.Getenv(fakeOut), "report.json"), b, 0o600) //nolint:errcheck
	}()

	tpath := os.Getenv(fakeTranscript)
	fire := func(event string, extra map[string]any) error {
		in := map[string]any{"session_id": fakeConv, "transcript_path": tpath, "cwd": "/x", "hook_event_name": event}
		for k, v := range extra {
			in[k] = v
		}
		body, _ := json.Marshal(in)
		hooks := rep.Settings.Hooks[event]
		if len(hooks) != 1 || len(hooks[0].Hooks) != 1 {
			return fmt.Errorf("settings for %s: %+v", event, hooks)
		}
		h := hooks[0].Hooks[0]
		switch h.Type {
		case "http":
			resp, err := http.Post(h.URL, "application/json", bytes.NewReader(body))
			if err != nil {
				return err
			}
			resp.Body.Close()
			rep.Statuses[event] = resp.StatusCode
		case "command":
			cmd := exec.Command("sh", "-c", h.Command)
			cmd.Stdin = bytes.NewReader(body)
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("%s command hook: %w: %s", event, err, out)
			}
			rep.Statuses[event] = 0
		default:
			return fmt.Errorf("hook type %q", h.Type)
		}
		return nil
	}
	line := func(typ, uuid, text string) string {
		m := map[string]any{"type": typ, "message": map[string]any{"content": text}}
		if uuid != "" {
			m["uuid"] = uuid
		}
		b, _ := json.Marshal(m)
		return string(b) + "\n"
	}
	appendT := func(s string) error {
		f, err := os.OpenFile(tpath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.WriteString(s)
		return err
	}

	// The first hook names a transcript whose directory does not exist yet.
	if err := fire("SessionStart", map[string]any{"source": "startup"}); err != nil {
		return err
	}
	if err := fire("UserPromptSubmit", map[string]any{"prompt": args[len(args)-1]}); err != nil {
		return err
	}
	time.Sleep(150 * time.Millisecond)
	if err := os.MkdirAll(filepath.Dir(tpath), 0o700); err != nil {
		return err
	}
	a1 := line("assistant", "a1", "running it")
	if err := appendT(line("user", "u1", "the prompt") + a1[:10]); err != nil {
		return err
	}
	// Half a line stays unsent while a hook goes by.
	time.Sleep(150 * time.Millisecond)
	if err := fire("PreToolUse", map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": "echo hi"}}); err != nil {
		return err
	}
	if err := appendT(a1[10:] + a1 + line("user", "t1", "tool result")); err != nil {
		return err
	}
	if err := fire("PostToolUse", map[string]any{"tool_name": "Bash", "tool_response": map[string]any{"stdout": "hi"}}); err != nil {
		return err
	}
	// The file is replaced by a copy that repeats the lines so far: only
	// the new one may go out.
	tmp := tpath + ".tmp"
	if err := os.WriteFile(tmp, []byte(line("user", "u1", "the prompt")+a1+line("user", "t1", "tool result")+line("assistant", "a2", "all done")), 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, tpath); err != nil {
		return err
	}
	if err := fire("Stop", nil); err != nil {
		return err
	}
	if err := appendT(line("summary", "", "no uuid") + "not json\n"); err != nil {
		return err
	}
	if err := fire("SessionEnd", map[string]any{"reason": "exit"}); err != nil {
		return err
	}
	// A last line written just before exiting is still forwarded.
	return appendT(line("system", "s1", "bye"))
}

// fakeEvents records what the runner enqueues.
type fakeEvents struct {
	mu  sync.Mutex
	evs []forwarder.Event
	err error
}

func (f *fakeEvents) Enqueue(ev forwarder.Event) (forwarder.Accepted, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.evs = append(f.evs, ev)
	return forwarder.Accepted{EventID: fmt.Sprint(len(f.evs)), Seq: int64(len(f.evs))}, f.err
}

func (f *fakeEvents) all() []forwarder.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.evs)
}

func types(evs []forwarder.Event, prefix string) []string {
	var out []string
	for _, ev := range evs {
		if strings.HasPrefix(ev.Type, prefix) {
			out = append(out, ev.Type)
		}
	}
	return out
}

// fakeRun sets up a runner on the fake CLI with a private TMPDIR.
func fakeRun(t *testing.T, role string, extraEnv ...string) (Options, *fakeEvents, string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tmpdir, out := t.TempDir(), t.TempDir()
	t.Setenv("TMPDIR", tmpdir)
	logs, err := os.Create(filepath.Join(t.TempDir(), "cli-output"))
	if err != nil {
		t.Fatal(err)
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		devnull.Close()
		logs.Close()
		if b, _ := os.ReadFile(logs.Name()); t.Failed() && len(b) > 0 {
			t.Logf("fake CLI output:\n%s", b)
		}
	})
	ev := &fakeEvents{}
	o := Options{
		CLIPath: self, Exe: self, Prompt: "do the thing", Cwd: t.TempDir(),
		BaseEnv: append([]string{
			helperEnv + "=" + role, fakeOut + "=" + out, "PATH=" + os.Getenv("PATH"),
			// Neither may reach the CLI: the relay sets its own marker.
			"CLAUDECODE=1", proc.MarkerEnv + "=stale-run",
		}, extraEnv...),
		SessionID: "sess-1", InteractionID: "int-1", RunID: "run-" + strings.ReplaceAll(t.Name(), "/", "-"),
		Events: ev, Stdin: devnull, Stdout: logs, Stderr: logs,
	}
	return o, ev, tmpdir
}

// outDir is where the fake CLI of o reports.
func outDir(o Options) string {
	for _, kv := range o.BaseEnv {
		if v, ok := strings.CutPrefix(kv, fakeOut+"="); ok {
			return v
		}
	}
	return ""
}

func readReport(t *testing.T, o Options) fakeReport {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(outDir(o), "report.json"))
	if err != nil {
		t.Fatalf("the fake CLI left no report: %v", err)
	}
	var rep fakeReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestRunForwardsHooksAndTranscript(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent()) // the tailer and the callback server are stopped
	transcript := filepath.Join(t.TempDir(), "projects", "-x", fakeConv+".jsonl")
	o, ev, tmpdir := fakeRun(t, "fakecli", fakeTranscript+"="+transcript, fakeExit+"=3")

	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	rep := readReport(t, o)
	evs := ev.all()
	for _, e := range evs {
		t.Logf("%s %s", e.Type, e.Data)
	}

	if res.ExitCode != 3 || res.ConversationID != fakeConv || res.Hooks != 6 || res.TranscriptRows != 6 {
		t.Errorf("result %+v, want exit 3, conversation %s, 6 hooks, 6 transcript rows", res, fakeConv)
	}
	wantHooks := []string{"hook.SessionStart", "hook.UserPromptSubmit", "hook.PreToolUse", "hook.PostToolUse", "hook.Stop", "hook.SessionEnd"}
	if got := types(evs, "hook."); !slices.Equal(got, wantHooks) {
		t.Errorf("hook events %v, want %v", got, wantHooks)
	}
	// a1 comes once although the file holds it twice and is then replaced
	// by a copy holding every line again.
	wantRows := []string{"transcript.user", "transcript.assistant", "transcript.user", "transcript.assistant", "transcript.summary", "transcript.system"}
	if got := types(evs, "transcript."); !slices.Equal(got, wantRows) {
		t.Errorf("transcript events %v, want %v", got, wantRows)
	}
	var uuids []string
	for _, e := range evs {
		if strings.HasPrefix(e.Type, "transcript.") {
			var l struct{ UUID string }
			json.Unmarshal(e.Data, &l) //nolint:errcheck
			uuids = append(uuids, l.UUID)
		}
	}
	if want := []string{"u1", "a1", "t1", "a2", "", "s1"}; !slices.Equal(uuids, want) {
		t.Errorf("transcript uuids %q, want %q", uuids, want)
	}
	if got := types(evs, "relay.malformed_line"); len(got) != 1 {
		t.Errorf("%d relay.malformed_line events, want 1 for the line that is not JSON", len(got))
	}

	if evs[0].Type != "relay.run_started" {
		t.Errorf("first event %s, want relay.run_started", evs[0].Type)
	}
	// The CLI exited 3: the run failed (the backend's session status follows
	// the event type), saying so with the status.
	last := evs[len(evs)-1]
	var done struct {
		ExitCode       int    `json:"exit_code"`
		ConversationID string `json:"conversation_id"`
		Mode           string `json:"mode"`
		Status         string `json:"status"`
		Reason         string `json:"reason"`
		Result         struct {
			ExitCode int `json:"exitCode"`
		} `json:"result"`
	}
	if err := json.Unmarshal(last.Data, &done); err != nil || last.Type != "relay.run_failed" ||
		done.ExitCode != 3 || done.Result.ExitCode != 3 || done.Status != "failed" || !strings.Contains(done.Reason, "status 3") ||
		done.ConversationID != fakeConv || done.Mode != "terminal" {
		t.Errorf("last event %s %s, want relay.run_failed with exit_code 3, a reason naming it, and conversation_id %s", last.Type, last.Data, fakeConv)
	}
	for _, e := range evs {
		if e.SessionID != o.SessionID || e.InteractionID != o.InteractionID {
			t.Errorf("%s for session %q interaction %q, want %q %q", e.Type, e.SessionID, e.InteractionID, o.SessionID, o.InteractionID)
		}
		want := "terminal"
		if strings.HasPrefix(e.Type, "relay.") {
			want = "relay"
		}
		if e.Source != want || !json.Valid(e.Data) {
			t.Errorf("%s source %q (want %s), data valid %v", e.Type, e.Source, want, json.Valid(e.Data))
		}
	}

	// Every hook was answered 200, whichever way it was delivered.
	for ev, code := range rep.Statuses {
		if httpHookEvents[ev] && code != http.StatusOK {
			t.Errorf("%s hook answered %d", ev, code)
		}
	}
	if rep.SettingsMode != 0o600 {
		t.Errorf("settings file mode %v, want 0600", rep.SettingsMode)
	}
	if !strings.HasPrefix(rep.SettingsPath, tmpdir+string(filepath.Separator)) {
		t.Errorf("settings at %s, want under TMPDIR %s", rep.SettingsPath, tmpdir)
	}
	if _, err := os.Stat(filepath.Dir(rep.SettingsPath)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the private settings dir is still there (stat: %v)", err)
	}
	if left, _ := filepath.Glob(filepath.Join(tmpdir, "claude-relay-terminal-*")); len(left) > 0 {
		t.Errorf("left in TMPDIR: %v", left)
	}
	if want := []string{"--settings=" + rep.SettingsPath, "--", o.Prompt}; !slices.Equal(rep.Args, want) {
		t.Errorf("CLI args %q, want %q", rep.Args, want)
	}
	if slices.Contains(rep.Env, "CLAUDECODE=1") || slices.Contains(rep.Env, proc.MarkerEnv+"=stale-run") ||
		!slices.Contains(rep.Env, proc.MarkerEnvEntry(o.RunID)) {
		t.Errorf("CLI environment %q: want CLAUDECODE dropped and only this run's marker", rep.Env)
	}
}

// cancelWhenReady returns a context that ends once the fake CLI of o says
// it is ready (or tailWait passed), and a wait for the goroutine that ends it.
func cancelWhenReady(o Options) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer cancel()
		poll.Within(tailWait, func() bool {
			_, err := os.Stat(filepath.Join(outDir(o), "ready"))
			return err == nil
		})
	}()
	return ctx, func() { <-done }
}

func TestRunContextEndStopsTheCLI(t *testing.T) {
	// Nothing of the run is left running: before exec's Cancel and
	// WaitDelay, a goroutine slept 5s to kill the CLI after it had exited.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	o, ev, tmpdir := fakeRun(t, "sleeper")
	ctx, wait := cancelWhenReady(o)
	res, err := Run(ctx, o)
	wait()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.ExitCode != 128+int(syscall.SIGTERM) {
		t.Errorf("exit code %d, want %d (died of SIGTERM)", res.ExitCode, 128+int(syscall.SIGTERM))
	}
	evs := ev.all()
	// We stopped it: cancelled, not failed, although it died of SIGTERM.
	if got := types(evs, ""); len(got) != 2 || got[0] != "relay.run_started" || got[1] != "relay.run_cancelled" {
		t.Errorf("events %v, want relay.run_started, relay.run_cancelled", got)
	} else if !strings.Contains(string(evs[1].Data), `"exitCode":143`) {
		t.Errorf("relay.run_cancelled %s lacks the exit status", evs[1].Data)
	}
	if left, _ := filepath.Glob(filepath.Join(tmpdir, "claude-relay-terminal-*")); len(left) > 0 {
		t.Errorf("left in TMPDIR: %v", left)
	}
}

// TestRunOutcome: the exit status decides the lifecycle event the backend
// derives the session's status from.
// TestRunContextEndKillsACLIThatIgnoresSIGTERM: SIGTERM first, SIGKILL
// StopGrace later, and the run is still a cancelled one.
func TestRunContextEndKillsACLIThatIgnoresSIGTERM(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	o, ev, _ := fakeRun(t, "stubborn")
	o.StopGrace = 100 * time.Millisecond
	ctx, wait := cancelWhenReady(o)
	res, err := Run(ctx, o)
	wait()
	if err != nil || res.ExitCode != 128+int(syscall.SIGKILL) {
		t.Fatalf("Run = %+v, %v; want exit code %d (killed)", res, err, 128+int(syscall.SIGKILL))
	}
	if got := types(ev.all(), ""); !slices.Equal(got, []string{"relay.run_started", "relay.run_cancelled"}) {
		t.Errorf("events %v, want relay.run_started, relay.run_cancelled", got)
	}
}

// TestRunFiltersTheEnvironmentLikeBackgroundRuns: claude.env goes through
// launch.Env as in executor, so an entry that would corrupt the environment
// block (a name with '=' or NUL) or fail the start (a NUL in a value) is
// left out and logged, and the CLI still starts with the rest. Before, the
// terminal path appended claude.env by hand: "BAD=NAME" reached the CLI as
// BAD, and a NUL made the start fail.
func TestRunFiltersTheEnvironmentLikeBackgroundRuns(t *testing.T) {
	transcript := filepath.Join(t.TempDir(), "t.jsonl")
	o, _, _ := fakeRun(t, "fakecli", fakeTranscript+"="+transcript, "OVERRIDDEN=base")
	o.Env = map[string]string{"FROM_CONFIG": "yes", "OVERRIDDEN": "config", "BAD=NAME": "x", "NUL\x00NAME": "x",
		"NULVALUE": "a\x00b", "CLAUDECODE": "1"}
	var logs syncbuf.Buffer
	o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	res, err := Run(context.Background(), o)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v; want exit 0 (%s)", res, err, logs.String())
	}
	rep := readReport(t, o)
	for _, want := range []string{"FROM_CONFIG=yes", "OVERRIDDEN=config", proc.MarkerEnvEntry(o.RunID)} {
		if !slices.Contains(rep.Env, want) {
			t.Errorf("CLI environment lacks %q: %q", want, rep.Env)
		}
	}
	for _, kv := range rep.Env {
		if strings.HasPrefix(kv, "BAD") || strings.HasPrefix(kv, "NUL") || strings.HasPrefix(kv, "CLAUDECODE=") {
			t.Errorf("CLI environment has %q", kv)
		}
	}
	for _, want := range []string{`claude.env entry \"BAD=NAME\"`, `claude.env entry \"NUL\\x00NAME\"`, `claude.env entry \"NULVALUE\"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs.String())
		}
	}
}

func TestRunOutcome(t *testing.T) {
	for _, tc := range []struct {
		exit         int
		typ, status  string
		reasonSubstr string
	}{
		{0, "relay.run_completed", "completed", ""},
		{1, "relay.run_failed", "failed", "the Claude CLI exited with status 1"},
		{42, "relay.run_failed", "failed", "the Claude CLI exited with status 42"},
	} {
		t.Run(fmt.Sprint("exit ", tc.exit), func(t *testing.T) {
			transcript := filepath.Join(t.TempDir(), "t.jsonl")
			o, ev, _ := fakeRun(t, "fakecli", fakeTranscript+"="+transcript, fmt.Sprint(fakeExit, "=", tc.exit))
			res, err := Run(context.Background(), o)
			if err != nil || res.ExitCode != tc.exit {
				t.Fatalf("Run = %+v, %v; want exit %d", res, err, tc.exit)
			}
			evs := ev.all()
			last := evs[len(evs)-1]
			var done struct {
				Status string `json:"status"`
				Reason string `json:"reason"`
				Result struct {
					ExitCode *int `json:"exitCode"`
				} `json:"result"`
			}
			if err := json.Unmarshal(last.Data, &done); err != nil || last.Type != tc.typ || done.Status != tc.status ||
				done.Result.ExitCode == nil || *done.Result.ExitCode != tc.exit || !strings.Contains(done.Reason, tc.reasonSubstr) ||
				(tc.reasonSubstr == "" && done.Reason != "") {
				t.Errorf("last event %s %s, want %s with status %q, result.exitCode %d and reason %q",
					last.Type, last.Data, tc.typ, tc.status, tc.exit, tc.reasonSubstr)
			}
			if n := len(types(evs, "relay.run_")); n != 2 {
				t.Errorf("%d relay.run_* events, want run_started and one end", n)
			}
		})
	}
}

func TestRunCLIMissing(t *testing.T) {
	o, ev, tmpdir := fakeRun(t, "fakecli")
	o.CLIPath = filepath.Join(t.TempDir(), "no-such-claude")
	res, err := Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), o.CLIPath) {
		t.Errorf("Run error %v, want one naming %s", err, o.CLIPath)
	}
	if res == nil || res.ExitCode != 1 {
		t.Errorf("result %+v, want exit code 1", res)
	}
	evs := ev.all()
	if got := types(evs, ""); len(got) != 2 || got[0] != "relay.run_started" || got[1] != "relay.run_failed" {
		t.Errorf("events %v, want relay.run_started, relay.run_failed", got)
	} else if !strings.Contains(string(evs[1].Data), "no-such-claude") {
		t.Errorf("relay.run_failed %s does not say what failed", evs[1].Data)
	}
	if left, _ := filepath.Glob(filepath.Join(tmpdir, "claude-relay-terminal-*")); len(left) > 0 {
		t.Errorf("left in TMPDIR: %v", left)
	}
}

func TestRunEnqueueErrorsDoNotStopTheRun(t *testing.T) {
	transcript := filepath.Join(t.TempDir(), "t.jsonl")
	o, ev, _ := fakeRun(t, "fakecli", fakeTranscript+"="+transcript)
	ev.err = errors.New("spool full")
	res, err := Run(context.Background(), o)
	if err != nil || res.ExitCode != 0 || res.Hooks != 6 {
		t.Errorf("Run = %+v, %v; want exit 0 with 6 hooks although no event was spooled", res, err)
	}
}

func TestCommand(t *testing.T) {
	const s = "--settings=/p/settings.json"
	for _, tc := range []struct {
		name string
		o    Options
		want []string
	}{
		{"prompt", Options{Prompt: "hi"}, []string{s, "--", "hi"}},
		{"no prompt", Options{Prompt: "  \n"}, []string{s}},
		{"prompt like a flag", Options{Prompt: "--help"}, []string{s, "--", "--help"}},
		{"model", Options{Model: "opus", Prompt: "p"}, []string{s, "--model=opus", "--", "p"}},
		{"resume", Options{Resume: "c-1", Prompt: "p"}, []string{s, "--resume=c-1", "--", "p"}},
		{"fork", Options{Resume: "c-1", Fork: true}, []string{s, "--resume=c-1", "--fork-session"}},
		{"fork without resume", Options{Fork: true}, []string{s}},
		{"continue", Options{Continue: true, Prompt: "p"}, []string{s, "--continue", "--", "p"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.CLIPath = "/bin/claude"
			r := &runner{o: tc.o}
			if prog, got, err := r.command("/p/settings.json"); err != nil || prog != "/bin/claude" || !slices.Equal(got, tc.want) {
				t.Errorf("command = %s %q %v, want /bin/claude %q", prog, got, err, tc.want)
			}
		})
	}
	// A base command replaces the CLI path as in background runs; its words
	// come first.
	r := &runner{o: Options{CLIPath: "/bin/claude", BaseCommand: `npx -y '@anthropic-ai/claude-code@2.1.330'`, Prompt: "p"}}
	if prog, got, err := r.command("/p/settings.json"); err != nil || prog != "npx" ||
		!slices.Equal(got, []string{"-y", "@anthropic-ai/claude-code@2.1.330", s, "--", "p"}) {
		t.Errorf("base command: %s %q %v", prog, got, err)
	}
	if _, _, err := (&runner{}).command("/p/settings.json"); !errors.Is(err, launch.ErrNoCLI) {
		t.Errorf("no CLI: %v", err)
	}
}
