package cli

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	_ "modernc.org/sqlite" // the "sqlite" driver, to age a session in serve's database

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/extension"
	"github.com/claude-relay/claude-relay/internal/localbackend"
	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/testkit/browser"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
	"github.com/claude-relay/claude-relay/internal/testkit/proctag"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
	"github.com/claude-relay/claude-relay/internal/testkit/tmux"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// TestRecordEverySource is the "done when" of issue 23 ("A true record of
// every session, from every surface"). One `serve` (SQLite) takes the
// sessions of every surface, each run by the real CLI on a scripted
// Messages API: a background one-shot `run`; a live run of the extension
// protocol with a follow-up, an interrupt during a sleeping Bash and a third
// prompt; an ACP session driven by the official ACP client with a
// session/cancel in the same place; a visible terminal in tmux with two
// typed prompts; and a helper killed with SIGKILL that never starts again.
// Headless Chromium then reads each session's list row (title, source,
// status, turns, tokens, cost, model) and page (every prompt, every turn's
// status), which must agree with what the CLI itself reported (its result
// lines as stored; a terminal run's figures as its runner posts them) and
// what the scripted API served.
//
// With CLAUDE_RELAY_SCREENSHOTS=DIR each session's page is saved as
// DIR/record-<source>.png, and the list as DIR/record-list.png.
func TestRecordEverySource(t *testing.T) {
	t.Parallel()
	realcli.RealCLI(t) // skip (or fail on CI) before starting anything
	r := newRecordEnv(t)
	t.Run("sources", func(t *testing.T) {
		for _, src := range []struct {
			name string
			run  func(*testing.T, *recordEnv) recWant
		}{
			{"background", recBackground},
			{"live", recLive},
			{"acp", recACP},
			{"terminal", recTerminal},
			{"killed-helper", recKilledHelper},
		} {
			t.Run(src.name, func(t *testing.T) {
				t.Parallel()
				want := src.run(t, r)
				r.check(t, src.name, want)
			})
		}
	})
	r.listScreenshot(t)
	r.mu.Lock()
	defer r.mu.Unlock()
	slices.SortFunc(r.table, func(a, b [8]string) int { return strings.Compare(a[0], b[0]) })
	t.Logf("what the list showed:\n%-14s | %-44s | %-10s | %-30s | %5s | %8s | %8s | %s", "source", "title", "source", "status", "turns", "tokens", "cost", "model")
	for _, row := range r.table {
		t.Logf("%-14s | %-44.44s | %-10s | %-30.30s | %5s | %8s | %8s | %s", row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7])
	}
}

// recordEnv is the one backend and the one browser every source shares.
type recordEnv struct {
	url       string
	be        backendAPI // reads with serve's token
	tokenFile string     // the helper token the sources post with
	db        string     // serve's SQLite database
	tab       *browser.Tab

	mu    sync.Mutex
	table [][8]string // what each list row showed, for the log
}

func newRecordEnv(t *testing.T) *recordEnv {
	t.Helper()
	home := t.TempDir()
	url := startServe(t, []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}, home, "")
	dataDir := filepath.Join(home, ".local", "share", "claude-relay")
	r := &recordEnv{url: url, be: dataDirBackend(t, home, url), tokenFile: localbackend.HelperTokenPath(dataDir),
		db: filepath.Join(dataDir, "relay.db")}
	if _, err := localbackend.HelperToken(dataDir); err != nil {
		t.Fatalf("serve's helper token: %v", err)
	}
	if _, err := os.Stat(r.db); err != nil {
		t.Fatalf("serve keeps no SQLite database at %s: %v", r.db, err)
	}
	r.tab = browser.New(t, browser.Options{Width: 1280, Height: 900, Timeout: 20 * time.Minute})
	abMust(t, chromedp.Do(r.tab.Ctx,
		chromedp.Navigate(url+"/login"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), r.be.token),
		chromedp.Click(chromedp.ID("login")),
	))
	browser.WaitJS(t, r.tab.Ctx, `location.pathname === "/" && document.body.dataset.state === "ready"`, 30*time.Second)
	return r
}

// recSource is one surface's own world: the real CLI with its own HOME
// (the helper's data dir and spool live there), a scripted API, a trusted
// working directory, and the environment that points its helper at serve.
// Every process it starts carries its proctag, so nothing outlives it.
type recSource struct {
	api    *mockapi.Server
	script mockapi.Script
	cwd    string
	tag    string
	env    []string
}

func (r *recordEnv) source(t *testing.T, script mockapi.Script, extra ...string) *recSource {
	t.Helper()
	cli := realcli.RealCLI(t)
	s := &recSource{api: mockapi.New(t, script), script: script, cwd: trustedDir(t, cli),
		tag: fmt.Sprintf("record-%d-%s", os.Getpid(), uuid.NewString())}
	s.env = helperEnv(t, cli, s.api, append([]string{"CLAUDE_RELAY_BACKEND_URL=" + r.url,
		"CLAUDE_RELAY_BACKEND_TOKEN_FILE=" + r.tokenFile, proctag.Entry(s.tag)}, extra...)...)
	// Registered after the API: runs before it closes.
	t.Cleanup(func() { proctag.Kill(t, s.tag) })
	return s
}

