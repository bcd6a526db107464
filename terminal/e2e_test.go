//go:build unix

package terminal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/server/store/sqlite"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
	"github.com/claude-relay/claude-relay/internal/testkit/proctag"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
	"github.com/claude-relay/claude-relay/internal/testkit/tmux"
)

// e2eWait bounds every wait on the real CLI: its first start is slow on a
// cold cache, and -race slows the relay down.
const e2eWait = 60 * time.Second

// e2eEnv is one isolated end-to-end setup: the real CLI with its own HOME
// (which is also where the embedded backend keeps relay.db), a trusted
// working directory, the scripted API, and a private TMPDIR.
type e2eEnv struct {
	t      *testing.T
	relay  string
	cli    *realcli.CLI
	api    *mockapi.Server
	cwd    string
	tmpdir string
	tag    string
	env    []string
}

func newE2E(t *testing.T, script mockapi.Script) *e2eEnv {
	t.Helper()
	cli := realcli.RealCLI(t)
	tmux.Require(t)
	e := &e2eEnv{t: t, relay: relayBinary(t), cli: cli, api: mockapi.New(t, script), cwd: t.TempDir(), tmpdir: t.TempDir()}
	cli.TrustDir(e.cwd)
	e.tag = fmt.Sprintf("%d-%s", os.Getpid(), strings.NewReplacer("/", "-").Replace(t.Name()))
	e.env = append(cli.Env(t, e.api.URL()),
		"CLAUDE_RELAY_CLAUDE_PATH="+cli.Path,
		"TMPDIR="+e.tmpdir,
		"TERM=xterm-256color",
		proctag.Entry(e.tag),
	)
	// Registered after the mock API: runs before it closes.
	t.Cleanup(func() { proctag.Kill(t, e.tag) })
	return e
}

// command is a shell command line that runs claude-relay with args in the
// isolated environment only, and leaves its exit status in exitFile.
func (e *e2eEnv) command(exitFile string, args ...string) string {
	var b strings.Builder
	b.WriteString("env -i")
	for _, kv := range e.env {
		b.WriteString(" " + shellQuote(kv))
	}
	b.WriteString(" " + shellQuote(e.relay))
	for _, a := range args {
		b.WriteString(" " + shellQuote(a))
	}
	fmt.Fprintf(&b, "; echo $? > %s.tmp && mv %s.tmp %s", shellQuote(exitFile), shellQuote(exitFile), shellQuote(exitFile))
	return b.String()
}

