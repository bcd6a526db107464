//go:build unix

package terminal

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/tmux"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// usageScript is one conversation of three prompts: the first answered with
// a message of three blocks (thinking, text, a tool call; the CLI writes a
// transcript line for each, repeating the usage) and a text; the second and
// third with a text each. Every message reports its own usage.
var (
	usageTurns = []mockapi.Usage{
		{InputTokens: 100, OutputTokens: 20, CacheReadInputTokens: 7, CacheCreationInputTokens: 3},
		{InputTokens: 200, OutputTokens: 30},
		{InputTokens: 300, OutputTokens: 40, CacheReadInputTokens: 11},
		{InputTokens: 400, OutputTokens: 50, CacheCreationInputTokens: 5},
	}
	usageScript = mockapi.Script{
		{Blocks: []mockapi.Block{mockapi.Thinking("the user wants an echo"), mockapi.Text("Let me run it."),
			mockapi.ToolUse("Bash", map[string]any{"command": "echo usage-ok", "description": "Echo usage-ok"})}, Usage: usageTurns[0]},
		{Blocks: []mockapi.Block{mockapi.Text("first done")}, Usage: usageTurns[1]},
		{Blocks: []mockapi.Block{mockapi.Text("second done")}, Usage: usageTurns[2]},
		{Blocks: []mockapi.Block{mockapi.Text("third done")}, Usage: usageTurns[3]},
	}
)

func scriptUsage(i ...int) wire.Usage {
	var sum wire.Usage
	for _, n := range i {
		u := usageTurns[n]
		sum = sum.Add(wire.Usage{InputTokens: int64(u.InputTokens), OutputTokens: int64(u.OutputTokens),
			CacheReadInputTokens: int64(u.CacheReadInputTokens), CacheCreationInputTokens: int64(u.CacheCreationInputTokens)})
	}
	return sum
}

// terminalPrompts runs `claude-relay terminal args...` in tmux: args end
// with the first prompt, answered when the screen shows wants[0]; then
// prompt i is typed once wants[i-1] shows and the CLI is idle. /exit ends
// it; the exit status is returned.
func (e *e2eEnv) terminalPrompts(prompts, wants []string, args ...string) int {
	e.t.Helper()
	exitFile := filepath.Join(e.t.TempDir(), "exit")
	tm := tmux.Start(e.t, e.command(exitFile, append(append([]string{"terminal"}, args...), prompts[0])...))
	idle := func(want string) {
		e.t.Helper()
		if !waitFor(tm, want, exitFile) {
			tm.Fail("the screen never showed %q", want)
		}
		if !tm.WaitFor(e2eWait, func(scr string) bool { return !strings.Contains(scr, "esc to interrupt") }) {
			tm.Fail("the CLI stayed busy after %q", want)
		}
	}
	typeLine := func(text string) {
		e.t.Helper()
		tm.Keys("-l", text)
		if !tm.WaitFor(e2eWait, func(scr string) bool { return inputShows(scr, text) }) {
			tm.Fail("the input never showed %q", text)
		}
		tm.Keys("Enter")
	}
	idle(wants[0])
	for i := 1; i < len(prompts); i++ {
		typeLine(prompts[i])
		idle(wants[i])
	}
	typeLine("/exit")
	code, ok := waitExit(exitFile, e2eWait)
	if !ok {
		tm.Fail("claude-relay terminal did not exit after /exit")
	}
	return code
}

// inputShows reports whether a screen's prompt line ("❯", then a space
// the CLI may draw as a no-break space) holds text.
func inputShows(screen, text string) bool {
	for _, l := range strings.Split(screen, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "❯"); ok && strings.TrimSpace(strings.ReplaceAll(rest, "\u00a0", " ")) == text {
			return true
		}
	}
	return false
}

// eventsOf returns the events of one interaction of type typ, decoded.
func eventsOf[T any](t *testing.T, evs []store.Event, interaction string, types ...string) []T {
	t.Helper()
	var out []T
	for _, ev := range evs {
		if ev.InteractionID != interaction {
			continue
		}
		for _, typ := range types {
			if ev.EventType == typ {
				var v T
				if err := json.Unmarshal(ev.EventData, &v); err != nil {
					t.Fatalf("%s: %v", ev.EventType, err)
				}
				out = append(out, v)
			}
		}
	}
	return out
}