// served sums the usage the scripted API reported: each main-conversation
// answer its turn's, and with all, every other answer too (side tasks, and
// "done" past the script's end, report mockapi.DefaultUsage).
func (s *recSource) served(all bool) wire.Usage {
	var sum wire.Usage
	for _, r := range s.api.Requests() {
		if r.Path != "/v1/messages" || r.Status != 200 || (!r.Main && !all) {
			continue
		}
		u := mockapi.DefaultUsage
		if r.Main && r.Turn < len(s.script) && s.script[r.Turn].Usage != (mockapi.Usage{}) {
			u = s.script[r.Turn].Usage
		}
		sum = sum.Add(recUsage(u))
	}
	return sum
}

// model is the model the CLI asked the scripted API for (which answers
// with it).
func (s *recSource) model(t *testing.T) string {
	t.Helper()
	main := s.api.MainRequests()
	if len(main) == 0 || main[0].Model == "" {
		t.Fatalf("the CLI never asked the scripted API for a model")
	}
	return main[0].Model
}

func recUsage(u mockapi.Usage) wire.Usage {
	return wire.Usage{InputTokens: int64(u.InputTokens), OutputTokens: int64(u.OutputTokens),
		CacheReadInputTokens: int64(u.CacheReadInputTokens), CacheCreationInputTokens: int64(u.CacheCreationInputTokens)}
}

// recWant is what a session's list row and page must show.
type recWant struct {
	id       string
	title    string
	source   string // as the list shows it
	status   string // the list's badge; a prefix for a stale session's
	turns    int64
	usage    wire.Usage
	cost     float64
	model    string
	prompts  []string
	statuses []string // each turn's, in order (nil: not checked)
	says     []string // words the conversation must hold
	stale    bool
	// perTurn, when set, is each turn's own tokens and cost, which its
	// card must show.
	perTurn []recFigures
}

// recNever are words no page of these sessions may hold: each ended the
// way it was meant to.
var recNever = []string{"error_during_execution", "run failed", "No prompt text", "Follow-up (its message was not recorded)"}

// ---- the sources ---------------------------------------------------------

// recBackground: `claude-relay run` with a prompt, a Bash call and an
// answer.
func recBackground(t *testing.T, r *recordEnv) recWant {
	usage := []mockapi.Usage{{InputTokens: 1101, OutputTokens: 111, CacheReadInputTokens: 11, CacheCreationInputTokens: 1},
		{InputTokens: 1202, OutputTokens: 122}}
	s := r.source(t, mockapi.Script{
		{Blocks: []mockapi.Block{mockapi.ToolUse("Bash", map[string]any{"command": "echo record-bg-ok", "description": "Say record-bg-ok"})}, Usage: usage[0]},
		{Blocks: []mockapi.Block{mockapi.Text("background done")}, Usage: usage[1]},
	})
	const session, prompt = "rec-background", "Record a background run: echo record-bg-ok"
	out, errOut, code := runMain(t, s.env, "run", "--session="+session, "--cwd="+s.cwd, "--max-turns=4", prompt)
	if code != 0 {
		t.Fatalf("claude-relay run: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	evs := r.waitEnded(t, session)
	perTurn, sum, cost := recResults(t, evs)
	if len(perTurn) != 1 {
		t.Errorf("%d result lines stored, want the one-shot's 1", len(perTurn))
	}
	recSameTokens(t, "the result lines", sum, "the scripted API's answers", s.served(true))
	return recWant{id: session, title: prompt, source: "background", status: "completed", turns: 1, usage: sum, cost: cost,
		model: s.model(t), prompts: []string{prompt}, statuses: []string{"completed"}, perTurn: perTurn}
}

// recScript is a three-prompt conversation whose second prompt runs a Bash
// sleep that someone stops: usage[i] is answer i's.
func recScript(word, sleepArg string, usage []mockapi.Usage) mockapi.Script {
	return mockapi.Script{
		{Blocks: []mockapi.Block{mockapi.Text(word + " answer one")}, Usage: usage[0]},
		{Blocks: []mockapi.Block{mockapi.ToolUse("Bash", map[string]any{"command": "echo " + word + "-start && sleep " + sleepArg, "description": "Wait a long time"})}, Usage: usage[1]},
		{Blocks: []mockapi.Block{mockapi.Text(word + " answer three")}, Usage: usage[2]},
	}
}

// recLive: a keep_alive prompt, a follow-up interrupted while its Bash
// sleeps, a third prompt, then end.
func recLive(t *testing.T, r *recordEnv) recWant {
	const sleepArg = "3196"
	s := r.source(t, recScript("live", sleepArg, []mockapi.Usage{{InputTokens: 2101, OutputTokens: 211, CacheReadInputTokens: 21, CacheCreationInputTokens: 2},
		{InputTokens: 2202, OutputTokens: 222}, {InputTokens: 2303, OutputTokens: 233}}))
	prompts := []string{"Record a live run: first prompt", "Second prompt: wait in Bash", "Third prompt, after the interrupt"}
	const session = "rec-live"
	p := startExtension(t, s.cwd, s.env)
	ready := p.waitFor("ready", func(ev extension.Event) bool { return ev.Event == extension.EventReady })
	if ready.Backend != r.url {
		t.Fatalf("the helper posts to %q, not to serve at %q", ready.Backend, r.url)
	}
	runID := "rec-live-" + uuid.NewString()
	p.startLive(runID, session, "rec-live-i1", prompts[0], extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: s.cwd}})
	p.waitTurn(runID, 1)
	p.sendTurn("rec-live-2", runID, "rec-live-i2", prompts[1])
	waitSleeping(t, p, runID, sleepArg)
	p.send(extension.Command{Action: extension.ActionInterrupt, RequestID: "rec-live-stop", RunID: runID})
	if tc := p.waitTurn(runID, 2); tc.Status != wire.StatusInterrupted {
		t.Errorf("the interrupted turn ended %q (%s), want interrupted", tc.Status, tc.Reason)
	}
	p.sendTurn("rec-live-3", runID, "rec-live-i3", prompts[2])
	p.waitTurn(runID, 3)
	p.send(extension.Command{Action: extension.ActionEnd, RequestID: "rec-live-end", RunID: runID})
	if end := p.waitEnd(runID); end.Event != extension.EventRunCompleted {
		t.Errorf("the live run ended with %s (%s), want run_completed", end.Event, end.Reason)
	}
	p.noErrors("req-"+runID, "rec-live-2", "rec-live-stop", "rec-live-3", "rec-live-end")
	p.shutdownOK()

	evs := r.waitEnded(t, session)
	recTurnEvents(t, evs, []recTurn{{wire.StatusCompleted, "", ""}, {wire.StatusInterrupted, wire.ByExtension, "stopped from the editor"},
		{wire.StatusCompleted, "", ""}})
	perTurn, sum, cost := recResults(t, evs)
	if len(perTurn) != 3 {
		t.Errorf("%d result lines stored, want one per turn (3)", len(perTurn))
	}
	recSameTokens(t, "the result lines", sum, "the scripted API's answers", s.served(true))
	return recWant{id: session, title: prompts[0], source: "background", status: "completed", turns: 3, usage: sum, cost: cost,
		model: s.model(t), prompts: prompts, statuses: []string{"completed", "interrupted", "completed"}, says: []string{"stopped from the editor"}, perTurn: perTurn}
}

