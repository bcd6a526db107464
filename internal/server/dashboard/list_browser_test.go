package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/claude-relay/claude-relay/internal/server/backend/memstore"
	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/server/store/sqlite"
	"github.com/claude-relay/claude-relay/internal/testkit/browser"
)

// postAt posts events of session with timestamps at, at+1ms, … (the cost
// page counts results on the UTC day of their timestamp).
func (s *site) postAt(session string, at time.Time, evs ...ev) {
	s.t.Helper()
	batch := make([]map[string]any, len(evs))
	for i, e := range evs {
		batch[i] = s.envelope(session, e)
		batch[i]["timestamp"] = at.Add(time.Duration(i) * time.Millisecond).UTC().Format(time.RFC3339Nano)
	}
	postBatch(s.t, s.url, session, batch)
}

// get reads a JSON API answer with the token.
func (s *site) get(path string, out any) {
	s.t.Helper()
	req, _ := http.NewRequest("GET", s.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		s.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		s.t.Fatalf("GET %s: %v", path, err)
	}
}

// A background run as the helper posts it.
func runStarted(runID, prompt, cwd, model, mode string) ev {
	d := map[string]any{"run_id": runID, "prompt": prompt, "cwd": cwd, "model": model}
	if mode != "" {
		d["mode"] = mode
	}
	return ev{"relay.run_started", "relay", d}
}

func runCompleted(runID string) ev {
	return ev{"relay.run_completed", "relay", map[string]any{"run_id": runID, "status": "completed",
		"result": map[string]any{"stdout": "", "stderr": "", "exitCode": 0, "duration_ms": 4200}}}
}

func initModel(conv, model, cwd string) ev {
	return ev{"system", "", map[string]any{"type": "system", "subtype": "init", "session_id": conv, "model": model, "cwd": cwd}}
}

