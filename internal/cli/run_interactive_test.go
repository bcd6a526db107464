package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
	"github.com/claude-relay/claude-relay/internal/testkit/tmux"
)

// ttyRun runs `claude-relay run args...` (this test binary) on a terminal
// in tmux, in cwd, with the real CLI against api. The exit status lands in
// the returned file once the run ends.
func ttyRun(t *testing.T, cli *realcli.CLI, api *mockapi.Server, cwd string, args ...string) (*tmux.Session, string) {
	t.Helper()
	return ttyRunEnv(t, cli, api, cwd, nil, args...)
}

// ttyRunEnv is ttyRun with more environment variables.
func ttyRunEnv(t *testing.T, cli *realcli.CLI, api *mockapi.Server, cwd string, env []string, args ...string) (*tmux.Session, string) {
	t.Helper()
	exitFile := filepath.Join(t.TempDir(), "exit")
	var b strings.Builder
	b.WriteString("cd " + tmux.Quote(cwd) + " && env -i")
	for _, kv := range append(append(helperEnv(t, cli, api), "TERM=xterm-256color"), env...) {
		b.WriteString(" " + tmux.Quote(kv))
	}
	b.WriteString(" " + tmux.Quote(os.Args[0]) + " run")
	for _, a := range args {
		b.WriteString(" " + tmux.Quote(a))
	}
	// The shell stays so the last screen can still be read.
	b.WriteString("; echo exit=$? > " + tmux.Quote(exitFile) + "; sleep 60")
	return tmux.Start(t, b.String()), exitFile
}

// waitExit waits for the run to end and returns its exit status line.
func waitExit(s *tmux.Session, exitFile string) string {
	ok := s.WaitFor(extTimeout, func(string) bool {
		b, _ := os.ReadFile(exitFile)
		return strings.TrimSpace(string(b)) != ""
	})
	if !ok {
		s.Fail("the run did not end")
	}
	b, _ := os.ReadFile(exitFile)
	return strings.TrimSpace(string(b))
}

// prompts counts the lines of a screen that are run -i's "> " prompt, with
// or without what was typed after it.
func prompts(screen string) int {
	n := 0
	for _, l := range strings.Split(screen, "\n") {
		if l == ">" || strings.HasPrefix(l, "> ") {
			n++
		}
	}
	return n
}

// `run -i` asks for a follow-up after each answer, runs it as the next turn
// of the same conversation, and ends on an empty line; the backend has both
// turns.
func TestRunInteractive(t *testing.T) {
	t.Parallel()
	cli := realcli.RealCLI(t)
	tmux.Require(t)
	api := mockapi.New(t, mockapi.Script{mockapi.TextTurn("first answer"), mockapi.TextTurn("second answer")})
	cwd := trustedDir(t, cli)
	session := "sess-run-i"
	s, exitFile := ttyRun(t, cli, api, cwd, "-i", "--session="+session, "--max-turns=4", "first question")
	if !s.WaitFor(extTimeout, func(scr string) bool { return strings.Contains(scr, "first answer") && prompts(scr) == 1 }) {
		s.Fail("no answer and > prompt")
	}
	s.Keys("-l", "a follow-up question")
	s.Keys("Enter")
	if !s.WaitFor(extTimeout, func(scr string) bool { return strings.Contains(scr, "second answer") && prompts(scr) == 2 }) {
		s.Fail("no second answer and > prompt")
	}
	s.Keys("Enter")
	if code := waitExit(s, exitFile); code != "exit=0" {
		s.Fail("the run ended with %s", code)
	}
	scr := s.Screen()
	if strings.Count(scr, "first answer") != 1 || strings.Count(scr, "second answer") != 1 {
		s.Fail("each answer should show once")
	}
	// The second turn reached the API with the first exchange.
	req := mainRequestWith(t, api, "a follow-up question")
	if u, a := requestText(req, "user"), requestText(req, "assistant"); !strings.Contains(u, "first question") || !strings.Contains(a, "first answer") {
		t.Errorf("the follow-up's request: user %q, assistant %q; want the first exchange", u, a)
	}

	// The embedded backend ended with the run; serve on the same data dir
	// shows what it stored.
	url := startServe(t, []string{"HOME=" + cli.Home, "PATH=" + os.Getenv("PATH")}, cli.Home, "")
	be := dataDirBackend(t, cli.Home, url)
	evs := be.waitForEnd(t, session)
	var turns int
	inters := map[string]bool{}
	for _, e := range evs {
		inters[e.InteractionID] = true
		if e.EventType == "relay.turn_completed" {
			turns++
		}
	}
	if turns != 2 || len(inters) != 2 {
		t.Errorf("the backend has %d turn_completed events in %d interactions, want 2 in 2", turns, len(inters))
	}
	if got := assistantTexts(evs, ""); !slices.Equal(got, []string{"first answer", "second answer"}) {
		t.Errorf("assistant texts at the backend %q", got)
	}
	slices.SortFunc(evs, func(a, b store.Event) int { return int(a.Cursor - b.Cursor) })
	if last := evs[len(evs)-1].EventType; last != "relay.run_completed" {
		t.Errorf("the backend's last event is %s, want relay.run_completed", last)
	}
}