// recACP: the official ACP client's session: session/new, a prompt, a
// session/cancel while the second prompt's Bash sleeps, a third prompt,
// then stdin closes while idle.
func recACP(t *testing.T, r *recordEnv) recWant {
	const sleepArg = "3197"
	node, sdk := recNode(t), recACPSDK(t)
	s := r.source(t, recScript("acp", sleepArg, []mockapi.Usage{{InputTokens: 3101, OutputTokens: 311, CacheReadInputTokens: 31, CacheCreationInputTokens: 3},
		{InputTokens: 3202, OutputTokens: 322}, {InputTokens: 3303, OutputTokens: 333}}), "CLAUDE_RELAY_ACP_SDK="+sdk)
	prompts := []string{"Record an ACP session: first prompt", "Second prompt: wait in Bash", "Third prompt, after session/cancel"}
	script, err := filepath.Abs(filepath.Join("testdata", "record_acp.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	pj, _ := json.Marshal(prompts)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, "--cwd", s.cwd, "--prompts", string(pj), "--sleep-arg", sleepArg, "--", os.Args[0], "acp")
	cmd.Env, cmd.Dir, cmd.WaitDelay = s.env, s.cwd, 10*time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var session string
	var stops []string
	var exit struct {
		Code   *int   `json:"code"`
		Signal string `json:"signal"`
	}
	done := false
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var ev struct {
			Event, SessionID, StopReason, Message string
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Errorf("record_acp.mjs printed %q (%v)", line, err)
			continue
		}
		switch ev.Event {
		case "session":
			session = ev.SessionID
		case "stop":
			stops = append(stops, ev.StopReason)
		case "exit":
			json.Unmarshal([]byte(line), &exit) //nolint:errcheck // read above
		case "fail":
			t.Errorf("the ACP client: %s", ev.Message)
		case "done":
			done = true
		}
	}
	if runErr != nil || !done {
		t.Fatalf("record_acp.mjs: %v\nstdout:\n%s\nstderr (last 6 KB):\n%s", runErr, stdout.String(), recTail(stderr.String(), 6<<10))
	}
	if !slices.Equal(stops, []string{"end_turn", "cancelled", "end_turn"}) {
		t.Errorf("the prompts ended %q, want end_turn, cancelled, end_turn", stops)
	}
	if exit.Code == nil || *exit.Code != 0 {
		t.Errorf("the agent exited %+v after its stdin closed, want status 0", exit)
	}

	evs := r.waitEnded(t, session)
	recTurnEvents(t, evs, []recTurn{{wire.StatusCompleted, "", ""}, {wire.StatusInterrupted, wire.ByACP, "stopped by the ACP client (session/cancel)"},
		{wire.StatusCompleted, "", ""}})
	perTurn, sum, cost := recResults(t, evs)
	if len(perTurn) != 3 {
		t.Errorf("%d result lines stored, want one per turn (3)", len(perTurn))
	}
	recSameTokens(t, "the result lines", sum, "the scripted API's answers", s.served(true))
	return recWant{id: session, title: prompts[0], source: "ACP", status: "completed", turns: 3, usage: sum, cost: cost,
		model: s.model(t), prompts: prompts, statuses: []string{"completed", "interrupted", "completed"},
		says: []string{"stopped by the ACP client (session/cancel)"}, perTurn: perTurn}
}

// recTerminal: `claude-relay terminal` with the interactive CLI in tmux,
// the first prompt given on the command line and a second typed.
func recTerminal(t *testing.T, r *recordEnv) recWant {
	tmux.Require(t)
	usage := []mockapi.Usage{{InputTokens: 4101, OutputTokens: 411, CacheReadInputTokens: 41, CacheCreationInputTokens: 4},
		{InputTokens: 4202, OutputTokens: 422}}
	s := r.source(t, mockapi.Script{
		{Blocks: []mockapi.Block{mockapi.Text("terminal answer one")}, Usage: usage[0]},
		{Blocks: []mockapi.Block{mockapi.Text("terminal answer two")}, Usage: usage[1]},
	}, "TERM=xterm-256color", "TMPDIR="+t.TempDir())
	prompts := []string{"Record a terminal session: first prompt", "Second prompt, typed in the terminal"}
	const session = "rec-terminal"
	exitFile := filepath.Join(t.TempDir(), "exit")
	var b strings.Builder
	b.WriteString("cd " + tmux.Quote(s.cwd) + " && env -i")
	for _, kv := range s.env {
		b.WriteString(" " + tmux.Quote(kv))
	}
	for _, a := range []string{os.Args[0], "terminal", "--session=" + session, "--cwd=" + s.cwd, prompts[0]} {
		b.WriteString(" " + tmux.Quote(a))
	}
	b.WriteString("; echo exit=$? > " + tmux.Quote(exitFile) + "; sleep 60")
	tm := tmux.Start(t, b.String())
	idle := func(want string) {
		t.Helper()
		if !tm.WaitFor(extTimeout, func(scr string) bool { return strings.Contains(scr, want) }) {
			tm.Fail("the screen never showed %q", want)
		}
		if !tm.WaitFor(extTimeout, func(scr string) bool { return !strings.Contains(scr, "esc to interrupt") }) {
			tm.Fail("the CLI stayed busy after %q", want)
		}
	}
	typeLine := func(text string) {
		t.Helper()
		tm.Keys("-l", text)
		if !tm.WaitFor(extTimeout, func(scr string) bool { return recInputShows(scr, text) }) {
			tm.Fail("the input never showed %q", text)
		}
		tm.Keys("Enter")
	}
	idle("terminal answer one")
	typeLine(prompts[1])
	idle("terminal answer two")
	typeLine("/exit")
	if got := waitExit(tm, exitFile); got != "exit=0" {
		tm.Fail("claude-relay terminal ended with %s, want exit=0", got)
	}

	evs := r.waitEnded(t, session)
	// The runner's own account (issue 23): each turn's tokens, by the
	// transcript, in relay.turn_completed with mode terminal; the cost the
	// CLI recorded, on the run's end.
	var turns []wire.TurnCompleted
	var cost float64
	for _, ev := range evs {
		switch ev.EventType {
		case wire.TypeTurnCompleted:
			var tc wire.TurnCompleted
			if err := json.Unmarshal(ev.EventData, &tc); err != nil {
				t.Fatalf("%s: %v", ev.EventType, err)
			}
			turns = append(turns, tc)
		case wire.TypeRunCompleted, wire.TypeRunFailed, wire.TypeRunCancelled:
			var end wire.RunEnded
			if err := json.Unmarshal(ev.EventData, &end); err != nil {
				t.Fatalf("%s: %v", ev.EventType, err)
			}
			if end.TotalCostUSD != nil {
				cost += *end.TotalCostUSD
			}
			t.Logf("%s: status %s, usage %+v, total_cost_usd %v, model_usage %v", ev.EventType, end.Status, end.Usage, recF(end.TotalCostUSD), end.Models)
		}
	}
	if len(turns) != 2 {
		t.Errorf("%d relay.turn_completed, want one per prompt (2): %+v", len(turns), turns)
	}
	for i, tc := range turns {
		if i < len(usage) && (tc.Mode != wire.ModeTerminal || tc.Status != wire.StatusCompleted || tc.Usage == nil || *tc.Usage != recUsage(usage[i])) {
			t.Errorf("turn %d: mode %q, status %q, usage %+v; want terminal, completed, %+v", tc.Turn, tc.Mode, tc.Status, tc.Usage, usage[i])
		}
	}
	if cost <= 0 {
		t.Errorf("the terminal run's end reports no cost (total_cost_usd %v): the list cannot show what the CLI spent", cost)
	}
	tokens := s.served(false)
	if tokens == (wire.Usage{}) {
		t.Fatalf("the scripted API served no main-conversation answer")
	}
	return recWant{id: session, title: prompts[0], source: "terminal", status: "completed", turns: 2, usage: tokens, cost: cost,
		model: s.model(t), prompts: prompts, statuses: []string{"completed", "completed"}}
}

// recKilledHelper: an extension helper is SIGKILLed while its run's Bash
// sleeps, and nothing on its data dir ever starts again. Once the backend
// has heard nothing for store.StaleAfter the session reads "no news since
// …"; the test moves its last news back rather than wait 35 minutes.
func recKilledHelper(t *testing.T, r *recordEnv) recWant {
	const sleepArg = "3198"
	s := r.source(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo killed-start && sleep " + sleepArg, "description": "Wait a long time"}),
		mockapi.TextTurn("never"),
	})
	const session, prompt = "rec-killed", "Record a helper killed mid-run"
	p := startExtension(t, s.cwd, s.env)
	p.waitFor("ready", func(ev extension.Event) bool { return ev.Event == extension.EventReady })
	runID := "rec-killed-" + uuid.NewString()
	p.prompt(runID, session, prompt, extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: s.cwd, MaxTurns: 4}})
	waitSleeping(t, p, runID, sleepArg)
	var sess store.Session
	poll.Until(t, extTimeout, "the session running at the backend", func() bool {
		return r.be.get(t, "/api/sessions/"+session, &sess) == 200 && sess.Status == store.StatusRunning && sess.Model != ""
	})
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	// Nobody will stop what the run left (the CLI and its sleep): the
	// test does, as the next helper start would have.
	proctag.Kill(t, s.tag)
	r.age(t, session, time.Now().Add(-2*time.Hour))
	if r.be.get(t, "/api/sessions/"+session, &sess); sess.Status != store.StatusRunning || !sess.Stale {
		t.Errorf("after the kill the backend has status %q, stale %v; want running and stale", sess.Status, sess.Stale)
	}
	return recWant{id: session, title: prompt, source: "background", status: "no news since ", stale: true, model: s.model(t),
		prompts: []string{prompt}}
}