// background runs claude-relay with args to its end, outside tmux.
func (e *e2eEnv) background(args ...string) string {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e2eWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.relay, args...)
	cmd.Env, cmd.Dir = e.env, e.cwd
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		e.t.Fatalf("claude-relay %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// terminal runs `claude-relay terminal args...` in a fresh tmux session,
// drives it until the screen shows want, exits the CLI with /exit and
// returns claude-relay's exit status.
func (e *e2eEnv) terminal(want string, args ...string) int {
	e.t.Helper()
	exitFile := filepath.Join(e.t.TempDir(), "exit")
	tm := tmux.Start(e.t, e.command(exitFile, append([]string{"terminal"}, args...)...))
	if !waitFor(tm, want, exitFile) {
		tm.Fail("the screen never showed %q", want)
	}
	tm.Keys("-l", "/exit")
	time.Sleep(300 * time.Millisecond) // let the command menu settle
	tm.Keys("Enter")
	code, ok := waitExit(exitFile, 20*time.Second)
	if !ok {
		// The documented fallback: Ctrl-C twice.
		tm.Keys("C-c")
		time.Sleep(300 * time.Millisecond)
		tm.Keys("C-c")
		if code, ok = waitExit(exitFile, e2eWait); !ok {
			tm.Fail("claude-relay terminal did not exit after /exit and Ctrl-C twice")
		}
	}
	// Everything it started ends with it.
	var left []int
	if !poll.Within(10*time.Second, func() bool { left = proctag.Find(e.tag); return len(left) == 0 }) {
		e.t.Errorf("processes left after claude-relay terminal exited: %v", left)
	}
	return code
}

func waitExit(exitFile string, d time.Duration) (int, bool) {
	var code int
	ok := poll.Within(d, func() bool {
		b, err := os.ReadFile(exitFile)
		if err != nil {
			return false
		}
		code, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return code, ok
}

// approve matches what the CLI asks on the way: the tool permission prompt
// ("Do you want to proceed? ❯ 1. Yes"), the trust dialog ("1. Yes,
// proceed") and notices that want Enter. Enter picks the highlighted first
// choice, which is the approving one.
var approve = regexp.MustCompile(`(?i)❯\s*1\.\s*Yes|Enter to (confirm|continue)|Press Enter`)

// waitFor polls the screen until it shows want, answering prompts, or until
// claude-relay exits (exitFile) or e2eWait passes.
func waitFor(s *tmux.Session, want, exitFile string) bool {
	var answered string
	var answeredAt time.Time
	exited := false
	shown := s.WaitFor(e2eWait, func(scr string) bool {
		if strings.Contains(scr, want) {
			return true
		}
		if _, err := os.Stat(exitFile); err == nil {
			exited = true
			return true
		}
		// Answer a prompt once; again only if it is still there a while later.
		if approve.MatchString(scr) && (scr != answered || time.Since(answeredAt) > 3*time.Second) {
			s.Keys("Enter")
			answered, answeredAt = scr, time.Now()
		}
		return false
	})
	return shown && !exited
}

// events reads a session's events and derived state from the embedded
// backend's database, after the processes that wrote it have ended.
func (e *e2eEnv) events(session string) ([]store.Event, store.Session) {
	e.t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(e.cli.Home, ".local", "share", "claude-relay", "relay.db"))
	if err != nil {
		e.t.Fatalf("open the embedded backend's database: %v", err)
	}
	defer st.Close()
	evs, err := st.Events(ctx, session, 0, 100000)
	if err != nil {
		e.t.Fatalf("events of %s: %v", session, err)
	}
	sess, err := st.Session(ctx, session)
	if err != nil {
		e.t.Fatalf("session %s: %v", session, err)
	}
	return evs, sess
}

// hookInput is the part of a hook input the tests look at.
type hookInput struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	Event          string          `json:"hook_event_name"`
	Prompt         string          `json:"prompt"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolResponse   json.RawMessage `json:"tool_response"`
}

// checkTerminalRun checks the events of one terminal interaction: framed by
// relay.run_started and relay.run_completed (exit 0), seq 1..N, the wanted
// hooks and transcript lines, one conversation ID. It returns the hook
// inputs by event.
func checkTerminalRun(t *testing.T, evs []store.Event, interaction string, wantHooks ...string) map[string][]hookInput {
	t.Helper()
	var mine []store.Event
	for _, ev := range evs {
		if ev.InteractionID == interaction {
			mine = append(mine, ev)
		}
	}
	var types []string
	for _, ev := range mine {
		types = append(types, ev.EventType)
	}
	t.Logf("events of interaction %s: %v", interaction, types)
	if len(mine) < 2 {
		t.Fatalf("interaction %s has %d events, want a whole run", interaction, len(mine))
	}
	for i, ev := range mine {
		if ev.Seq != int64(i+1) {
			t.Errorf("event %d (%s) has seq %d, want %d: seqs are 1..N in order", i, ev.EventType, ev.Seq, i+1)
		}
	}
	if mine[0].EventType != "relay.run_started" {
		t.Errorf("first event %s, want relay.run_started", mine[0].EventType)
	}
	last := mine[len(mine)-1]
	var done struct {
		ExitCode       *int   `json:"exit_code"`
		ConversationID string `json:"conversation_id"`
	}
	json.Unmarshal(last.EventData, &done) //nolint:errcheck // checked below
	if last.EventType != "relay.run_completed" || done.ExitCode == nil || *done.ExitCode != 0 {
		t.Errorf("last event %s %s, want relay.run_completed with exit_code 0", last.EventType, last.EventData)
	}
	hooks := map[string][]hookInput{}
	transcript := map[string]int{}
	sessions := map[string]bool{}
	for _, ev := range mine {
		switch {
		case strings.HasPrefix(ev.EventType, "hook."):
			var in hookInput
			if err := json.Unmarshal(ev.EventData, &in); err != nil {
				t.Errorf("%s data is not a hook input: %v", ev.EventType, err)
			}
			if "hook."+in.Event != ev.EventType {
				t.Errorf("%s carries hook_event_name %q", ev.EventType, in.Event)
			}
			if ev.Source != "terminal" {
				t.Errorf("%s source %q, want terminal", ev.EventType, ev.Source)
			}
			hooks[in.Event] = append(hooks[in.Event], in)
			sessions[in.SessionID] = true
		case strings.HasPrefix(ev.EventType, "transcript."):
			transcript[strings.TrimPrefix(ev.EventType, "transcript.")]++
		}
	}
	for _, h := range wantHooks {
		if len(hooks[h]) == 0 {
			t.Errorf("no hook.%s event", h)
		}
	}
	if transcript["user"] == 0 || transcript["assistant"] == 0 {
		t.Errorf("transcript events %v, want user and assistant lines", transcript)
	}
	if len(sessions) != 1 || sessions[""] {
		t.Errorf("hook inputs carry session IDs %v, want one", sessions)
	}
	if !sessions[done.ConversationID] {
		t.Errorf("relay.run_completed conversation_id %q, hooks had %v", done.ConversationID, sessions)
	}
	return hooks
}

func checkNoPrivateDirs(t *testing.T, tmpdir string) {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(tmpdir, "claude-relay-terminal-*"))
	if len(left) > 0 {
		t.Errorf("private settings dirs left in TMPDIR: %v", left)
	}
}

var echoScript = mockapi.Script{
	mockapi.ToolTurn("Bash", map[string]any{"command": "echo term-ok", "description": "Echo term-ok"}),
	mockapi.TextTurn("terminal done"),
}

func TestE2ETerminalToolRun(t *testing.T) {
	e := newE2E(t, echoScript)
	const session, interaction = "sess-term-1", "int-term-1"
	code := e.terminal("terminal done", "--session="+session, "--interaction="+interaction, "--cwd="+e.cwd, "Run the echo")
	if code != 0 {
		t.Errorf("claude-relay terminal exit status %d, want 0", code)
	}
	checkNoPrivateDirs(t, e.tmpdir)
	if res := e.api.ToolResults(); len(res) != 1 || !strings.Contains(res[0].Content, "term-ok") {
		t.Errorf("tool results sent to the API %+v, want the echo's term-ok", res)
	}

	evs, sess := e.events(session)
	// SessionStart comes through the command hook (claude-relay hook-post),
	// the others over HTTP.
	hooks := checkTerminalRun(t, evs, interaction, "SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd")
	projects := filepath.Join(e.cli.Home, ".claude", "projects") + string(filepath.Separator)
	if got := hooks["Stop"]; len(got) > 0 && !strings.HasPrefix(got[0].TranscriptPath, projects) {
		t.Errorf("transcript_path %q, want one under %s", got[0].TranscriptPath, projects)
	}
	if got := hooks["UserPromptSubmit"]; len(got) > 0 && got[0].Prompt != "Run the echo" {
		t.Errorf("UserPromptSubmit prompt %q, want %q", got[0].Prompt, "Run the echo")
	}
	var pre []string
	for _, in := range hooks["PreToolUse"] {
		pre = append(pre, in.ToolName+" "+string(in.ToolInput))
	}
	if !slices.ContainsFunc(pre, func(s string) bool { return strings.HasPrefix(s, "Bash ") && strings.Contains(s, "echo term-ok") }) {
		t.Errorf("PreToolUse inputs %v, want the Bash echo term-ok", pre)
	}
	if post := hooks["PostToolUse"]; len(post) == 0 || !strings.Contains(string(post[0].ToolResponse), "term-ok") {
		t.Errorf("PostToolUse inputs %+v, want a tool_response with term-ok", post)
	}
	if id := hooks["Stop"]; len(id) > 0 && sess.ExternalConversationID != id[0].SessionID {
		t.Errorf("session external_conversation_id %q, want the hooks' session_id %q", sess.ExternalConversationID, id[0].SessionID)
	}
	if sess.Status != store.StatusCompleted {
		t.Errorf("session status %q, want %q", sess.Status, store.StatusCompleted)
	}
}

func TestE2ETerminalPromptFile(t *testing.T) {
	e := newE2E(t, echoScript)
	const session, interaction = "sess-term-pf", "int-term-pf"
	promptFile := filepath.Join(t.TempDir(), "prompt.txt")
	const prompt = "Run the echo, from a file"
	if err := os.WriteFile(promptFile, []byte(prompt), 0o600); err != nil {
		t.Fatal(err)
	}
	code := e.terminal("terminal done", "--session="+session, "--interaction="+interaction, "--cwd="+e.cwd, "--prompt-file="+promptFile)
	if code != 0 {
		t.Errorf("claude-relay terminal exit status %d, want 0", code)
	}
	if _, err := os.Stat(promptFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the prompt file is still there (stat: %v), want it removed", err)
	}
	checkNoPrivateDirs(t, e.tmpdir)
	evs, _ := e.events(session)
	hooks := checkTerminalRun(t, evs, interaction, "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")
	if got := hooks["UserPromptSubmit"]; len(got) > 0 && got[0].Prompt != prompt {
		t.Errorf("UserPromptSubmit prompt %q, want the file's %q", got[0].Prompt, prompt)
	}
	var started struct{ Prompt string }
	json.Unmarshal(evs[0].EventData, &started) //nolint:errcheck
	if started.Prompt != prompt {
		t.Errorf("relay.run_started prompt %q, want %q", started.Prompt, prompt)
	}
}

func TestE2ETerminalResume(t *testing.T) {
	e := newE2E(t, mockapi.Script{mockapi.TextTurn("first answer"), mockapi.TextTurn("second answer")})
	const session = "sess-term-resume"
	e.background("run", "--session="+session, "--interaction=int-bg", "--cwd="+e.cwd, "--max-turns=3", "first prompt here")
	_, sess := e.events(session)
	convID := sess.ExternalConversationID
	if convID == "" {
		t.Fatalf("the background run left no conversation ID: %+v", sess)
	}

	code := e.terminal("second answer", "--session="+session, "--interaction=int-term", "--cwd="+e.cwd, "--resume="+convID, "again please")
	if code != 0 {
		t.Errorf("claude-relay terminal exit status %d, want 0", code)
	}
	checkNoPrivateDirs(t, e.tmpdir)

	last, ok := e.api.LastMainRequest()
	if !ok {
		t.Fatal("the API got no main request")
	}
	var texts []string
	for _, m := range last.Messages {
		for _, c := range m.Content {
			if c.Type == "text" {
				texts = append(texts, m.Role+": "+c.Text)
			}
		}
	}
	joined := strings.Join(texts, "\n")
	for _, want := range []string{"first prompt here", "first answer", "again please"} {
		if !strings.Contains(joined, want) {
			t.Errorf("the resumed request's messages lack %q:\n%s", want, joined)
		}
	}

	evs, sess := e.events(session)
	hooks := checkTerminalRun(t, evs, "int-term", "UserPromptSubmit", "Stop")
	for ev, ins := range hooks {
		for _, in := range ins {
			if in.SessionID != convID {
				t.Errorf("hook %s session_id %q, want the resumed %q", ev, in.SessionID, convID)
			}
		}
	}
	if sess.ExternalConversationID != convID {
		t.Errorf("session external_conversation_id %q after the resume, want %q", sess.ExternalConversationID, convID)
	}
	// The earlier run forwarded its own transcript lines: the resumed run
	// must send only what it adds.
	var newRows int
	for _, ev := range evs {
		if ev.InteractionID != "int-term" || !strings.HasPrefix(ev.EventType, "transcript.") {
			continue
		}
		newRows++
		if strings.Contains(string(ev.EventData), "first prompt here") {
			t.Errorf("the resumed run re-sent an earlier transcript line: %.200s", ev.EventData)
		}
	}
	if newRows == 0 {
		t.Error("the resumed run sent no transcript lines of its own")
	}
}