// `run --partial` on a terminal shows the answer as it comes, once.
func TestRunInteractivePartial(t *testing.T) {
	t.Parallel()
	cli := realcli.RealCLI(t)
	tmux.Require(t)
	answer := "streamed piece by piece, this answer shows up once"
	// A second between deltas: the screen shows the answer's start alone
	// for a while.
	api := mockapi.New(t, mockapi.Script{{Blocks: []mockapi.Block{mockapi.Text(answer)}, DeltaDelay: time.Second}})
	cwd := trustedDir(t, cli)
	s, exitFile := ttyRun(t, cli, api, cwd, "--partial", "--max-turns=2", "stream it")
	if !s.WaitFor(extTimeout, func(scr string) bool {
		return strings.Contains(scr, "streamed piece by") && !strings.Contains(scr, answer)
	}) {
		s.Fail("the answer did not show as it came")
	}
	if code := waitExit(s, exitFile); code != "exit=0" {
		s.Fail("the run ended with %s", code)
	}
	scr := strings.ReplaceAll(s.Screen(), "\n", "")
	if n := strings.Count(scr, answer); n != 1 {
		s.Fail("the answer shows %d times, want once", n)
	}
}

// Ctrl-C during a `run -i` turn stops that turn alone, as in the Claude
// CLI: the turn is recorded interrupted (stopped at the terminal), the run
// asks for the next message, and an empty line ends it completed.
func TestRunInteractiveCtrlCStopsTheTurn(t *testing.T) {
	t.Parallel()
	cli := realcli.RealCLI(t)
	tmux.Require(t)
	// A long Bash command: the turn is still running when Ctrl-C comes.
	api := mockapi.New(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo start && sleep 3176", "description": "Wait a long time"}),
		mockapi.TextTurn("the answer after the stop"),
	})
	cwd := trustedDir(t, cli)
	session := "sess-run-i-ctrl-c"
	s, exitFile := ttyRun(t, cli, api, cwd, "-i", "--session="+session, "--max-turns=4", "wait a while")
	if !poll.Within(extTimeout, func() bool {
		out, _ := exec.Command("pgrep", "-f", "sleep 3176").Output()
		return len(strings.TrimSpace(string(out))) > 0
	}) {
		s.Fail("the Bash tool never ran")
	}
	s.Keys("C-c")
	if !s.WaitFor(extTimeout, func(scr string) bool {
		return strings.Contains(scr, "turn interrupted: stopped at the terminal") && prompts(scr) == 1
	}) {
		s.Fail("Ctrl-C did not stop the turn and ask for the next message")
	}
	s.Keys("-l", "go on")
	s.Keys("Enter")
	if !s.WaitFor(extTimeout, func(scr string) bool { return strings.Contains(scr, "the answer after the stop") && prompts(scr) == 2 }) {
		s.Fail("no answer to the message after the stop")
	}
	s.Keys("Enter")
	if code := waitExit(s, exitFile); code != "exit=0" {
		s.Fail("the run ended with %s", code)
	}

	url := startServe(t, []string{"HOME=" + cli.Home, "PATH=" + os.Getenv("PATH")}, cli.Home, "")
	be := dataDirBackend(t, cli.Home, url)
	evs := be.waitForEnd(t, session)
	var statuses []string
	for _, e := range evs {
		if e.EventType == "relay.turn_completed" {
			var d struct {
				Status, By, Reason string
			}
			_ = json.Unmarshal(e.EventData, &d)
			statuses = append(statuses, d.Status+"/"+d.By+"/"+d.Reason)
		}
	}
	if want := []string{"interrupted/tty/stopped at the terminal", "completed//"}; !slices.Equal(statuses, want) {
		t.Errorf("turns at the backend %q, want %q", statuses, want)
	}
	var sess store.Session
	if be.get(t, "/api/sessions/"+session, &sess); sess.Status != store.StatusCompleted {
		t.Errorf("session status %q, want completed", sess.Status)
	}
}