// ---- what the backend stored ---------------------------------------------

// waitEnded waits until the session's run has ended at the backend and
// returns its events.
func (r *recordEnv) waitEnded(t *testing.T, session string) []store.Event {
	t.Helper()
	if session == "" {
		t.Fatal("no session ID")
	}
	var sess store.Session
	poll.Until(t, extTimeout, "the end of session "+session+" at the backend", func() bool {
		return r.be.get(t, "/api/sessions/"+session, &sess) == 200 && sess.Status != store.StatusRunning && sess.Status != store.StatusUnknown
	})
	evs := r.be.events(t, session)
	for _, ev := range evs {
		if strings.HasPrefix(ev.EventType, "relay.") && ev.EventType != wire.TypeStderr {
			t.Logf("%s %s seq %d: %.400s", ev.InteractionID, ev.EventType, ev.Seq, ev.EventData)
		}
	}
	return evs
}

// recResults sums the CLI's own result lines as the backend stored them:
// each one's model_usage_since_last_result, the figure the CLI states for
// what its process counted since its previous result (2.1.3xx). Within one
// process the last result's total_cost_usd is the CLI's own running total:
// it must agree.
func recResults(t *testing.T, evs []store.Event) (turns []recFigures, sum wire.Usage, cost float64) {
	t.Helper()
	seen := map[string]bool{}
	var last float64
	for _, ev := range evs {
		if ev.EventType != "result" {
			continue
		}
		var res struct {
			UUID      string   `json:"uuid"`
			Subtype   string   `json:"subtype"`
			TotalCost *float64 `json:"total_cost_usd"`
			Since     map[string]struct {
				InputTokens              int64   `json:"inputTokens"`
				OutputTokens             int64   `json:"outputTokens"`
				CacheReadInputTokens     int64   `json:"cacheReadInputTokens"`
				CacheCreationInputTokens int64   `json:"cacheCreationInputTokens"`
				CostUSD                  float64 `json:"costUSD"`
			} `json:"model_usage_since_last_result"`
		}
		if err := json.Unmarshal(ev.EventData, &res); err != nil {
			t.Fatalf("result: %v", err)
		}
		if seen[res.UUID] {
			t.Errorf("result %s stored twice", res.UUID)
			continue
		}
		seen[res.UUID] = true
		if res.Since == nil {
			t.Errorf("result %s (%s) has no model_usage_since_last_result: %.300s", res.UUID, res.Subtype, ev.EventData)
		}
		var one recFigures
		for _, m := range res.Since {
			one.usage = one.usage.Add(wire.Usage{InputTokens: m.InputTokens, OutputTokens: m.OutputTokens,
				CacheReadInputTokens: m.CacheReadInputTokens, CacheCreationInputTokens: m.CacheCreationInputTokens})
			one.cost += m.CostUSD
		}
		turns = append(turns, one)
		sum, cost = sum.Add(one.usage), cost+one.cost
		if res.TotalCost != nil {
			last = *res.TotalCost
		}
		t.Logf("result %s: since last %+v, total_cost_usd %v", res.Subtype, res.Since, recF(res.TotalCost))
	}
	if len(turns) > 0 && !recSameCost(last, cost) {
		t.Errorf("the results' costs since the last sum to $%v, the last result's total_cost_usd is $%v", cost, last)
	}
	return turns, sum, cost
}