func resultCost(conv string, cost float64, in, out int) ev {
	return ev{"result", "", map[string]any{"type": "result", "subtype": "success", "is_error": false, "session_id": conv,
		"num_turns": 1, "duration_ms": 4000, "result": "done", "total_cost_usd": cost, "uuid": uuid.NewString(),
		"usage": map[string]any{"input_tokens": in, "output_tokens": out, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}}
}

// backgroundRun is a whole background session: start, init, one tool
// call, result, completion.
func backgroundRun(id, prompt, cwd, model, tool string, cost float64) []ev {
	conv := "conv-" + id
	return []ev{
		runStarted("run-"+id, prompt, cwd, model, ""),
		initModel(conv, model, cwd),
		assistant(conv, toolUse("toolu_"+id, tool, map[string]any{"command": "make test"})),
		toolResults(conv, toolResult("toolu_"+id, "ok", false)),
		resultCost(conv, cost, 1200, 300),
		runCompleted("run-" + id),
	}
}

// terminalRun is a visible-terminal session: hooks and a transcript line.
func terminalRun(id, prompt, cwd, tool string) []ev {
	conv := "conv-" + id
	hook := func(name string, extra map[string]any) ev {
		d := map[string]any{"hook_event_name": name, "session_id": conv, "cwd": cwd,
			"transcript_path": "/home/dev/.claude/projects/x/" + conv + ".jsonl"}
		for k, v := range extra {
			d[k] = v
		}
		return ev{"hook." + name, "terminal", d}
	}
	return []ev{
		runStarted("run-"+id, "", cwd, "", "terminal"),
		hook("SessionStart", map[string]any{"source": "startup"}),
		hook("UserPromptSubmit", map[string]any{"prompt": prompt}),
		hook("PreToolUse", map[string]any{"tool_name": tool, "tool_input": map[string]any{"url": "https://example.com"}}),
		{"transcript.assistant", "terminal", map[string]any{"type": "assistant", "session_id": conv, "uuid": uuid.NewString(),
			"message": map[string]any{"role": "assistant", "model": "claude-sonnet-4-5", "content": []any{text("Done.")}}}},
		hook("Stop", nil),
		runCompleted("run-" + id),
	}
}

// xssDir is a directory name that is markup.
const xssDir = `<img src=x onerror=alert(2)>`

// rowIDs is the session IDs of the list's rows, in order.
const rowIDs = `Array.from(document.querySelectorAll('#sessions tbody tr')).map(r => r.dataset.id)`

// TestSessionListInBrowser: the list tells sessions apart (title, project,
// source, model), searches and filters on the server, keeps its state in
// the URL, pages with "Load more", and updates live.
func TestSessionListInBrowser(t *testing.T) {
	s := newSite(t, memstore.New())
	// Older sessions first: the list is newest first, so these fill the
	// rest of the first page and the second one.
	chores := []string{"Bump the Go toolchain", "Tidy the Makefile", "Add a changelog entry", "Fix a typo in the README",
		"Update the CI cache key", "Rename the config loader", "Split the HTTP handlers", "Regenerate the schema docs"}
	dirs := []string{"/home/dev/api-gateway", "/home/dev/billing", "/home/dev/mobile-app", "/home/dev/docs-site"}
	models := []string{"claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5"}
	const fillers = 60
	for i := range fillers {
		id := fmt.Sprintf("chore-%02d", i)
		s.post(id, backgroundRun(id, fmt.Sprintf("%s (#%d)", chores[i%len(chores)], i), dirs[i%len(dirs)],
			models[i%len(models)], "Bash", 0.01+float64(i%7)*0.013)...)
	}
	s.post("bg-1", backgroundRun("bg-1", "  Fix the flaky login test\n in auth_test.go  ", "/work/webapp", "claude-sonnet-4-5", "Bash", 0.0421)...)
	s.post("term-1", terminalRun("term-1", "Rotate the TLS certificates on staging", "/work/infra", "WebFetch")...)
	s.post("xss-1", backgroundRun("xss-1", xss, "/work/"+xssDir, "claude-sonnet-4-5", "Read", 0.002)...)
	s.post("acp-1", runStarted("run-acp-1", "Explain the parser's error recovery", "/work/webapp", "claude-opus-4-1", "acp"),
		initModel("conv-acp-1", "claude-opus-4-1", "/work/webapp"))
	const total = fillers + 4

	tab := browser.New(t, browser.Options{Width: 1280, Height: 800})
	ctx := tab.Ctx
	// The window's frame takes some of its height: make the page itself
	// 1280x800, the screenshots' size.
	must(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)))
	login(t, ctx, s.url)
	browser.WaitJS(t, ctx, `document.body.dataset.state === "ready" && document.body.dataset.live === "1"`, 20*time.Second)

	t.Run("rows tell sessions apart", func(t *testing.T) {
		ids, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](rowIDs))
		must(t, err)
		if len(ids) != 50 || strings.Join(ids[:4], ",") != "acp-1,xss-1,term-1,bg-1" {
			t.Fatalf("first page %d rows %v, want 50 with the newest four first", len(ids), ids[:min(4, len(ids))])
		}
		for _, c := range []struct{ id, sel, want string }{
			{"bg-1", ".title-link", "Fix the flaky login test in auth_test.go"}, // one line, trimmed
			{"bg-1", "td.project", "webapp"},
			{"bg-1", "td.source", "background"},
			{"bg-1", "td.model", "claude-sonnet-4-5"},
			{"bg-1", "td.cost", "$0.0421"},
			{"bg-1", ".status", "completed"},
			{"bg-1", ".ids .conv", "conv-bg-1"},
			{"term-1", ".title-link", "Rotate the TLS certificates on staging"},
			{"term-1", "td.project", "infra"},
			{"term-1", "td.source", "terminal"},
			{"acp-1", ".title-link", "Explain the parser's error recovery"},
			{"acp-1", "td.source", "ACP"},
			{"acp-1", "td.model", "claude-opus-4-1"},
			{"acp-1", ".status", "running"},
		} {
			got, err := chromedp.Run(ctx, chromedp.Evaluate[string](browser.ListCell(c.id, c.sel)))
			if err != nil || got != c.want {
				t.Errorf("%s %s: %q (%v), want %q", c.id, c.sel, got, err, c.want)
			}
		}
		full, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#sessions tr[data-id="bg-1"] td.project').title`))
		if err != nil || full != "/work/webapp" {
			t.Errorf("project title %q (%v), want the full path", full, err)
		}
		href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#sessions tr[data-id="term-1"] .title-link').getAttribute('href')`))
		if err != nil || href != "/sessions/term-1" {
			t.Errorf("row link %q (%v)", href, err)
		}
		abs, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#sessions tr[data-id="bg-1"] td.started time').title`))
		if err != nil || abs == "" {
			t.Errorf("started has no absolute time on hover (%v)", err)
		}
	})

	t.Run("event text is never HTML", func(t *testing.T) {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](browser.ListCell("xss-1", ".title-link")))
		if err != nil || got != xss {
			t.Errorf("title %q (%v), want the literal %q", got, err, xss)
		}
		proj, err := chromedp.Run(ctx, chromedp.Evaluate[string](browser.ListCell("xss-1", "td.project")))
		if err != nil || proj != xssDir {
			t.Errorf("project %q (%v), want the literal basename", proj, err)
		}
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#sessions img, #project img').length`))
		if err != nil || n != 0 {
			t.Errorf("%d elements made from session text (%v)", n, err)
		}
	})

	t.Run("live status and new sessions", func(t *testing.T) {
		must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.__noReload = 1`)))
		s.post("acp-1", resultCost("conv-acp-1", 0.5, 100, 10), runCompleted("run-acp-1"))
		browser.WaitJS(t, ctx, browser.ListCell("acp-1", ".status")+` === "completed"`, 10*time.Second)
		s.post("live-new", runStarted("run-live", "Profile the slow query", "/work/webapp", "claude-sonnet-4-5", ""))
		browser.WaitJS(t, ctx, rowIDs+`[0] === "live-new"`, 10*time.Second)
		same, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__noReload === 1`))
		if err != nil || !same {
			t.Errorf("the page reloaded (%v)", err)
		}
	})

	t.Run("load more", func(t *testing.T) {
		must(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("load-more"))))
		browser.WaitJS(t, ctx, `document.querySelectorAll('#sessions tbody tr').length === `+fmt.Sprint(total+1), 10*time.Second)
		ids, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](rowIDs))
		must(t, err)
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] {
				t.Errorf("%s listed twice", id)
			}
			seen[id] = true
		}
		if ids[len(ids)-1] != "chore-00" {
			t.Errorf("last row %s, want the oldest session", ids[len(ids)-1])
		}
		browser.WaitJS(t, ctx, `document.getElementById('load-more').hidden`, 5*time.Second)
	})

	t.Run("slash focuses search", func(t *testing.T) {
		must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`)))
		pressKey(t, ctx, "/", "Slash", 191)
		focused, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.id + "|" + document.getElementById('q').value`))
		if err != nil || focused != "q|" {
			t.Errorf("after /: focus|value %q (%v), want the empty search box", focused, err)
		}
		// Typing a slash in an input types it.
		must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById('from').focus()`)))
		pressKey(t, ctx, "/", "Slash", 191)
		focused, err = chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.id`))
		if err != nil || focused != "from" {
			t.Errorf("/ in another input moved focus to %q (%v)", focused, err)
		}
	})

	t.Run("search", func(t *testing.T) {
		must(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("q")), chromedp.SendKeys(chromedp.ID("q"), "fla")))
		browser.WaitJS(t, ctx, `location.search === "?q=fla" && document.body.dataset.state === "ready"`, 10*time.Second)
		must(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("q"), "ky")))
		browser.WaitJS(t, ctx, rowIDs+`.join() === "bg-1" && location.search === "?q=flaky"`, 10*time.Second)
		// Live news under a search: a new match appears, a session that
		// does not match stays out.
		s.post("flaky-2", backgroundRun("flaky-2", "Quarantine the flaky payment test", "/work/tests", "claude-sonnet-4-5", "Bash", 0.031)...)
		browser.WaitJS(t, ctx, rowIDs+`.join() === "flaky-2,bg-1"`, 10*time.Second)
		s.post("other-1", backgroundRun("other-1", "Summarize yesterday's incidents", "/work/tests", "claude-opus-4-1", "Read", 0.12)...)
		s.post("flaky-3", backgroundRun("flaky-3", "Retry the flaky upload on CI", "/work/tests", "claude-sonnet-4-5", "Bash", 0.018)...)
		browser.WaitJS(t, ctx, rowIDs+`.join() === "flaky-3,flaky-2,bg-1"`, 10*time.Second)
		// A tool name finds the terminal session that called it.
		must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`(() => { const q = document.getElementById('q'); q.value = 'webfetch'; q.dispatchEvent(new Event('input')); })()`)))
		browser.WaitJS(t, ctx, rowIDs+`.join() === "term-1"`, 10*time.Second)
		// Back brings the previous search, box and all; typing that only
		// refined it ("fla", then "flaky") left one entry, not two.
		must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`history.back()`)))
		browser.WaitJS(t, ctx, rowIDs+`.join() === "flaky-3,flaky-2,bg-1" && document.getElementById('q').value === "flaky"`, 10*time.Second)
		must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`history.back()`)))
		browser.WaitJS(t, ctx, `location.search === "" && document.getElementById('q').value === "" && document.querySelectorAll('#sessions tbody tr').length === 50`, 10*time.Second)
		// A link with the query opens the same view.
		must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/?q=TLS+certificates")))
		browser.WaitJS(t, ctx, `document.body.dataset.state === "ready" && `+rowIDs+`.join() === "term-1"`, 10*time.Second)
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('q').value`))
		if err != nil || v != "TLS certificates" {
			t.Errorf("search box %q (%v)", v, err)
		}
	})

	t.Run("filters", func(t *testing.T) {
		must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/")))
		browser.WaitJS(t, ctx, `document.body.dataset.state === "ready"`, 10*time.Second)
		set := func(id, v string) {
			must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
				`(() => { const e = document.getElementById(%q); e.value = %q; e.dispatchEvent(new Event('change')); })()`, id, v))))
		}
		set("status", "running")
		browser.WaitJS(t, ctx, rowIDs+`.join() === "live-new"`, 10*time.Second)
		set("status", "")
		// The project select offers the projects seen, by name.
		browser.WaitJS(t, ctx, `Array.from(document.querySelectorAll('#project option')).some(o => o.value === "/work/infra" && o.textContent === "infra")`, 10*time.Second)
		set("project", "/work/infra")
		browser.WaitJS(t, ctx, rowIDs+`.join() === "term-1"`, 10*time.Second)
		set("project", "/work/webapp")
		browser.WaitJS(t, ctx, rowIDs+`.join() === "live-new,acp-1,bg-1"`, 10*time.Second)
		search, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.search`))
		if search != "?project=%2Fwork%2Fwebapp" {
			t.Errorf("URL query %q", search)
		}
		// A range after today matches nothing, and the page says what to do.
		tomorrow := time.Now().AddDate(0, 0, 1).Format("2006-01-02")
		set("from", tomorrow)
		browser.WaitJS(t, ctx, `!document.getElementById('no-match').hidden && document.querySelectorAll('#sessions tbody tr').length === 0`, 10*time.Second)
		msg, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('no-match').textContent`))
		if err != nil || !strings.Contains(msg, "webapp") || !strings.Contains(msg, tomorrow) || !strings.Contains(msg, "clear the filters") {
			t.Errorf("empty state %q (%v)", msg, err)
		}
		must(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("clear-empty"))))
		browser.WaitJS(t, ctx, `document.querySelectorAll('#sessions tbody tr').length === 50 && location.search === ""`, 10*time.Second)
		today := time.Now().Format("2006-01-02")
		set("to", today)
		browser.WaitJS(t, ctx, `document.querySelectorAll('#sessions tbody tr').length === 50 && location.search === "?to=`+today+`"`, 10*time.Second)
	})

	t.Run("row opens the session", func(t *testing.T) {
		must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/")))
		browser.WaitJS(t, ctx, `document.body.dataset.state === "ready"`, 10*time.Second)
		screenshot(t, tab, "list.png", 0, 0)
		must(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#sessions tr[data-id="bg-1"] td.model`))))
		browser.WaitJS(t, ctx, `location.pathname === "/sessions/bg-1"`, 10*time.Second)
	})

	t.Run("header links", func(t *testing.T) {
		must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/")))
		browser.WaitJS(t, ctx, `document.body.dataset.state === "ready"`, 10*time.Second)
		links, err := chromedp.Run(ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll('header .nav a')).map(a => a.getAttribute('href')).join()`))
		if err != nil || links != "/,/cost,/approvals" {
			t.Errorf("nav links %q (%v)", links, err)
		}
	})

	t.Run("no script errors", func(t *testing.T) { noScriptErrors(t, tab, "401") })
}

// TestSessionListEmpty: a new install says how to get a first session.
func TestSessionListEmpty(t *testing.T) {
	s := newSite(t, memstore.New())
	tab := browser.New(t, browser.Options{})
	login(t, tab.Ctx, s.url)
	browser.WaitJS(t, tab.Ctx, `document.body.dataset.state === "ready" && !document.getElementById('empty').hidden`, 10*time.Second)
	msg, err := chromedp.Run(tab.Ctx, chromedp.Evaluate[string](`document.getElementById('empty').textContent`))
	if err != nil || !strings.Contains(msg, `claude-relay run "hello"`) {
		t.Errorf("empty state %q (%v)", msg, err)
	}
	// The first session appears by itself.
	s.post("first", runStarted("r1", "hello", "/work/x", "claude-sonnet-4-5", ""))
	browser.WaitJS(t, tab.Ctx, rowIDs+`.join() === "first" && document.getElementById('empty').hidden`, 10*time.Second)
	// A session with no prompt yet goes by its ID.
	s.post("no-prompt-yet", initEvent("c-untitled"))
	browser.WaitJS(t, tab.Ctx, browser.ListCell("no-prompt-yet", ".title-link.untitled")+` === "no-prompt-yet"`, 10*time.Second)
	noScriptErrors(t, tab, "401")
}

// seedStore appends n background sessions straight into st (the HTTP API
// would take minutes for 10,000): prompt, cwd, model, one tool call and a
// result each; every 100th prompt has the word "flaky".
func seedStore(t *testing.T, st store.Store, n int) {
	t.Helper()
	var batch []store.Event
	t0 := time.Now().Add(-time.Duration(n) * time.Minute).UTC()
	for i := range n {
		id := fmt.Sprintf("big-%05d", i)
		prompt := fmt.Sprintf("Routine task %d in module %d", i, i%37)
		if i%100 == 7 {
			prompt += " (the flaky one)"
		}
		at := t0.Add(time.Duration(i) * time.Minute)
		for seq, e := range backgroundRun(id, prompt, fmt.Sprintf("/home/dev/project-%d", i%12), "claude-sonnet-4-5", "Bash", 0.01) {
			data, _ := json.Marshal(e.data)
			batch = append(batch, store.Event{SessionID: id, InteractionID: "i1", EventID: fmt.Sprintf("%s-%d", id, seq),
				Seq: int64(seq + 1), EventType: e.typ, EventData: data, Timestamp: at.Add(time.Duration(seq) * time.Second), Source: "agent"})
		}
		if len(batch) >= 1200 || i == n-1 {
			if _, err := st.Append(context.Background(), batch); err != nil {
				t.Fatalf("seeding: %v", err)
			}
			batch = batch[:0]
		}
	}
}

// timeInPage runs action in the page and returns how long it took until
// done was true, measured by the page's clock at each frame (so the test's
// own polling does not count).
func timeInPage(t *testing.T, ctx context.Context, action, done string) time.Duration {
	t.Helper()
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.__took = undefined; (() => {
		const t0 = performance.now();
		const poll = () => { if (`+done+`) window.__took = performance.now() - t0; else requestAnimationFrame(poll); };
		`+action+`;
		requestAnimationFrame(poll);
	})()`)))
	browser.WaitJS(t, ctx, `window.__took !== undefined`, 30*time.Second)
	ms, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`window.__took`))
	must(t, err)
	return time.Duration(ms * float64(time.Millisecond))
}

