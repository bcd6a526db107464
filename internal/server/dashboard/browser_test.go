package dashboard_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/server/backend"
	"github.com/claude-relay/claude-relay/internal/server/backend/memstore"
	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/testkit/browser"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
)

const token = "browser-test-token-42"

// ScreenshotPath is where TestDashboardInBrowser leaves a picture of the
// session page for people to look at.
const ScreenshotPath = "/tmp/dashboard.png"

// site is a backend on loopback with a fake store, and a way to post events.
type site struct {
	t   *testing.T
	url string
	seq map[string]int64
}

func newSite(t *testing.T, st store.Store) *site {
	t.Helper()
	url := serve(t, backend.Options{
		Store:  st,
		Tokens: func() []config.Secret { return []config.Secret{token} },
	})
	return &site{t: t, url: url, seq: map[string]int64{}}
}

// ev is one event to post: its type, source and data.
type ev struct {
	typ, source string
	data        any
}

func (s *site) envelope(session string, e ev) map[string]any {
	s.seq[session]++
	src := e.source
	if src == "" {
		src = "agent"
	}
	return map[string]any{
		"session_id": session, "interaction_id": "i1", "event_id": uuid.NewString(),
		"seq": s.seq[session], "event_type": e.typ, "event_data": e.data,
		"timestamp": time.Now().UTC().Format(time.RFC3339Nano), "source": src,
	}
}

// post sends events in batches of at most 500.
func (s *site) post(session string, evs ...ev) {
	s.t.Helper()
	envs := make([]map[string]any, len(evs))
	for i, e := range evs {
		envs[i] = s.envelope(session, e)
	}
	postBatch(s.t, s.url, session, envs)
}

// CLI-shaped events (stream-json lines).
func initEvent(conv string) ev {
	return ev{"system", "", map[string]any{"type": "system", "subtype": "init", "session_id": conv, "model": "claude-sonnet-4-5", "cwd": "/work/project"}}
}

func assistant(conv string, blocks ...any) ev {
	return ev{"assistant", "", map[string]any{"type": "assistant", "session_id": conv,
		"message": map[string]any{"role": "assistant", "content": blocks}}}
}

func toolResults(conv string, blocks ...any) ev {
	return ev{"user", "", map[string]any{"type": "user", "session_id": conv,
		"message": map[string]any{"role": "user", "content": blocks}}}
}

func text(s string) any { return map[string]any{"type": "text", "text": s} }

func toolUse(id, name string, input map[string]any) any {
	return map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}
}

func toolResult(id, content string, isError bool) any {
	return map[string]any{"type": "tool_result", "tool_use_id": id, "content": content, "is_error": isError}
}

func result(conv string) ev {
	return ev{"result", "", map[string]any{"type": "result", "subtype": "success", "is_error": false, "session_id": conv,
		"duration_ms": 83000, "num_turns": 4, "result": "All done.", "total_cost_usd": 0.0421,
		"usage": map[string]any{"input_tokens": 1200, "output_tokens": 640, "cache_read_input_tokens": 30000, "cache_creation_input_tokens": 800}}}
}

const xss = `<img src=x onerror=alert(1)>`

// mdXSS is assistant text that Markdown rendering must keep inert: a
// javascript: link, inline HTML with a handler, an image whose destination
// tries to break out of its attribute, and an entity-split javascript: URL.
const mdXSS = "See [the docs](javascript:window.__pwned=1) and <img src=x onerror=window.__pwned=1> " +
	"![x](x\" onerror=\"window.__pwned=1) <a href=\"jav&#x09;ascript:window.__pwned=1\">x</a> [ok](https://example.com/ok)"