// recFigures are one turn's tokens and cost.
type recFigures struct {
	usage wire.Usage
	cost  float64
}

func recTotal(u wire.Usage) int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
}

// recTurn is what a stored relay.turn_completed must say.
type recTurn struct {
	status wire.Status
	by     wire.By
	reason string
}

// recTurnEvents checks the relay.turn_completed events of a live or ACP
// run, in turn order.
func recTurnEvents(t *testing.T, evs []store.Event, want []recTurn) {
	t.Helper()
	var got []recTurn
	for _, ev := range evs {
		if ev.EventType != wire.TypeTurnCompleted {
			continue
		}
		var tc wire.TurnCompleted
		if err := json.Unmarshal(ev.EventData, &tc); err != nil {
			t.Fatalf("%s: %v", ev.EventType, err)
		}
		got = append(got, recTurn{tc.Status, tc.By, tc.Reason})
	}
	if !slices.Equal(got, want) {
		t.Errorf("relay.turn_completed events %+v, want %+v", got, want)
	}
	for _, ev := range evs {
		if ev.EventType == wire.TypeRunCancelled || ev.EventType == wire.TypeRunFailed {
			t.Errorf("the run ended with %s: %.300s", ev.EventType, ev.EventData)
		}
	}
}

func recSameTokens(t *testing.T, what string, got wire.Usage, truth string, want wire.Usage) {
	t.Helper()
	if got != want {
		t.Errorf("%s sum to %+v, %s to %+v", what, got, truth, want)
	}
}