// TestSessionListLarge opens the list over 10,000 sessions in SQLite (the
// in-memory store under -race, which slows SQLite tenfold): the first
// page, three "Load more" and a search. It logs the server's time of each
// (the Server-Timing header the page keeps) and the page's; it asserts what
// they show, never how long they took.
func TestSessionListLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	var st store.Store = memstore.New()
	name := "memory"
	if !raceEnabled {
		db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "relay.db"))
		if err != nil {
			t.Fatal(err)
		}
		st, name = db, "SQLite"
	}
	const n = 10000
	start := time.Now()
	seedStore(t, st, n)
	t.Logf("seeded %d sessions into %s in %v", n, name, time.Since(start))
	s := newSite(t, st)

	tab := browser.New(t, browser.Options{})
	ctx := tab.Ctx
	login(t, ctx, s.url)
	serverMs := func() string {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.dataset.serverMs || ""`))
		must(t, err)
		return v
	}
	must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/")))
	browser.WaitJS(t, ctx, `document.body.dataset.state === "ready" && document.querySelectorAll('#sessions tbody tr').length === 50`, 30*time.Second)
	load, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`performance.now()`))
	must(t, err)
	t.Logf("first page of %d sessions: on screen within %.0f ms of navigation, server %s ms", n, load, serverMs())

	for page := 2; page <= 4; page++ {
		took := timeInPage(t, ctx, `document.getElementById('load-more').click()`,
			fmt.Sprintf(`document.querySelectorAll('#sessions tbody tr').length === %d`, 50*page))
		t.Logf("load more (page %d): on screen %v after the click, server %s ms", page, took.Round(time.Millisecond), serverMs())
	}
	ids, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](rowIDs))
	must(t, err)
	if ids[0] != fmt.Sprintf("big-%05d", n-1) || ids[199] != fmt.Sprintf("big-%05d", n-200) {
		t.Errorf("rows run from %s to %s, want the newest 200 in order", ids[0], ids[199])
	}

	took := timeInPage(t, ctx, `const q = document.getElementById('q'); q.value = 'flaky'; q.dispatchEvent(new Event('input'))`,
		`document.body.dataset.state === "ready" && location.search === "?q=flaky" && document.querySelectorAll('#sessions tbody tr').length === 50`)
	t.Logf("search of %d sessions: on screen %v after the keystroke (the 250 ms debounce included), server %s ms", n, took.Round(time.Millisecond), serverMs())
	titles, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#sessions .title-link')).map(a => a.textContent)`))
	must(t, err)
	for _, title := range titles {
		if !strings.Contains(title, "flaky") {
			t.Errorf("search result %q does not match", title)
		}
	}
	noScriptErrors(t, tab, "401")
}