func TestDashboardInBrowser(t *testing.T) {
	s := newSite(t, memstore.New())
	const conv = "9b2f6c1e-4a57-4a43-9c1d-1c1a7e0e5a10"
	long := "for f in $(ls -1 /var/log/*.log); do wc -l \"$f\"; done | sort -n | tail -5"
	s.post("demo",
		ev{"relay.run_started", "relay", map[string]any{"prompt": "tidy the logs"}},
		initEvent(conv),
		assistant(conv, map[string]any{"type": "thinking", "thinking": "The user wants the biggest logs first."}),
		assistant(conv, text("I'll look at the logs first.")),
		assistant(conv, toolUse("toolu_bash", "Bash", map[string]any{"command": "echo hello-from-bash", "description": "Print a greeting"})),
		toolResults(conv, toolResult("toolu_bash", "hello-from-bash", false)),
		assistant(conv, toolUse("toolu_long", "Bash", map[string]any{"command": long})),
		toolResults(conv, toolResult("toolu_long", "wc: /var/log/x.log: Permission denied", true)),
		assistant(conv, toolUse("toolu_read", "Read", map[string]any{"file_path": "/work/project/main.go"})),
		assistant(conv, toolUse("toolu_edit", "Edit", map[string]any{"file_path": "/work/project/main.go", "old_string": "a", "new_string": "b"})),
		assistant(conv, toolUse("toolu_write", "Write", map[string]any{"file_path": "/work/project/NOTES.md", "content": "x"})),
		assistant(conv, toolUse("toolu_grep", "Grep", map[string]any{"pattern": "TODO"})),
		assistant(conv, toolUse("toolu_glob", "Glob", map[string]any{"pattern": "**/*.go"})),
		assistant(conv, toolUse("toolu_fetch", "WebFetch", map[string]any{"url": "https://example.com/doc"})),
		assistant(conv, toolUse("toolu_todo", "TodoWrite", map[string]any{"todos": []any{}})),
		assistant(conv, text(xss)),
		assistant(conv, text(mdXSS)),
		ev{"relay.stderr", "relay", map[string]any{"text": "warning: config file is world-readable"}},
		ev{"relay.stderr", "relay", map[string]any{"line": "Error: the MCP server failed to start"}},
		ev{"relay.limit_notice", "relay", map[string]any{"text": "5-hour limit reached ∙ resets 3pm"}},
		result(conv),
		ev{"relay.run_completed", "relay", map[string]any{"result": map[string]any{"stdout": "", "stderr": "", "exitCode": 0, "duration_ms": 84000}}},
	)

	tab := browser.New(t, browser.Options{Width: 1280, Height: 1000})
	ctx := tab.Ctx

	t.Run("login", func(t *testing.T) {
		// A page without the cookie shows the token form.
		must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/sessions/demo"), chromedp.WaitVisible(chromedp.ID("token"))))
		must(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("token"), "wrong"), chromedp.Click(chromedp.ID("login"))))
		must(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.ID("login-error"))))
		msg, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("login-error")))
		if err != nil || !strings.Contains(msg, "Wrong token") {
			t.Fatalf("error shown: %q (%v)", msg, err)
		}
		// The right token lands on the page asked for first.
		must(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Click(chromedp.ID("login"))))
		browser.WaitJS(t, ctx, `location.pathname === "/sessions/demo" && document.body.dataset.state === "ready"`, 20*time.Second)
		cookies, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.cookie`))
		if err != nil || cookies != "" {
			t.Errorf("the session cookie is readable from script: %q (%v)", cookies, err)
		}
	})

	t.Run("tool calls", func(t *testing.T) {
		titles, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
			`Array.from(document.querySelectorAll('.entry.tool .title')).map(e => e.textContent)`))
		must(t, err)
		want := []string{
			"Print a greeting",
			"Run: " + string([]rune(long)[:50]),
			"Read /work/project/main.go",
			"Edit /work/project/main.go",
			"Write /work/project/NOTES.md",
			"Search: TODO",
			"Search: **/*.go",
			"Fetch https://example.com/doc",
			"TodoWrite",
		}
		if strings.Join(titles, "\n") != strings.Join(want, "\n") {
			t.Errorf("tool titles:\n%s\nwant:\n%s", strings.Join(titles, "\n"), strings.Join(want, "\n"))
		}
		kinds, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
			`Array.from(document.querySelectorAll('.entry.tool')).map(e => e.dataset.kind)`))
		must(t, err)
		if strings.Join(kinds, ",") != "execute,execute,read,edit,edit,search,search,fetch,other" {
			t.Errorf("tool kinds %v", kinds)
		}
		// The Bash output is folded under its call: there, collapsed.
		out, err := chromedp.Run(ctx, chromedp.Evaluate[string](
			`(() => { const d = document.querySelector('.entry.tool[data-tool-use-id="toolu_bash"] details.result');
			  return d ? (d.open ? 'open: ' : '') + d.querySelector('pre').textContent : 'none'; })()`))
		if err != nil || out != "hello-from-bash" {
			t.Errorf("bash output %q (%v), want it folded under its call", out, err)
		}
		// An error result is marked as one, and expanded.
		must(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`.entry.tool[data-tool-use-id="toolu_long"] .result.error pre`))))
	})

	t.Run("event text is never HTML", func(t *testing.T) {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
			`Array.from(document.querySelectorAll('.entry.assistant .text')).map(e => e.textContent)`))
		must(t, err)
		if !contains(got, xss) {
			t.Errorf("assistant texts %q lack the literal %q", got, xss)
		}
		imgs, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#timeline img').length`))
		if err != nil || imgs != 0 {
			t.Errorf("%d <img> elements in the timeline (%v)", imgs, err)
		}
		// The text is visible on screen, not just in the DOM.
		visible, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
			const n = Array.from(document.querySelectorAll('.entry.assistant .text')).find(e => e.textContent === `+jsString(xss)+`);
			if (!n) return false;
			n.scrollIntoView();
			const r = n.getBoundingClientRect();
			return r.width > 0 && r.height > 0 && getComputedStyle(n).visibility === 'visible';
		})()`))
		if err != nil || !visible {
			t.Errorf("the literal text is not visible (%v)", err)
		}
		if d := tab.Dialogs(); len(d) > 0 {
			t.Errorf("the page opened dialogs: %q", d)
		}
		// Rendered as Markdown, the same text keeps nothing that runs.
		browser.WaitJS(t, ctx, `Array.from(document.querySelectorAll('.entry.assistant .md a')).some(a => a.textContent === 'ok')`, 10*time.Second)
		bad, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => {
			const out = window.__pwned === undefined ? [] : ['window.__pwned is set'];
			for (const n of document.querySelectorAll('#timeline *')) for (const a of n.attributes) {
				if (/^on/i.test(a.name) || (/^(href|src)$/.test(a.name) && /^\s*javascript:/i.test(a.value))) out.push(n.localName + ' ' + a.name + '=' + a.value);
			}
			return out; })()`))
		if err != nil || len(bad) > 0 {
			t.Errorf("unsafe DOM after Markdown: %q (%v)", bad, err)
		}
		text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll('.entry.assistant .md')).map(e => e.textContent).join('|')`))
		if err != nil || !strings.Contains(text, "<img src=x onerror=window.__pwned=1>") || !strings.Contains(text, "See the docs and") {
			t.Errorf("markdown text %q (%v): the raw HTML should show as text, the unsafe link as its text", text, err)
		}
	})

	t.Run("errors, limits and resume", func(t *testing.T) {
		errs, err := chromedp.Run(ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll('.entry.error .text')).map(e => e.textContent).join('|')`))
		if err != nil || !strings.Contains(errs, "MCP server failed") {
			t.Errorf("error entries %q (%v), want the stderr error", errs, err)
		}
		// A stderr line that is no error is protocol chatter: hidden.
		all, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('timeline').textContent`))
		if err != nil || strings.Contains(all, "world-readable") {
			t.Errorf("a stderr warning is shown in the conversation (%v)", err)
		}
		warn, err := chromedp.Run(ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll('.entry.warn .text')).map(e => e.textContent).join('|')`))
		if err != nil || !strings.Contains(warn, "5-hour limit") {
			t.Errorf("limit notice %q (%v)", warn, err)
		}
		// The follow-up lands in this session (--session), in the
		// conversation's directory (--cwd), on this conversation (--resume).
		resumeCmd := "claude-relay run --session demo --cwd /work/project --resume " + conv + " 'next prompt'"
		browser.WaitJS(t, ctx, `document.getElementById('resume-cmd').textContent === `+jsString(resumeCmd), 10*time.Second)
		status, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("s-status").textContent`))
		if err != nil || status != "completed" {
			t.Errorf("status %q (%v)", status, err)
		}
		cost, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("s-cost").textContent`))
		if err != nil || cost != "$0.0421" {
			t.Errorf("cost %q (%v)", cost, err)
		}
		// The copy button copies the command (the clipboard may be denied
		// headless; the button then says so instead of failing silently).
		must(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("copy-resume"))))
		browser.WaitJS(t, ctx, `/Copied|Copy failed/.test(document.getElementById('copy-resume').textContent)`, 5*time.Second)
		// What reaches the clipboard is the whole command: a recording
		// clipboard stands in for the real one, which headless Chromium may
		// deny.
		must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](
			`window.__copied = null; navigator.clipboard.writeText = async (s) => { window.__copied = s; }; undefined`)))
		must(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("copy-resume"))))
		browser.WaitJS(t, ctx, `window.__copied !== null`, 5*time.Second)
		copied, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.__copied`))
		if err != nil || copied != resumeCmd {
			t.Errorf("copied %q (%v), want %q", copied, err, resumeCmd)
		}
	})

	t.Run("screenshot", func(t *testing.T) {
		must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`)))
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		must(t, err)
		if err := os.WriteFile(ScreenshotPath, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("session page screenshot: %s (%d bytes)", ScreenshotPath, len(png))
	})

	t.Run("live event without reload", func(t *testing.T) {
		must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.__noReload = 1`)))
		browser.WaitJS(t, ctx, `document.body.dataset.live === "1"`, 10*time.Second)
		s.post("demo", assistant(conv, text("a live message 7f3a")))
		browser.WaitJS(t, ctx, `Array.from(document.querySelectorAll('.entry.assistant .text')).some(e => e.textContent === "a live message 7f3a")`, 10*time.Second)
		same, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__noReload === 1`))
		if err != nil || !same {
			t.Errorf("the page reloaded (%v)", err)
		}
		// A tool result arriving later folds under its rendered call.
		s.post("demo", assistant(conv, toolUse("toolu_live", "Bash", map[string]any{"command": "date"})))
		browser.WaitJS(t, ctx, `!!document.querySelector('.entry.tool[data-tool-use-id="toolu_live"]')`, 10*time.Second)
		s.post("demo", toolResults(conv, toolResult("toolu_live", "Fri Nov 21", false)))
		browser.WaitJS(t, ctx, `(document.querySelector('.entry.tool[data-tool-use-id="toolu_live"] .result pre') || {}).textContent === "Fri Nov 21"`, 10*time.Second)
	})

	t.Run("session list is live", func(t *testing.T) {
		must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/")))
		// Read in one evaluation: the live list may re-render the row
		// between finding it and reading it.
		browser.WaitJS(t, ctx, `(document.querySelector('#sessions tr[data-id="demo"]') || {}).textContent.includes("completed")`, 10*time.Second)
		row, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#sessions tr[data-id="demo"]').textContent`))
		must(t, err)
		for _, want := range []string{"completed", conv, "$0.0421"} {
			if !strings.Contains(row, want) {
				t.Errorf("row %q lacks %q", row, want)
			}
		}
		s.post("fresh-session", initEvent("c2"), ev{"relay.run_started", "relay", map[string]any{}})
		browser.WaitJS(t, ctx, `!!document.querySelector('#sessions tr[data-id="fresh-session"]')`, 10*time.Second)
		first, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#sessions tbody tr').dataset.id`))
		if err != nil || first != "fresh-session" {
			t.Errorf("newest session not first: %q (%v)", first, err)
		}
	})

	t.Run("no script errors", func(t *testing.T) {
		// The login page and the wrong token are 401s by design.
		noScriptErrors(t, tab, "401")
	})
}