func recSameCost(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func recF(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// age moves back when serve last heard of a session, in its SQLite file
// (nanoseconds since the epoch, as the store writes it).
func (r *recordEnv) age(t *testing.T, session string, at time.Time) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+r.db+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec(`UPDATE sessions SET updated_at = ? WHERE id = ?`, at.UnixNano(), session)
	if err != nil {
		t.Fatalf("aging session %s: %v", session, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("aging session %s: %d rows, %v", session, n, err)
	}
}

// ---- what the dashboard shows ----------------------------------------------

// check reads the session at the API, then its list row and its page in a
// tab of its own, against want.
func (r *recordEnv) check(t *testing.T, name string, want recWant) {
	t.Helper()
	var sess store.Session
	if code := r.be.get(t, "/api/sessions/"+want.id, &sess); code != 200 {
		t.Fatalf("GET /api/sessions/%s: HTTP %d", want.id, code)
	}
	if !want.stale && (sess.Status != want.status || sess.Turns != want.turns || sess.Usage != want.usage ||
		!recSameCost(sess.CostUSD, want.cost) || sess.Model != want.model || sess.Title != want.title) {
		t.Errorf("the backend's session: status %q, %d turns, %+v, $%v, model %q, title %q\nwant:                 status %q, %d turns, %+v, $%v, model %q, title %q",
			sess.Status, sess.Turns, sess.Usage, sess.CostUSD, sess.Model, sess.Title,
			want.status, want.turns, want.usage, want.cost, want.model, want.title)
	}

	ctx, tabLog := r.newTab(t)
	row := `#sessions tr[data-id=` + abJSString(want.id) + `]`
	abMust(t, chromedp.Do(ctx, chromedp.Navigate(r.url+"/")))
	browser.WaitJS(t, ctx, `document.body.dataset.state === "ready" && !!document.querySelector(`+abJSString(row)+`)`, 30*time.Second)
	// The row follows the live feed: wait for the end to show.
	statusJS := recJS(browser.ListCell(want.id, ".status"))
	if !poll.Within(20*time.Second, func() bool {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](statusJS))
		return err == nil && strings.HasPrefix(s, want.status)
	}) {
		t.Errorf("the list row's status never read %q", want.status)
	}
	got := map[string]string{}
	for k, sel := range map[string]string{"title": ".title-link", "source": "td.source .src", "status": ".status", "turns": "td:nth-child(7)",
		"tokens": "td:nth-child(8)", "cost": "td.cost", "model": "td.model"} {
		got[k] = browser.Eval[string](t, ctx, recJS(browser.ListCell(want.id, sel)))
	}
	r.mu.Lock()
	r.table = append(r.table, [8]string{name, got["title"], got["source"], got["status"], got["turns"], got["tokens"], got["cost"], got["model"]})
	r.mu.Unlock()
	wantRow := map[string]string{"title": want.title, "source": want.source, "model": want.model,
		"turns":  browser.Eval[string](t, ctx, fmt.Sprintf(`CRFmt.tokens(%d)`, want.turns)),
		"tokens": browser.Eval[string](t, ctx, fmt.Sprintf(`CRFmt.tokens(%d)`, recTotal(want.usage))),
		"cost":   browser.Eval[string](t, ctx, fmt.Sprintf(`CRFmt.usd(%v)`, want.cost))}
	if want.stale {
		wantRow["turns"], wantRow["tokens"], wantRow["cost"] = got["turns"], got["tokens"], got["cost"]
	}
	for _, k := range []string{"title", "source", "turns", "tokens", "cost", "model"} {
		if got[k] != wantRow[k] {
			t.Errorf("the list row's %s reads %q, want %q", k, got[k], wantRow[k])
		}
	}
	if !strings.HasPrefix(got["status"], want.status) {
		t.Errorf("the list row's status reads %q, want %q", got["status"], want.status)
	}

	abMust(t, chromedp.Do(ctx, chromedp.Navigate(r.url+"/sessions/"+want.id)))
	browser.WaitJS(t, ctx, fmt.Sprintf(`document.body.dataset.state === "ready" && document.querySelectorAll('.entry.turn').length >= %d`, len(want.prompts)), 30*time.Second)
	// Live updates settle: the last turn's status is in.
	last := ""
	if len(want.statuses) > 0 {
		last = want.statuses[len(want.statuses)-1]
	}
	if last != "" && !poll.Within(20*time.Second, func() bool {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const s = document.querySelectorAll('.entry.turn .turn-stats'); return s.length ? (s[s.length-1].querySelector('.status') || {}).textContent || '' : ''; })()`))
		return err == nil && s == last
	}) {
		t.Errorf("the last turn's status never read %q", last)
	}
	prompts := browser.Eval[[]string](t, ctx, `Array.from(document.querySelectorAll('.entry.turn')).map(e => (e.querySelector('.prompt') || {}).textContent || '')`)
	statuses := browser.Eval[[]string](t, ctx, `Array.from(document.querySelectorAll('.entry.turn .turn-stats')).map(e => (e.querySelector('.status') || {}).textContent || '')`)
	if !slices.Equal(prompts, want.prompts) {
		t.Errorf("the page's turns show the prompts %q, want %q", prompts, want.prompts)
	}
	if want.statuses != nil && !slices.Equal(statuses, want.statuses) {
		t.Errorf("the page's turns read %q, want %q", statuses, want.statuses)
	}
	head := browser.Eval[[]string](t, ctx, `['s-title', 's-source', 's-status', 's-model', 's-turns', 's-tokens', 's-cost'].map(id => document.getElementById(id).textContent)`)
	t.Logf("page header: title %q, source %q, status %q, model %q, turns %s, tokens %s, cost %s", head[0], head[1], head[2], head[3], head[4], head[5], head[6])
	if head[0] != want.title || !strings.HasPrefix(head[2], want.status) || head[3] != want.model {
		t.Errorf("the page's header: title %q, status %q, model %q; want %q, %q, %q", head[0], head[2], head[3], want.title, want.status, want.model)
	}
	if !want.stale {
		wantTurns := browser.Eval[string](t, ctx, fmt.Sprintf(`CR.fmtInt(%d)`, want.turns))
		wantTokens := browser.Eval[string](t, ctx, fmt.Sprintf(`CR.fmtInt(%d)`, recTotal(want.usage)))
		wantCost := browser.Eval[string](t, ctx, fmt.Sprintf(`CR.fmtCost(%v)`, want.cost))
		if head[4] != wantTurns || head[5] != wantTokens || head[6] != wantCost {
			t.Errorf("the page's header: %s turns, %s tokens, %s; want %s, %s, %s", head[4], head[5], head[6], wantTurns, wantTokens, wantCost)
		}
	}
	stats := browser.Eval[[]string](t, ctx, `Array.from(document.querySelectorAll('.entry.turn .turn-stats')).map(e => e.textContent)`)
	if want.perTurn != nil && len(stats) == len(want.perTurn) {
		for i, f := range want.perTurn {
			cost := browser.Eval[string](t, ctx, fmt.Sprintf(`CR.fmtCost(%v)`, f.cost))
			tokens := browser.Eval[string](t, ctx, fmt.Sprintf(`CR.fmtInt(%d)`, recTotal(f.usage))) + " tokens"
			if !strings.Contains(stats[i], cost) || !strings.Contains(stats[i], tokens) {
				t.Errorf("turn %d's card reads %q, want its own figures: %s, %s", i+1, stats[i], cost, tokens)
			}
		}
	}
	all := browser.Eval[string](t, ctx, `Array.from(document.querySelectorAll('#timeline .entry')).map(e => e.textContent).join('|')`)
	for _, w := range want.says {
		if !strings.Contains(all, w) {
			t.Errorf("the page does not say %q:\n%s", w, all)
		}
	}
	for _, bad := range recNever {
		if strings.Contains(all, bad) {
			t.Errorf("the page says %q:\n%s", bad, all)
		}
	}
	recShot(t, ctx, "record-"+name+".png")
	tabLog.check(t)
	if t.Failed() {
		r.dump(t, want.id)
	}
}

// dump logs a session's events in the order the backend got them, for a
// failure report.
func (r *recordEnv) dump(t *testing.T, session string) {
	t.Helper()
	evs := r.be.events(t, session)
	slices.SortFunc(evs, func(a, b store.Event) int { return int(a.Cursor - b.Cursor) })
	var b strings.Builder
	for _, ev := range evs {
		var d struct {
			Type, Subtype, Status, Reason, Prompt string
			Turn                                  int
		}
		json.Unmarshal(ev.EventData, &d) //nolint:errcheck // a summary only
		fmt.Fprintf(&b, "  cursor %d  %-36.36s seq %2d  %-26s %s %s %s turn=%d %q %q\n", ev.Cursor, ev.InteractionID, ev.Seq, ev.EventType,
			d.Type, d.Subtype, d.Status, d.Turn, d.Reason, d.Prompt)
	}
	t.Logf("session %s as the backend got it:\n%s", session, b.String())
}

// listScreenshot saves the list with every source's row.
func (r *recordEnv) listScreenshot(t *testing.T) {
	t.Helper()
	if os.Getenv(envScreenshots) == "" {
		return
	}
	ctx, tabLog := r.newTab(t)
	abMust(t, chromedp.Do(ctx, chromedp.Navigate(r.url+"/")))
	browser.WaitJS(t, ctx, `document.body.dataset.state === "ready"`, 30*time.Second)
	recShot(t, ctx, "record-list.png")
	tabLog.check(t)
}

// recTabLog records what went wrong in a tab's page.
type recTabLog struct {
	mu   sync.Mutex
	errs []string
}

func (l *recTabLog) listen(ev any) {
	var msg string
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		msg = "exception: " + ev.ExceptionDetails.Text
		if ev.ExceptionDetails.Exception != nil {
			msg += ": " + ev.ExceptionDetails.Exception.Description
		}
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError {
			return
		}
		msg = "console.error"
		for _, a := range ev.Args {
			msg += " " + string(a.Value) + a.Description
		}
	case *cdplog.EventEntryAdded:
		if ev.Entry == nil || ev.Entry.Level != cdplog.EntryLevelError {
			return
		}
		msg = string(ev.Entry.Source) + ": " + ev.Entry.Text
	default:
		return
	}
	l.mu.Lock()
	l.errs = append(l.errs, msg)
	l.mu.Unlock()
}

func (l *recTabLog) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.errs {
		t.Errorf("the page: %s", e)
	}
}

// newTab opens a tab in the logged-in browser, 1280x900, closed with t.
func (r *recordEnv) newTab(t *testing.T) (context.Context, *recTabLog) {
	t.Helper()
	ctx, cancel := chromedp.NewContext(r.tab.Ctx)
	t.Cleanup(cancel)
	abMust(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)))
	l := &recTabLog{}
	abMust(t, chromedp.Listen(ctx, l.listen))
	return ctx, l
}

// recShot saves the whole page as DIR/name when CLAUDE_RELAY_SCREENSHOTS=DIR.
func recShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv(envScreenshots)
	if dir == "" {
		return
	}
	abMust(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0); document.activeElement && document.activeElement.blur()`)))
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	abMust(t, err)
	abMust(t, os.MkdirAll(dir, 0o755))
	p := filepath.Join(dir, name)
	abMust(t, os.WriteFile(p, png, 0o644))
	t.Logf("screenshot: %s", p)
}