// cliRecords are the CLI's own totals for conversation conv after it
// exited: the transcript's last cost-state, and its config file's entry.
func cliRecords(t *testing.T, e *e2eEnv, conv string) (transcript, config costRecord) {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(e.cli.Home, ".claude", "projects", "*", conv+".jsonl"))
	if len(paths) != 1 {
		t.Fatalf("transcripts of %s: %v", conv, paths)
	}
	fi, err := os.Stat(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	last, _ := readHistory(paths[0], fi.Size(), false)
	if last == nil {
		t.Fatalf("%s has no cost-state line", paths[0])
	}
	rec, ok := configCosts(filepath.Join(e.cli.Home, ".claude.json"))[conv]
	if !ok {
		t.Fatalf("the CLI's config file has no totals for %s", conv)
	}
	return *last, rec
}

func sameCost(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// A terminal session of two prompts, then a resumed run of the same
// conversation with a third: 3 turns, the scripted usage summed once, the
// cost the CLI's own, nothing counted twice across the resume; and the same
// conversation run in the background reports the same figures.
func TestE2ETerminalUsage(t *testing.T) {
	e := newE2E(t, usageScript)
	const session = "sess-term-usage"
	code := e.terminalPrompts([]string{"Run the echo", "Say more"}, []string{"first done", "second done"},
		"--session="+session, "--interaction=int-u1", "--cwd="+e.cwd)
	if code != 0 {
		t.Fatalf("claude-relay terminal exit status %d, want 0", code)
	}
	evs, sess := e.events(session)
	conv := sess.ExternalConversationID
	model := sess.Model
	if conv == "" || model == "" {
		t.Fatalf("session %+v: want a conversation and a model", sess)
	}

	turns := eventsOf[wire.TurnCompleted](t, evs, "int-u1", wire.TypeTurnCompleted)
	wantTurns := []wire.Usage{scriptUsage(0, 1), scriptUsage(2)}
	if len(turns) != len(wantTurns) {
		t.Fatalf("%d relay.turn_completed, want %d: %+v", len(turns), len(wantTurns), turns)
	}
	for i, tc := range turns {
		if tc.Turn != i+1 || tc.Mode != wire.ModeTerminal || tc.Status != wire.StatusCompleted || tc.ConversationID != conv ||
			tc.Usage == nil || *tc.Usage != wantTurns[i] || len(tc.Models) != 1 || tc.Models[model].Usage != wantTurns[i] ||
			tc.Models[model].CostUSD != nil || tc.TotalCostUSD != nil {
			t.Errorf("turn %d: %+v (usage %+v, models %+v); want turn %d completed, usage %+v all under %s, no cost",
				i+1, tc, tc.Usage, tc.Models, i+1, wantTurns[i], model)
		}
	}
	ends := eventsOf[wire.RunEnded](t, evs, "int-u1", wire.TypeRunCompleted)
	tcost, ccost := cliRecords(t, e, conv)
	if tcost.TotalUSD <= 0 || !sameCost(tcost.TotalUSD, ccost.TotalUSD) || tcost.StartTime != ccost.StartTime {
		t.Errorf("the CLI's records disagree: transcript %+v, config %+v", tcost, ccost)
	}
	if len(ends) != 1 || ends[0].Usage == nil || *ends[0].Usage != scriptUsage(0, 1, 2) || ends[0].TotalCostUSD == nil ||
		!sameCost(*ends[0].TotalCostUSD, tcost.TotalUSD) || ends[0].Models[model].CostUSD == nil ||
		!sameCost(*ends[0].Models[model].CostUSD, tcost.Models[model]) {
		t.Fatalf("end events %+v; want usage %+v and the CLI's cost %+v", ends, scriptUsage(0, 1, 2), tcost)
	}
	if sess.Turns != 2 || sess.Usage != scriptUsage(0, 1, 2) || !sameCost(sess.CostUSD, tcost.TotalUSD) {
		t.Errorf("session after the first run: %d turns, %+v, $%v; want 2, %+v, $%v",
			sess.Turns, sess.Usage, sess.CostUSD, scriptUsage(0, 1, 2), tcost.TotalUSD)
	}
	firstCost := tcost.TotalUSD

	// The resumed conversation: the CLI's totals carry the first run's over.
	code = e.terminalPrompts([]string{"Third one"}, []string{"third done"},
		"--session="+session, "--interaction=int-u2", "--cwd="+e.cwd, "--resume="+conv)
	if code != 0 {
		t.Fatalf("resumed claude-relay terminal exit status %d, want 0", code)
	}
	evs, sess = e.events(session)
	tcost, ccost = cliRecords(t, e, conv)
	if !sameCost(tcost.TotalUSD, ccost.TotalUSD) || tcost.TotalUSD <= firstCost {
		t.Errorf("the CLI's records after the resume: transcript $%v, config $%v; want one total above the first run's $%v",
			tcost.TotalUSD, ccost.TotalUSD, firstCost)
	}
	turns = eventsOf[wire.TurnCompleted](t, evs, "int-u2", wire.TypeTurnCompleted)
	ends = eventsOf[wire.RunEnded](t, evs, "int-u2", wire.TypeRunCompleted)
	if len(turns) != 1 || turns[0].Usage == nil || *turns[0].Usage != scriptUsage(3) {
		t.Errorf("resumed run's turns %+v, want one with %+v", turns, scriptUsage(3))
	}
	if len(ends) != 1 || ends[0].TotalCostUSD == nil || !sameCost(*ends[0].TotalCostUSD, tcost.TotalUSD-firstCost) {
		t.Errorf("resumed run's end %+v; want the cost the CLI added, $%v", ends, tcost.TotalUSD-firstCost)
	}
	all := scriptUsage(0, 1, 2, 3)
	if sess.Turns != 3 || sess.Usage != all || !sameCost(sess.CostUSD, tcost.TotalUSD) {
		t.Errorf("session after the resume: %d turns, %+v, $%v; want 3, %+v and the CLI's total $%v",
			sess.Turns, sess.Usage, sess.CostUSD, all, tcost.TotalUSD)
	}

	checkBackfill(t, evs, sess)

	// The same conversation as background runs: a run and two resumes.
	b := newE2E(t, usageScript)
	const bgSession = "sess-bg-usage"
	b.background("run", "--session="+bgSession, "--interaction=b1", "--cwd="+b.cwd, "--max-turns=5", "Run the echo")
	_, bsess := b.events(bgSession)
	bconv := bsess.ExternalConversationID
	b.background("run", "--session="+bgSession, "--interaction=b2", "--cwd="+b.cwd, "--max-turns=5", "--resume="+bconv, "Say more")
	b.background("run", "--session="+bgSession, "--interaction=b3", "--cwd="+b.cwd, "--max-turns=5", "--resume="+bconv, "Third one")
	_, bsess = b.events(bgSession)
	if bsess.Turns != sess.Turns || bsess.Usage != sess.Usage || !sameCost(bsess.CostUSD, sess.CostUSD) || bsess.Model != sess.Model {
		t.Errorf("background: %d turns, %+v, $%v, %s; terminal: %d turns, %+v, $%v, %s",
			bsess.Turns, bsess.Usage, bsess.CostUSD, bsess.Model, sess.Turns, sess.Usage, sess.CostUSD, sess.Model)
	}
	t.Logf("terminal and background: %d turns, %+v, $%v, %s", sess.Turns, sess.Usage, sess.CostUSD, sess.Model)
}

// An interrupted turn (Esc while the answer streams) is posted interrupted
// by the person at the terminal with the tokens the transcript holds; a fork
// of the conversation counts neither the turns its transcript copies nor the
// cost its totals carry over.
func TestE2ETerminalUsageInterruptAndFork(t *testing.T) {
	slow := mockapi.Usage{InputTokens: 120, OutputTokens: 60}
	e := newE2E(t, mockapi.Script{
		{Blocks: []mockapi.Block{mockapi.Text("slow answer " + strings.Repeat("and on ", 60))}, Usage: slow, DeltaDelay: 200 * time.Millisecond},
		{Blocks: []mockapi.Block{mockapi.Text("after interrupt")}, Usage: usageTurns[1]},
		{Blocks: []mockapi.Block{mockapi.Text("forked answer")}, Usage: usageTurns[2]},
	})
	const session = "sess-term-int"
	exitFile := filepath.Join(t.TempDir(), "exit")
	tm := tmux.Start(t, e.command(exitFile, "terminal", "--session="+session, "--interaction=int-i1", "--cwd="+e.cwd, "Slow please"))
	if !waitFor(tm, "slow answer", exitFile) {
		tm.Fail("the slow answer never began")
	}
	tm.Keys("Escape")
	if !waitFor(tm, "Interrupted", exitFile) {
		tm.Fail("Esc did not interrupt the turn")
	}
	for _, step := range []struct{ typed, want string }{{"Next", "after interrupt"}, {"/exit", ""}} {
		tm.Keys("-l", step.typed)
		if !tm.WaitFor(e2eWait, func(scr string) bool { return inputShows(scr, step.typed) }) {
			tm.Fail("the input never showed %q", step.typed)
		}
		tm.Keys("Enter")
		if step.want != "" && !waitFor(tm, step.want, exitFile) {
			tm.Fail("the screen never showed %q", step.want)
		}
		if step.want != "" && !tm.WaitFor(e2eWait, func(scr string) bool { return !strings.Contains(scr, "esc to interrupt") }) {
			tm.Fail("the CLI stayed busy")
		}
	}
	if code, ok := waitExit(exitFile, e2eWait); !ok || code != 0 {
		tm.Fail("claude-relay terminal exit %d (ended: %v), want 0", code, ok)
	}
	evs, sess := e.events(session)
	conv := sess.ExternalConversationID
	turns := eventsOf[wire.TurnCompleted](t, evs, "int-i1", wire.TypeTurnCompleted)
	partial := wire.Usage{InputTokens: int64(slow.InputTokens), OutputTokens: 1} // message_start's: the stream never ended
	if len(turns) != 2 || turns[0].Status != wire.StatusInterrupted || turns[0].By != wire.ByTTY ||
		!strings.HasPrefix(turns[0].Result.Stderr, "[Request interrupted by user") || *turns[0].Usage != partial ||
		turns[1].Status != wire.StatusCompleted || *turns[1].Usage != scriptUsage(1) {
		t.Fatalf("turns %+v; want turn 1 interrupted by tty with %+v, turn 2 completed with %+v", turns, partial, scriptUsage(1))
	}
	first, _ := cliRecords(t, e, conv)
	if sess.Turns != 2 || sess.Usage != partial.Add(scriptUsage(1)) || !sameCost(sess.CostUSD, first.TotalUSD) {
		t.Errorf("session: %d turns, %+v, $%v; want 2, %+v, the CLI's $%v", sess.Turns, sess.Usage, sess.CostUSD,
			partial.Add(scriptUsage(1)), first.TotalUSD)
	}

	code := e.terminalPrompts([]string{"Forked prompt"}, []string{"forked answer"},
		"--session="+session, "--interaction=int-i2", "--cwd="+e.cwd, "--resume="+conv, "--fork")
	if code != 0 {
		t.Fatalf("forked claude-relay terminal exit status %d, want 0", code)
	}
	evs, sess = e.events(session)
	forked := ""
	for _, end := range eventsOf[wire.RunEnded](t, evs, "int-i2", wire.TypeRunCompleted) {
		forked = end.ConversationID
	}
	if forked == "" || forked == conv {
		t.Fatalf("the fork's conversation %q, want a new one (the original %s)", forked, conv)
	}
	fork, _ := cliRecords(t, e, forked)
	turns = eventsOf[wire.TurnCompleted](t, evs, "int-i2", wire.TypeTurnCompleted)
	if len(turns) != 1 || *turns[0].Usage != scriptUsage(2) {
		t.Errorf("the fork's turns %+v, want one with %+v: the copied conversation is not counted again", turns, scriptUsage(2))
	}
	if fork.StartTime != first.StartTime || fork.TotalUSD <= first.TotalUSD {
		t.Errorf("the fork's totals %+v do not carry the original's %+v over: the CLI changed", fork, first)
	}
	if sess.Turns != 3 || sess.Usage != partial.Add(scriptUsage(1, 2)) || !sameCost(sess.CostUSD, fork.TotalUSD) {
		t.Errorf("session: %d turns, %+v, $%v; want 3, %+v, the fork's total $%v", sess.Turns, sess.Usage, sess.CostUSD,
			partial.Add(scriptUsage(1, 2)), fork.TotalUSD)
	}
	checkBackfill(t, evs, sess)
}

// checkBackfill: what store.TerminalTurns derives from a session's
// transcript and hook events alone (its relay.turn_completed events left
// out, as a session stored before they were posted) is what the runner
// posted.
func checkBackfill(t *testing.T, evs []store.Event, sess store.Session) {
	t.Helper()
	var old []store.Event
	for _, ev := range evs {
		if ev.EventType != wire.TypeTurnCompleted {
			old = append(old, ev)
		}
	}
	var usage wire.Usage
	derived := store.TerminalTurns(old)
	for _, c := range derived {
		usage = usage.Add(c.Result.Usage)
	}
	if int64(len(derived)) != sess.Turns || usage != sess.Usage {
		t.Errorf("store.TerminalTurns: %d turns, %+v; the runner posted %d, %+v", len(derived), usage, sess.Turns, sess.Usage)
	}
}