// TestDashboardLargeSession opens a 10,000-event session: the history loads
// in pages, the page stays responsive while it does, and older entries
// render on demand.
func TestDashboardLargeSession(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	s := newSite(t, memstore.New())
	const n = 10000
	evs := make([]ev, 0, n)
	conv := "big-conv"
	evs = append(evs, initEvent(conv))
	for i := 0; len(evs) < n; i++ {
		id := fmt.Sprintf("toolu_%05d", i)
		evs = append(evs,
			assistant(conv, text(fmt.Sprintf("Step %d: checking the next file. %s", i, strings.Repeat("lorem ipsum ", 8)))),
			assistant(conv, toolUse(id, "Bash", map[string]any{"command": fmt.Sprintf("wc -l file%05d.txt", i)})),
			toolResults(conv, toolResult(id, fmt.Sprintf("%d file%05d.txt", i*7, i), false)),
		)
	}
	evs = evs[:n-1]
	evs = append(evs, assistant(conv, text("the very last event")))
	s.post("big", evs...)

	tab := browser.New(t, browser.Options{})
	ctx := tab.Ctx
	login(t, ctx, s.url)

	start := time.Now()
	must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/sessions/big")))
	// Probe the main thread while the history loads: each probe is a
	// round trip through the page's event loop, so a long freeze shows up
	// as a slow probe.
	var worst time.Duration
	probes := 0
	if !poll.Within(90*time.Second-time.Since(start), func() bool {
		p := time.Now()
		state, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.dataset.state || ""`))
		must(t, err)
		probes++
		worst = max(worst, time.Since(p))
		return state == "ready"
	}) {
		t.Fatalf("10k events not loaded after %v", time.Since(start))
	}
	loaded := time.Since(start)
	t.Logf("10k events: ready after %v; slowest of %d main-thread probes %v", loaded, probes, worst)
	// Generous: a frozen page takes many seconds; a chunked one answers
	// within a frame or two even on a slow CI machine.
	if worst > 3*time.Second {
		t.Errorf("the page did not answer for %v while loading", worst)
	}

	last, err := chromedp.Run(ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll('.entry .text')).pop().textContent`))
	if err != nil || last != "the very last event" {
		t.Errorf("last entry %q (%v)", last, err)
	}
	rendered, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#timeline .entry').length`))
	must(t, err)
	if rendered > 1000 {
		t.Errorf("%d entries in the DOM at first; the page should render a window", rendered)
	}

	// A click is handled promptly and brings older entries.
	clickAt := time.Now()
	must(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("load-older"))))
	browser.WaitJS(t, ctx, fmt.Sprintf(`document.querySelectorAll('#timeline .entry').length > %d`, rendered), 20*time.Second)
	t.Logf("load older: %v for the click and the first chunk", time.Since(clickAt))

	// Live events still arrive on a big session.
	browser.WaitJS(t, ctx, `document.body.dataset.live === "1"`, 10*time.Second)
	s.post("big", assistant(conv, text("live after 10k")))
	browser.WaitJS(t, ctx, `Array.from(document.querySelectorAll('.entry .text')).some(e => e.textContent === "live after 10k")`, 10*time.Second)
	if e := tab.Exceptions(); len(e) > 0 {
		t.Errorf("uncaught exceptions: %q", e)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