// recJS makes cell's expression a string in every case.
func recJS(expr string) string { return `(` + expr + `) || ''` }

// recInputShows reports whether a screen's prompt line ("❯", then a space
// the CLI may draw as a no-break space) holds text.
func recInputShows(screen, text string) bool {
	for _, l := range strings.Split(screen, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "❯"); ok && strings.TrimSpace(strings.ReplaceAll(rest, "\u00a0", " ")) == text {
			return true
		}
	}
	return false
}

// ---- node and the ACP SDK ----------------------------------------------------

// recNode is node from PATH; without it the test skips, or fails on CI.
func recNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		recRequire(t, fmt.Sprintf("node not found in PATH (%v); the ACP client needs node 18 or newer", err))
	}
	return node
}

// recACPSDK is the @agentclientprotocol/sdk package directory:
// $CLAUDE_RELAY_ACP_SDK, else where `make deps` installs 2.4.0.
func recACPSDK(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("CLAUDE_RELAY_ACP_SDK")
	if dir == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache")
		}
		dir = filepath.Join(cache, "claude-relay", "acp-sdk-2.4.0", "node_modules", "@agentclientprotocol", "sdk")
	}
	if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
		recRequire(t, fmt.Sprintf("the ACP SDK is not installed at %s (%v); run `make deps` or set $CLAUDE_RELAY_ACP_SDK", dir, err))
	}
	return dir
}

// recRequire skips with msg, or fails under CI=true, where `make deps`
// must have installed everything.
func recRequire(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true: make deps must install it)")
	}
	t.Skip(msg)
}

func recTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
