package dashboard_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/claude-relay/claude-relay/internal/server/backend/memstore"
	"github.com/claude-relay/claude-relay/internal/testkit/browser"
)

// A 1x1 PNG, as a tool result's base64 image block carries it.
const spPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// spInter is an event of interaction inter (the fixtures' follow-ups).
type spInter struct {
	inter string
	ev
}

// spPost posts events with their interactions, in order.
func (s *site) spPost(session string, evs ...spInter) {
	s.t.Helper()
	envs := make([]map[string]any, len(evs))
	for i, e := range evs {
		envs[i] = s.envelope(session, e.ev)
		envs[i]["interaction_id"] = e.inter
	}
	postBatch(s.t, s.url, session, envs)
}

func sub(parent string, e ev) ev {
	d := e.data.(map[string]any)
	d["parent_tool_use_id"] = parent
	return e
}

func imageResult(id string) any {
	return map[string]any{"type": "tool_result", "tool_use_id": id, "content": []any{
		map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": spPNG}}}}
}

const spMarkdown = "# Plan\n\n- read the logs\n- **fix** the parser\n\n```go\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n```\n"

// backgroundSession is a background run as the relay posts it: the run's
// prompt, the CLI's protocol lines, Markdown, tools (an approval, an Edit,
// an image, a subagent with nested calls), then a follow-up turn.
func backgroundSession(conv string) []spInter {
	i1 := func(e ev) spInter { return spInter{"i1", e} }
	i2 := func(e ev) spInter { return spInter{"i2", e} }
	return []spInter{
		i1(ev{"relay.run_started", "relay", map[string]any{"run_id": "r1", "prompt": "Tidy the logs, then fix the parser", "cwd": "/work/project", "model": "claude-sonnet-4-5"}}),
		i1(ev{"control_response", "", map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": "r1", "response": map[string]any{"pid": 42}}}}),
		i1(initEvent(conv)),
		i1(ev{"system", "", map[string]any{"type": "system", "subtype": "hook_response", "session_id": conv, "stdout": "hook-noise-8812"}}),
		i1(assistant(conv, map[string]any{"type": "thinking", "thinking": "The user wants the logs first.\nThen the parser."})),
		i1(assistant(conv, text(spMarkdown))),
		i1(assistant(conv, toolUse("toolu_bash", "Bash", map[string]any{"command": "ls /var/log", "description": "List the logs"}))),
		i1(ev{"control_request", "", map[string]any{"type": "control_request", "request_id": "c9", "request": map[string]any{"subtype": "can_use_tool", "tool_name": "Bash"}}}),
		i1(ev{"relay.approval_requested", "relay", map[string]any{"run_id": "r1", "approval_id": "ap-1", "kind": "tool", "tool_name": "Bash",
			"title": "ls /var/log", "input": map[string]any{"command": "ls /var/log"}, "tool_use_id": "toolu_bash", "options": []string{"allow", "allow_always", "deny"}}}),
		i1(ev{"relay.approval_resolved", "relay", map[string]any{"run_id": "r1", "approval_id": "ap-1", "decision": "allow", "by": "dashboard", "decided_by": "phone"}}),
		i1(toolResults(conv, toolResult("toolu_bash", "syslog\nauth.log", false))),
		i1(assistant(conv, toolUse("toolu_edit", "Edit", map[string]any{"file_path": "/work/project/main.go", "old_string": "a\nb\nc\n", "new_string": "a\nB\nc\nd\n"}))),
		i1(toolResults(conv, toolResult("toolu_edit", "The file /work/project/main.go has been updated.", false))),
		i1(assistant(conv, toolUse("toolu_img", "Read", map[string]any{"file_path": "/work/project/pic.png"}))),
		i1(toolResults(conv, imageResult("toolu_img"))),
		i1(assistant(conv, toolUse("toolu_task", "Task", map[string]any{"description": "Search the codebase", "prompt": "Find the TODOs", "subagent_type": "general-purpose"}))),
		i1(sub("toolu_task", toolResults(conv, text("Find the TODOs")))),
		i1(sub("toolu_task", assistant(conv, toolUse("toolu_grep", "Grep", map[string]any{"pattern": "TODO"})))),
		i1(sub("toolu_task", toolResults(conv, toolResult("toolu_grep", "main.go:3: TODO", false)))),
		i1(sub("toolu_task", assistant(conv, text("Found one TODO in main.go.")))),
		i1(toolResults(conv, toolResult("toolu_task", "Found one TODO in main.go.", false))),
		i1(ev{"relay.stderr", "relay", map[string]any{"run_id": "r1", "line": "debug: stderr-chatter-5531"}}),
		i1(assistant(conv, text("Done: the parser is fixed. See `main.go`."))),
		i1(result(conv)),
		i1(ev{"relay.run_completed", "relay", map[string]any{"run_id": "r1", "status": "completed", "result": map[string]any{"stdout": "", "stderr": "", "exitCode": 0, "duration_ms": 84000}}}),
		i2(ev{"relay.run_started", "relay", map[string]any{"run_id": "r2", "prompt": "Now add a test", "cwd": "/work/project", "resume": conv}}),
		i2(assistant(conv, toolUse("toolu_write", "Write", map[string]any{"file_path": "/work/project/main_test.go", "content": "package main\n\nfunc TestMain(t *testing.T) {}\n"}))),
		i2(ev{"relay.approval_requested", "relay", map[string]any{"run_id": "r2", "approval_id": "ap-2", "kind": "tool", "tool_name": "Write",
			"title": "/work/project/main_test.go", "tool_use_id": "toolu_write", "options": []string{"allow", "allow_always", "deny"}}}),
	}
}

// terminalSession is a visible-terminal run: every message reported by a
// hook and by the transcript, a transcript line read twice, and the
// transcript's bookkeeping lines.
func terminalSession(conv string) []ev {
	tr := func(typ, uuid string, d map[string]any) ev {
		d["type"], d["uuid"], d["sessionId"] = typ, uuid, conv
		return ev{"transcript." + typ, "terminal", d}
	}
	msg := func(content any) map[string]any {
		return map[string]any{"role": "assistant", "model": "claude-opus-4-1", "content": content}
	}
	hook := func(name string, d map[string]any) ev {
		d["hook_event_name"], d["session_id"] = name, conv
		return ev{"hook." + name, "terminal", d}
	}
	text1 := tr("assistant", "u-3", map[string]any{"message": msg([]any{text("I'll run the tests first.")})})
	return []ev{
		{"relay.run_started", "relay", map[string]any{"run_id": "t1", "mode": "terminal", "prompt": "fix the flaky test", "cwd": "/work/proj"}},
		hook("SessionStart", map[string]any{"source": "startup"}),
		hook("UserPromptSubmit", map[string]any{"prompt": "fix the flaky test"}),
		tr("queue-operation", "", map[string]any{"operation": "enqueue"}),
		tr("user", "u-1", map[string]any{"message": map[string]any{"role": "user", "content": "fix the flaky test"}}),
		tr("attachment", "u-a1", map[string]any{"attachment": map[string]any{"type": "environment"}}),
		tr("attachment", "u-a2", map[string]any{"attachment": map[string]any{"type": "date", "date": "2026-11-23"}}),
		tr("assistant", "u-2", map[string]any{"message": msg([]any{map[string]any{"type": "thinking", "thinking": "Run them."}})}),
		// The hook comes first: the transcript's lines lag behind.
		hook("PreToolUse", map[string]any{"tool_use_id": "toolu_t1", "tool_name": "Bash", "tool_input": map[string]any{"command": "go test ./...", "description": "Run the tests"}}),
		text1,
		tr("assistant", "u-4", map[string]any{"message": msg([]any{toolUse("toolu_t1", "Bash", map[string]any{"command": "go test ./...", "description": "Run the tests"})})}),
		hook("PostToolUse", map[string]any{"tool_use_id": "toolu_t1", "tool_name": "Bash", "tool_response": map[string]any{"stdout": "ok  \tproj\t0.2s", "stderr": ""}}),
		tr("user", "u-5", map[string]any{"message": map[string]any{"role": "user", "content": []any{toolResult("toolu_t1", "ok  \tproj\t0.2s", false)}},
			"toolUseResult": map[string]any{"stdout": "ok  \tproj\t0.2s", "stderr": ""}}),
		text1, // the same transcript line again (a re-read after truncation)
		tr("cost-state", "", map[string]any{"totalCostUSD": 0.01}),
		tr("last-prompt", "", map[string]any{"lastPrompt": "fix the flaky test"}),
		hook("Stop", map[string]any{}),
		// The transcript lags: a call only the hook has reported so far.
		hook("PreToolUse", map[string]any{"tool_use_id": "toolu_t2", "tool_name": "Read", "tool_input": map[string]any{"file_path": "/work/proj/flaky_test.go"}}),
		hook("UserPromptSubmit", map[string]any{"prompt": "thanks, commit it"}),
		tr("user", "u-6", map[string]any{"message": map[string]any{"role": "user", "content": "thanks, commit it"}}),
		tr("assistant", "u-7", map[string]any{"message": msg([]any{text("Committed as `fix: deflake`.")})}),
		hook("Notification", map[string]any{"message": "Claude is waiting for your input"}),
		hook("SessionEnd", map[string]any{"reason": "exit"}),
		{"relay.run_completed", "relay", map[string]any{"run_id": "t1", "mode": "terminal", "status": "completed", "result": map[string]any{"exitCode": 0, "duration_ms": 50000}}},
	}
}

// spOpen logs in and opens a session's page, waiting until it is ready.
func spOpen(t *testing.T, tab *browser.Tab, s *site, path string) {
	t.Helper()
	login(t, tab.Ctx, s.url)
	if err := chromedp.Do(tab.Ctx, chromedp.Navigate(s.url+path)); err != nil {
		t.Fatal(err)
	}
	browser.WaitJS(t, tab.Ctx, `document.body.dataset.state === "ready"`, 30*time.Second)
}

// TestSessionConversation: a background session reads as a conversation.
func TestSessionConversation(t *testing.T) {
	s := newSite(t, memstore.New())
	const conv = "5d0c7a52-2f39-4a8e-9a43-0c0ffee00001"
	fixture := backgroundSession(conv)
	s.spPost("bg", fixture...)
	tab := browser.New(t, browser.Options{Width: 1280, Height: 900})
	ctx := tab.Ctx
	spOpen(t, tab, s, "/sessions/bg")

	t.Run("prompt first, grouped by turn", func(t *testing.T) {
		first := browser.Eval[string](t, ctx, `(() => { const n = document.querySelector('#timeline > .entry'); return n.className + ': ' + (n.querySelector('.prompt') || {}).textContent; })()`)
		if first != "entry turn: Tidy the logs, then fix the parser" {
			t.Errorf("first card %q, want the prompt's turn", first)
		}
		prompts := browser.Eval[[]string](t, ctx, `Array.from(document.querySelectorAll('.entry.turn .prompt')).map(e => e.textContent)`)
		if strings.Join(prompts, "|") != "Tidy the logs, then fix the parser|Now add a test" {
			t.Errorf("turn prompts %q", prompts)
		}
		stats := browser.Eval[string](t, ctx, `document.querySelector('.entry.turn .turn-stats').textContent`)
		for _, want := range []string{"completed", "1m 23s", "$0.0421"} {
			if !strings.Contains(stats, want) {
				t.Errorf("first turn's stats %q lack %q", stats, want)
			}
		}
		head := browser.Eval[string](t, ctx, `document.getElementById('s-title').textContent + '|' + document.getElementById('s-project').textContent + '|' + document.getElementById('s-source').textContent + '|' + document.getElementById('s-model').textContent`)
		if head != "Tidy the logs, then fix the parser|/work/project|background|claude-sonnet-4-5" {
			t.Errorf("header %q", head)
		}
	})

	t.Run("markdown", func(t *testing.T) {
		browser.WaitJS(t, ctx, `!!document.querySelector('.entry.assistant .md h1')`, 10*time.Second)
		got := browser.Eval[string](t, ctx, `(() => { const md = document.querySelector('.entry.assistant .md');
			return [md.querySelector('h1').textContent, md.querySelectorAll('ul > li').length, md.querySelector('li strong').textContent,
			  md.querySelector('pre.hl-chroma .hl-kd').textContent].join('|'); })()`)
		if got != "Plan|2|fix|func" {
			t.Errorf("rendered markdown %q", got)
		}
		// Highlighted: the keyword has the theme's colour, not the text's.
		colors := browser.Eval[[]string](t, ctx, `(() => { const md = document.querySelector('.entry.assistant .md');
			return [getComputedStyle(md.querySelector('.hl-kd')).color, getComputedStyle(md.querySelector('p, li')).color]; })()`)
		if colors[0] == colors[1] {
			t.Errorf("the code keyword is not coloured: %v", colors)
		}
	})

	t.Run("tool call with its result folded", func(t *testing.T) {
		got := browser.Eval[string](t, ctx, `(() => { const n = document.querySelector('.entry.tool[data-tool-use-id="toolu_bash"]');
			const d = n.querySelector('details.result');
			return [n.querySelector('.title').textContent, n.querySelector('.state').textContent, d.open, d.querySelector('pre').textContent,
			  n.querySelector('.approval-note').textContent].join('|'); })()`)
		if got != "List the logs|done|false|syslog\nauth.log|Approval: Allowed by dashboard (phone)" {
			t.Errorf("bash card %q", got)
		}
		// The result event has no card of its own.
		if n := browser.Eval[int](t, ctx, `Array.from(document.querySelectorAll('#timeline > .entry')).filter(e => e.textContent.includes('auth.log')).length`); n != 1 {
			t.Errorf("the output shows in %d cards, want 1", n)
		}
	})

	t.Run("edit as a diff", func(t *testing.T) {
		got := browser.Eval[string](t, ctx, `(() => { const d = document.querySelector('.entry.tool[data-tool-use-id="toolu_edit"] .diff');
			return Array.from(d.querySelectorAll('.dl')).map(l => l.className.replace('dl ', '') + ':' + l.textContent).join(','); })()`)
		if got != "ctx: a,del:-b,add:+B,ctx: c,add:+d" {
			t.Errorf("edit diff %q", got)
		}
		write := browser.Eval[string](t, ctx, `Array.from(document.querySelectorAll('.entry.tool[data-tool-use-id="toolu_write"] .diff .dl')).map(l => l.className.replace('dl ', '')).join(',')`)
		if write != "add,add,add" {
			t.Errorf("write diff %q, want every line added", write)
		}
	})

	t.Run("image from a tool result", func(t *testing.T) {
		browser.WaitJS(t, ctx, `(() => { const i = document.querySelector('.entry.tool[data-tool-use-id="toolu_img"] .images img'); return !!i && i.complete && i.naturalWidth === 1; })()`, 10*time.Second)
		src := browser.Eval[string](t, ctx, `document.querySelector('.entry.tool[data-tool-use-id="toolu_img"] .images img').getAttribute('src')`)
		if src != "data:image/png;base64,"+spPNG {
			t.Errorf("image src %q", src)
		}
	})

	t.Run("subagent calls nested", func(t *testing.T) {
		got := browser.Eval[string](t, ctx, `(() => { const task = document.querySelector('#timeline > .entry.tool[data-tool-use-id="toolu_task"]');
			const kids = task.querySelector('.children');
			return [task.querySelector('.title').textContent,
			  Array.from(kids.querySelectorAll(':scope > .entry')).map(e => e.className.replace('entry ', '')).join('+'),
			  kids.querySelector('.entry.tool[data-tool-use-id="toolu_grep"] details.result pre').textContent,
			  !!document.querySelector('#timeline > .entry.tool[data-tool-use-id="toolu_grep"]')].join('|'); })()`)
		if got != "Search the codebase|user+tool+assistant|main.go:3: TODO|false" {
			t.Errorf("task card %q", got)
		}
	})

	t.Run("thinking folded", func(t *testing.T) {
		got := browser.Eval[string](t, ctx, `(() => { const d = document.querySelector('.entry.thinking details'); return d.open + '|' + d.querySelector('summary').textContent; })()`)
		if got != "false|The user wants the logs first." {
			t.Errorf("thinking %q", got)
		}
	})

	t.Run("approvals", func(t *testing.T) {
		got := browser.Eval[[]string](t, ctx, `Array.from(document.querySelectorAll('.entry.approval-card')).map(a => a.className + '|' + a.querySelector('.outcome').textContent + '|' + ((a.querySelector('a.decide') || {}).href || ''))`)
		if len(got) != 2 || !strings.Contains(got[0], "is-resolved|Allowed by dashboard (phone)") ||
			!strings.Contains(got[1], "is-pending|waiting for a decisionDecide|"+s.url+"/approvals#ap-2") {
			t.Errorf("approval cards %q", got)
		}
	})

	t.Run("screenshot", func(t *testing.T) {
		browser.WaitJS(t, ctx, `document.body.dataset.state === "ready" && !!document.querySelector('.entry.assistant .md h1')`, 10*time.Second)
		screenshot(t, tab, "session.png", 1280, 800)
	})

	t.Run("noise hidden, shown by the toggle", func(t *testing.T) {
		body := browser.Eval[string](t, ctx, `document.getElementById('timeline').textContent`)
		for _, noise := range []string{"control_response", "can_use_tool", "hook-noise-8812", "stderr-chatter-5531"} {
			if strings.Contains(body, noise) {
				t.Errorf("the conversation shows %q", noise)
			}
		}
		must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById('show-all').click()`)))
		browser.WaitJS(t, ctx, fmt.Sprintf(`document.querySelectorAll('#timeline > .entry.raw').length === %d`, len(fixture)), 10*time.Second)
		kinds := browser.Eval[string](t, ctx, `Array.from(document.querySelectorAll('#timeline > .entry.raw .meta .kind')).map(k => k.textContent).join(',')`)
		for _, want := range []string{"control_response · agent", "control_request · agent", "relay.stderr · relay", "system · agent"} {
			if !strings.Contains(kinds, want) {
				t.Errorf("raw view lacks %q: %s", want, kinds)
			}
		}
		must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById('show-all').click()`)))
		browser.WaitJS(t, ctx, `document.body.dataset.view === 'conversation' && !!document.querySelector('#timeline > .entry.turn')`, 10*time.Second)
	})

	t.Run("permalinks", func(t *testing.T) {
		ids := browser.Eval[string](t, ctx, `Array.from(document.querySelectorAll('#timeline > .entry')).filter(e => !/^c\d+$/.test(e.id)).map(e => e.className).join(',')`)
		if ids != "" {
			t.Errorf("cards without an anchor: %s", ids)
		}
		// The Edit's result event links to the Edit's card.
		must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/sessions/bg#c13")))
		browser.WaitJS(t, ctx, `document.body.dataset.state === "ready" && document.body.dataset.target === "13"`, 20*time.Second)
		got := browser.Eval[string](t, ctx, `(() => { const n = document.querySelector('.entry.target'); const r = n.getBoundingClientRect();
			return n.dataset.toolUseId + '|' + (r.top >= 0 && r.bottom <= innerHeight); })()`)
		if got != "toolu_edit|true" {
			t.Errorf("target %q, want the Edit's card on screen", got)
		}
		// A hidden event opens the raw view at it.
		must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/sessions/bg#c2")))
		browser.WaitJS(t, ctx, `document.body.dataset.target === "2"`, 20*time.Second)
		got = browser.Eval[string](t, ctx, `document.body.dataset.view + '|' + document.querySelector('.entry.target .meta .kind').textContent`)
		if got != "all|control_response · agent" {
			t.Errorf("hidden event's permalink: %q", got)
		}
	})

	t.Run("copy the resume command", func(t *testing.T) {
		must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/sessions/bg?reload")))
		browser.WaitJS(t, ctx, `document.body.dataset.state === "ready"`, 20*time.Second)
		want := "claude-relay run --session bg --cwd /work/project --resume " + conv + " 'next prompt'"
		browser.WaitJS(t, ctx, `document.getElementById('resume-cmd').textContent === `+jsString(want), 10*time.Second)
		must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](
			`window.__copied = null; navigator.clipboard.writeText = async (s) => { window.__copied = s; }; undefined`)))
		must(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("copy-resume"))))
		browser.WaitJS(t, ctx, `window.__copied !== null && document.getElementById('copy-resume').textContent === 'Copied'`, 5*time.Second)
		if got := browser.Eval[string](t, ctx, `window.__copied`); got != want {
			t.Errorf("copied %q, want %q", got, want)
		}
	})

	t.Run("live", func(t *testing.T) {
		browser.WaitJS(t, ctx, `document.body.dataset.live === "1"`, 10*time.Second)
		s.spPost("bg",
			spInter{"i1", sub("toolu_task", assistant(conv, text("A *late* step.")))},
			spInter{"i2", ev{"relay.approval_resolved", "relay", map[string]any{"run_id": "r2", "approval_id": "ap-2", "decision": "deny", "by": "extension", "reason": "not now"}}},
			spInter{"i2", assistant(conv, text("## Stopped\n\nThe write was denied."))},
		)
		browser.WaitJS(t, ctx, `Array.from(document.querySelectorAll('[data-tool-use-id="toolu_task"] .children .md em')).some(e => e.textContent === 'late')`, 10*time.Second)
		browser.WaitJS(t, ctx, `(() => { const a = document.querySelectorAll('.entry.approval-card')[1];
			return a.classList.contains('is-denied') && a.querySelector('.outcome .what').textContent === 'Denied by extension: not now' && !a.querySelector('a.decide'); })()`, 10*time.Second)
		browser.WaitJS(t, ctx, `(Array.from(document.querySelectorAll('#timeline > .entry.assistant .md h2')).pop() || {}).textContent === 'Stopped'`, 10*time.Second)
	})

	noScriptErrors(t, tab, "401", "/api/approvals")
}

// TestSessionTerminalMerged: a terminal session shows each message once,
// though hooks and the transcript both report it.
func TestSessionTerminalMerged(t *testing.T) {
	s := newSite(t, memstore.New())
	s.post("term", terminalSession("c0ffee00-0000-4000-8000-00000000000t")...)
	tab := browser.New(t, browser.Options{Width: 1280, Height: 900})
	ctx := tab.Ctx
	spOpen(t, tab, s, "/sessions/term")
	browser.WaitJS(t, ctx, `document.body.dataset.markdown === 'done'`, 20*time.Second)

	prompts := browser.Eval[[]string](t, ctx, `Array.from(document.querySelectorAll('.entry.turn .prompt')).map(e => e.textContent)`)
	if strings.Join(prompts, "|") != "fix the flaky test|thanks, commit it" {
		t.Errorf("turns %q, want one per prompt", prompts)
	}
	// One card per message, in the transcript's order: the hook's early
	// tool card moved to where the transcript put its tool_use.
	cards := browser.Eval[[]string](t, ctx, `Array.from(document.querySelectorAll('#timeline > .entry')).map(e =>
		e.classList.contains('tool') ? 'tool:' + e.dataset.toolUseId + ':' + e.dataset.source :
		e.classList.contains('turn') ? 'turn' : e.className.replace('entry ', '') + (e.querySelector('.text') ? ':' + e.querySelector('.text').textContent : ''))`)
	want := []string{
		"turn", "thinking:Run them.", "assistant:I'll run the tests first.", "tool:toolu_t1:message", "tool:toolu_t2:hook",
		"turn", "assistant:Committed as fix: deflake.", "warn:Claude is waiting for your input",
	}
	if strings.Join(cards, "\n") != strings.Join(want, "\n") {
		t.Errorf("cards:\n%s\nwant:\n%s", strings.Join(cards, "\n"), strings.Join(want, "\n"))
	}
	out := browser.Eval[string](t, ctx, `(() => { const n = document.querySelector('.entry.tool[data-tool-use-id="toolu_t1"]');
		return n.querySelectorAll('details.result').length + '|' + n.querySelector('details.result pre').textContent + '|' + n.querySelector('.title').textContent; })()`)
	if out != "1|ok  \tproj\t0.2s|Run the tests" {
		t.Errorf("merged tool card %q", out)
	}
	// The terminal turn shows its run's end.
	if stats := browser.Eval[string](t, ctx, `document.querySelectorAll('.entry.turn')[1].querySelector('.turn-stats').textContent`); !strings.Contains(stats, "completed") {
		t.Errorf("last turn's stats %q", stats)
	}
	// The header's facts come from the events where the store has none.
	if head := browser.Eval[string](t, ctx, `['s-title', 's-project', 's-source', 's-model'].map(id => document.getElementById(id).textContent).join('|')`); head != "fix the flaky test|/work/proj|terminal|claude-opus-4-1" {
		t.Errorf("header %q", head)
	}
	screenshot(t, tab, "terminal.png", 1280, 800)

	t.Run("live", func(t *testing.T) {
		// The same merge on events arriving while the page is open: the
		// hook's card first, then moved below the text the transcript puts
		// before its tool_use; the text rendered as Markdown.
		browser.WaitJS(t, ctx, `document.body.dataset.live === "1"`, 10*time.Second)
		hook := func(name string, d map[string]any) ev { return ev{"hook." + name, "terminal", d} }
		tr := func(uuid string, d map[string]any) ev {
			d["uuid"] = uuid
			return ev{"transcript." + d["type"].(string), "terminal", d}
		}
		s.post("term", hook("PreToolUse", map[string]any{"tool_use_id": "toolu_live", "tool_name": "Bash", "tool_input": map[string]any{"command": "make"}}))
		browser.WaitJS(t, ctx, `!!document.querySelector('#timeline > .entry.tool[data-tool-use-id="toolu_live"]')`, 10*time.Second)
		s.post("term",
			tr("u-8", map[string]any{"type": "assistant", "message": map[string]any{"content": []any{text("Now **building**.")}}}),
			tr("u-9", map[string]any{"type": "assistant", "message": map[string]any{"content": []any{toolUse("toolu_live", "Bash", map[string]any{"command": "make", "description": "Build"})}}}),
			hook("PostToolUse", map[string]any{"tool_use_id": "toolu_live", "tool_response": map[string]any{"stdout": "built"}}),
			tr("u-10", map[string]any{"type": "user", "message": map[string]any{"content": []any{toolResult("toolu_live", "built", false)}}}),
		)
		browser.WaitJS(t, ctx, `(() => { const cards = Array.from(document.querySelectorAll('#timeline > .entry')).slice(-2);
			return cards.length === 2 && !!cards[0].querySelector('.md strong') && cards[1].dataset.toolUseId === 'toolu_live' &&
			  cards[1].dataset.source === 'message' && cards[1].querySelector('.title').textContent === 'Build' &&
			  cards[1].querySelectorAll('details.result').length === 1 && cards[1].querySelector('details.result pre').textContent === 'built'; })()`, 10*time.Second)
		if n := browser.Eval[int](t, ctx, `document.querySelectorAll('.entry.tool[data-tool-use-id="toolu_live"]').length`); n != 1 {
			t.Errorf("%d cards for the live call, want 1", n)
		}
	})
	noScriptErrors(t, tab, "401", "/api/approvals")
}

// spXSS is Markdown that must not run anything: internal/server/markdown's own
// table, in the browser. Each payload would set window.__pwned.
var spXSS = []string{
	"[x](javascript:window.__pwned=1)",
	"[x](JaVaScRiPt:window.__pwned=1)",
	"<javascript:window.__pwned=1>",
	"<script>window.__pwned=1</script>",
	"text <script>window.__pwned=1</script> more",
	"<img src=x onerror=window.__pwned=1>",
	"see <img src=x onerror=\"window.__pwned=1\"> here",
	`<iframe src="javascript:window.parent.__pwned=1"></iframe>`,
	`![x](x" onerror="window.__pwned=1)`,
	`![x](<x" onerror="window.__pwned=1>)`,
	"![x](javascript:window.__pwned=1)",
	"[x](data:text/html;base64,PHNjcmlwdD53aW5kb3cuX19wd25lZD0xPC9zY3JpcHQ+)",
	"[x](data:text/html,<script>window.__pwned=1</script>)",
	`<a href="jav&#x09;ascript:window.__pwned=1">x</a>`,
	"[x](jav&#x09;ascript:window.__pwned=1)",
	"<svg onload=window.__pwned=1>",
	`[x](https://example.com "a\" onmouseover=\"window.__pwned=1")`,
	"[x][r]\n\n[r]: javascript:window.__pwned=1",
	"```\"><img src=x onerror=window.__pwned=1>\nx\n```",
	"<details open ontoggle=window.__pwned=1>",
	"![remote](https://example.com/pixel.png)",
}

// TestSessionMarkdownXSS: hostile Markdown in the assistant's text runs
// nothing: no handler attribute, no script URL, no frame, in the DOM.
func TestSessionMarkdownXSS(t *testing.T) {
	s := newSite(t, memstore.New())
	evs := []ev{{"relay.run_started", "relay", map[string]any{"prompt": "<img src=x onerror=window.__pwned=1>"}}}
	for _, p := range spXSS {
		evs = append(evs, assistant("c", text(p)))
	}
	// Tool output, approval titles and raw cards are event content too.
	evs = append(evs,
		assistant("c", toolUse("toolu_x", "<img src=x onerror=window.__pwned=1>", map[string]any{"command": "<script>window.__pwned=1</script>"})),
		toolResults("c", toolResult("toolu_x", "<iframe src=javascript:window.parent.__pwned=1>", true)),
		ev{"<svg onload=window.__pwned=1>", "relay", map[string]any{"text": "<img src=x onerror=window.__pwned=1>"}},
	)
	s.post("xss", evs...)
	tab := browser.New(t, browser.Options{})
	ctx := tab.Ctx
	spOpen(t, tab, s, "/sessions/xss")
	browser.WaitJS(t, ctx, `document.body.dataset.markdown === 'done' && document.querySelectorAll('.entry.assistant .md').length === `+fmt.Sprint(len(spXSS)), 20*time.Second)

	check := func(t *testing.T) {
		t.Helper()
		// The barrier for handlers: every image has loaded or failed, and
		// an image fires its load or error event in the task that settles
		// it, so a handler that got through has run by now.
		browser.WaitJS(t, ctx, `Array.from(document.images).every((i) => i.complete)`, 10*time.Second)
		bad := browser.Eval[[]string](t, ctx, `(() => {
			const out = [];
			if (window.__pwned !== undefined) out.push('window.__pwned is set');
			for (const n of document.querySelectorAll('#timeline *')) {
				const tag = n.localName;
				if (['script', 'iframe', 'object', 'embed', 'svg', 'style', 'form'].includes(tag)) out.push('<' + tag + '>');
				for (const a of n.attributes) {
					if (/^on/i.test(a.name) || a.name === 'style') out.push(tag + ' ' + a.name + '=' + a.value);
					if ((a.name === 'href' || a.name === 'src') && /^\s*(javascript|vbscript|data:text)/i.test(a.value)) out.push(tag + ' ' + a.name + '=' + a.value);
					if (a.name === 'src' && !/^data:image\//.test(a.value)) out.push('remote ' + tag + ' ' + a.value);
				}
			}
			return out; })()`)
		if len(bad) > 0 {
			t.Errorf("unsafe DOM: %q", bad)
		}
	}
	t.Run("conversation", check)
	// The literal text stays readable: the raw HTML is shown, not dropped.
	if got := browser.Eval[string](t, ctx, `document.getElementById('timeline').textContent`); !strings.Contains(got, "<img src=x onerror=window.__pwned=1>") {
		t.Errorf("the raw HTML is not shown as text")
	}
	t.Run("links are safe", func(t *testing.T) {
		links := browser.Eval[[]string](t, ctx, `Array.from(document.querySelectorAll('#timeline .md a')).map(a => a.getAttribute('href') + ' ' + a.rel + ' ' + a.target)`)
		for _, l := range links {
			if !strings.HasPrefix(l, "https://example.com") || !strings.HasSuffix(l, " nofollow noopener noreferrer _blank") {
				t.Errorf("link %q", l)
			}
		}
	})
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById('show-all').click()`)))
	browser.WaitJS(t, ctx, `document.body.dataset.view === 'all'`, 10*time.Second)
	// Raw cards' details hold the payloads too.
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('#timeline details').forEach(d => d.open = true)`)))
	t.Run("raw view", check)
	noScriptErrors(t, tab, "401", "/api/approvals")
}

// TestSessionBadInput: what no CLI should send still makes a page.
func TestSessionBadInput(t *testing.T) {
	s := newSite(t, memstore.New())
	huge := strings.Repeat("0123456789abcdef", 2<<20/16) // 2 MiB
	deep := any("bottom")
	for range 1000 {
		deep = map[string]any{"x": deep}
	}
	deepList := any(1)
	for range 1000 {
		deepList = []any{deepList}
	}
	binary := "\x00\x01\x02\x1b[31mred\x1b[0m\u202eevil\ufffd\u0007bell\xff"
	s.post("bad",
		ev{"relay.run_started", "relay", map[string]any{"prompt": huge}},
		ev{"mystery_type", "agent", map[string]any{"type": "mystery", "text": "something new"}},
		ev{"assistant", "agent", map[string]any{}},
		ev{"assistant", "agent", map[string]any{"message": "not an object"}},
		ev{"assistant", "agent", map[string]any{"message": map[string]any{"content": []any{nil, 7, "str", map[string]any{"type": 9}, map[string]any{"type": "tool_use"}}}}},
		ev{"user", "agent", map[string]any{"message": map[string]any{"content": []any{map[string]any{"type": "tool_result"}}}}},
		ev{"result", "agent", map[string]any{"subtype": 5, "is_error": "yes", "usage": "lots"}},
		ev{"relay.run_completed", "relay", map[string]any{"result": "not an object"}},
		ev{"relay.approval_resolved", "relay", map[string]any{}},
		ev{"hook.PostToolUse", "terminal", map[string]any{"tool_response": nil}},
		assistant("c", text(huge)),
		assistant("c", text(binary)),
		assistant("c", toolUse("toolu_huge", "Bash", map[string]any{"command": huge})),
		assistant("c", toolUse("toolu_deep", "Deep", map[string]any{"x": deep})),
		toolResults("c", map[string]any{"type": "tool_result", "tool_use_id": "toolu_deep", "content": []any{deepList}}),
		ev{"deep_event", "agent", map[string]any{"x": deep}},
		assistant("c", toolUse("toolu_edit", "Edit", map[string]any{"file_path": "f", "old_string": strings.Repeat("a\n", 3000), "new_string": strings.Repeat("b\n", 3000)})),
		assistant("c", text("the end")),
	)
	tab := browser.New(t, browser.Options{})
	ctx := tab.Ctx
	spOpen(t, tab, s, "/sessions/bad")
	browser.WaitJS(t, ctx, `document.body.dataset.markdown === 'done'`, 20*time.Second)

	last := browser.Eval[string](t, ctx, `Array.from(document.querySelectorAll('#timeline > .entry.assistant .text')).pop().textContent`)
	if last != "the end" {
		t.Errorf("last card %q", last)
	}
	// The 2 MiB prompt and text are folded with a "Show all" button.
	folded := browser.Eval[int](t, ctx, `document.querySelectorAll('#timeline .show-all').length`)
	if folded < 3 {
		t.Errorf("%d Show all buttons, want the prompt, the text and the command folded", folded)
	}
	shown := browser.Eval[int](t, ctx, `Math.max(...Array.from(document.querySelectorAll('#timeline .text, #timeline .prompt, #timeline pre')).map(e => e.textContent.length))`)
	if shown > 100000 {
		t.Errorf("a %d-character text is shown unfolded", shown)
	}
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector('.entry.turn .show-all').click()`)))
	if n := browser.Eval[int](t, ctx, `document.querySelector('.entry.turn .prompt').textContent.length`); n != len(huge) {
		t.Errorf("Show all shows %d characters, want %d", n, len(huge))
	}
	// Unknown types are cards with their data folded; deep JSON opens.
	if got := browser.Eval[string](t, ctx, `Array.from(document.querySelectorAll('#timeline > .entry.minor .kind')).map(k => k.textContent).join(',')`); !strings.Contains(got, "mystery_type") || !strings.Contains(got, "deep_event") {
		t.Errorf("unknown types' cards: %q", got)
	}
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('#timeline details').forEach(d => d.open = true)`)))
	browser.WaitJS(t, ctx, `Array.from(document.querySelectorAll('#timeline details.json')).every(d => d.querySelector('pre'))`, 10*time.Second)
	// The binary-ish text is text.
	if got := browser.Eval[bool](t, ctx, `Array.from(document.querySelectorAll('#timeline .text')).some(e => e.textContent.includes('red') && e.textContent.includes('bell'))`); !got {
		t.Errorf("the binary-ish text is not shown")
	}
	// A long Edit's diff is bounded, with the rest behind a button.
	if n := browser.Eval[int](t, ctx, `document.querySelectorAll('.entry.tool[data-tool-use-id="toolu_edit"] .dl').length`); n > 500 {
		t.Errorf("%d diff lines rendered at once", n)
	}
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById('show-all').click()`)))
	browser.WaitJS(t, ctx, `document.querySelectorAll('#timeline > .entry.raw').length === 18`, 10*time.Second)
	noScriptErrors(t, tab, "401", "/api/approvals")
}

// TestSessionKeysAndPermalinks: j/k move between turns; a permalink into a
// long session opens the window around its event.
func TestSessionKeysAndPermalinks(t *testing.T) {
	s := newSite(t, memstore.New())
	var evs []spInter
	for turn := 1; turn <= 3; turn++ {
		inter := fmt.Sprintf("i%d", turn)
		evs = append(evs, spInter{inter, ev{"relay.run_started", "relay", map[string]any{"prompt": fmt.Sprintf("prompt %d", turn)}}})
		for i := range 40 {
			evs = append(evs, spInter{inter, assistant("c", text(fmt.Sprintf("turn %d step %d\n\nwith a second paragraph", turn, i)))})
		}
		evs = append(evs, spInter{inter, ev{"relay.run_completed", "relay", map[string]any{"result": map[string]any{"exitCode": 0, "duration_ms": 1000}}}})
	}
	s.spPost("keys", evs...)
	// A long one, for permalinks outside the first window.
	var long []ev
	long = append(long, ev{"relay.run_started", "relay", map[string]any{"prompt": "a long one"}})
	for i := range 3000 {
		long = append(long, assistant("c", text(fmt.Sprintf("message %d", i+2))))
	}
	s.post("long", long...)

	tab := browser.New(t, browser.Options{Width: 1280, Height: 800})
	ctx := tab.Ctx
	spOpen(t, tab, s, "/sessions/keys")
	// The Markdown replaces the escaped text and changes the cards'
	// heights: a turn scrolled to the top before that moves.
	browser.WaitJS(t, ctx, `document.body.dataset.markdown === 'done'`, 20*time.Second)

	t.Run("j and k", func(t *testing.T) {
		must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`)))
		atTop := func(n string) {
			t.Helper()
			browser.WaitJS(t, ctx, `document.body.dataset.turn === "`+n+`"`, 5*time.Second)
			got := browser.Eval[string](t, ctx, `(() => { const n = document.querySelector('.entry.turn[data-turn="`+n+`"]'); const r = n.getBoundingClientRect();
				const bar = document.querySelector('.top').getBoundingClientRect().bottom;
				return n.classList.contains('target') + '|' + (r.top >= bar && r.top < bar + 40); })()`)
			if got != "true|true" {
				t.Errorf("turn %s: highlighted and at the top: %s", n, got)
			}
		}
		for _, step := range []struct{ key, turn string }{{"j", "1"}, {"j", "2"}, {"j", "3"}, {"k", "2"}, {"k", "1"}} {
			pressKey(t, ctx, step.key, "Key"+strings.ToUpper(step.key), 0)
			atTop(step.turn)
		}
	})

	t.Run("permalink outside the window", func(t *testing.T) {
		must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/sessions/long#c5")))
		browser.WaitJS(t, ctx, `document.body.dataset.state === "ready" && document.body.dataset.target === "5"`, 30*time.Second)
		got := browser.Eval[string](t, ctx, `(() => { const n = document.getElementById('c5'); const r = n.getBoundingClientRect();
			return n.classList.contains('target') + '|' + n.querySelector('.text').textContent + '|' + (r.top >= 0 && r.bottom <= innerHeight) + '|' + !document.getElementById('jump-end').hidden; })()`)
		if got != "true|message 5|true|true" {
			t.Errorf("permalinked card: %q", got)
		}
		// Jump to latest brings the end.
		must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById('jump-end').click()`)))
		browser.WaitJS(t, ctx, `document.body.dataset.at === 'end'`, 20*time.Second)
		last := browser.Eval[string](t, ctx, `(() => { const n = Array.from(document.querySelectorAll('#timeline > .entry')).pop(); const r = n.getBoundingClientRect();
			return n.querySelector('.text').textContent + '|' + (r.bottom <= innerHeight + 1); })()`)
		if last != "message 3001|true" {
			t.Errorf("after Jump to latest: %q", last)
		}
		// Clicking a card's permalink moves the highlight there.
		must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`Array.from(document.querySelectorAll('#timeline > .entry .permalink')).at(-3).click()`)))
		browser.WaitJS(t, ctx, `document.body.dataset.target === "2999" && document.querySelector('.entry.target').id === 'c2999'`, 5*time.Second)
	})
	noScriptErrors(t, tab, "401", "/api/approvals")
}

// TestSessionFollowUps: a live run's follow-up shows as its turn's prompt
// (relay.message_sent, the first event of its interaction); a follow-up
// from before the relay posted it still gets a turn, saying its message
// was not recorded.
func TestSessionFollowUps(t *testing.T) {
	s := newSite(t, memstore.New())
	const conv = "5d0c7a52-2f39-4a8e-9a43-0c0ffee00002"
	turn := func(inter string, first ev, answer string, n int) []spInter {
		return []spInter{
			{inter, first},
			{inter, assistant(conv, text(answer))},
			{inter, result(conv)},
			{inter, ev{"relay.turn_completed", "relay", map[string]any{"run_id": "r1", "turn": n, "status": "completed", "result": map[string]any{"duration_ms": 2000}}}},
		}
	}
	started := ev{"relay.run_started", "relay", map[string]any{"run_id": "r1", "prompt": "Read the parser", "cwd": "/work/project"}}
	live := append(turn("i1", started, "The parser reads tokens.", 1),
		turn("i2", ev{"relay.message_sent", "relay", map[string]any{"run_id": "r1", "prompt": "Now speed it up"}}, "Twice as fast now.", 2)...)
	s.spPost("live", live...)
	// Before relay.message_sent: the follow-up's interaction starts with
	// what the CLI said.
	old := append(turn("i1", started, "The parser reads tokens.", 1), spInter{"i2", assistant(conv, text("Twice as fast now."))},
		spInter{"i2", result(conv)})
	s.spPost("old", old...)

	tab := browser.New(t, browser.Options{Width: 1280, Height: 900})
	ctx := tab.Ctx
	turns := func() string {
		t.Helper()
		return browser.Eval[string](t, ctx, `Array.from(document.querySelectorAll('#timeline > .entry.turn')).map(n =>
			n.dataset.turn + ':' + n.querySelector('.prompt').textContent + ':' + n.querySelector('.meta .kind').textContent).join('|')`)
	}
	spOpen(t, tab, s, "/sessions/live")
	if got := turns(); got != "1:Read the parser:prompt|2:Now speed it up:turn 2" {
		t.Errorf("turns %q, want the follow-up's prompt as turn 2's", got)
	}
	// The follow-up's answer is under its turn, and its prompt is not a
	// card of its own.
	cards := browser.Eval[string](t, ctx, `Array.from(document.querySelectorAll('#timeline > .entry')).map(e =>
		e.classList.contains('turn') ? 'turn' : e.className.replace('entry ', '') + ':' + e.querySelector('.text').textContent).join('|')`)
	if cards != "turn|assistant:The parser reads tokens.|turn|assistant:Twice as fast now." {
		t.Errorf("cards %q", cards)
	}
	if title := browser.Eval[string](t, ctx, `document.getElementById('s-title').textContent`); title != "Read the parser" {
		t.Errorf("title %q, want the first prompt", title)
	}

	spOpen(t, tab, s, "/sessions/old")
	if got := turns(); got != "1:Read the parser:prompt|2:Follow-up (its message was not recorded):turn 2" {
		t.Errorf("turns of a session from before relay.message_sent: %q", got)
	}
	noScriptErrors(t, tab, "401", "/api/approvals")
}

// TestSessionApprovalLink: /sessions/<id>#approval-<id>, as the approvals
// page links an approval, opens the window around its card and highlights
// it, however far back it is; an approval that is not there yet is shown
// when it arrives.
func TestSessionApprovalLink(t *testing.T) {
	s := newSite(t, memstore.New())
	const id = "ap 7/x" // URL-encoded in the link
	var evs []ev
	evs = append(evs, ev{"relay.run_started", "relay", map[string]any{"run_id": "r1", "prompt": "a long one"}})
	for i := range 2500 {
		evs = append(evs, assistant("c", text(fmt.Sprintf("message %d", i+2))))
		if i == 1200 { // past the first page of history and the last window
			evs = append(evs,
				assistant("c", toolUse("toolu_ap", "Bash", map[string]any{"command": "rm -rf build", "description": "Clean"})),
				ev{"relay.approval_requested", "relay", map[string]any{"run_id": "r1", "approval_id": id, "kind": "tool", "tool_name": "Bash",
					"title": "rm -rf build", "tool_use_id": "toolu_ap", "options": []string{"allow", "deny"}}},
				ev{"relay.approval_resolved", "relay", map[string]any{"run_id": "r1", "approval_id": id, "decision": "deny", "by": "dashboard"}},
			)
		}
	}
	evs = append(evs, ev{"relay.approval_requested", "relay", map[string]any{"run_id": "r1", "approval_id": "ap-end", "kind": "tool", "tool_name": "Write", "title": "notes.md"}})
	s.post("long", evs...)

	tab := browser.New(t, browser.Options{Width: 1280, Height: 800})
	ctx := tab.Ctx
	login(t, ctx, s.url)
	onScreen := func(want string) {
		t.Helper()
		// Still there once the window's Markdown replaced its text.
		browser.WaitJS(t, ctx, `document.body.dataset.markdown === 'done'`, 20*time.Second)
		got := browser.Eval[string](t, ctx, `(() => { const n = document.querySelector('.entry.target'); if (!n) return 'no target';
			const r = n.getBoundingClientRect();
			return n.dataset.approvalId + '|' + n.classList.contains('approval-card') + '|' + (r.top >= 0 && r.bottom <= innerHeight) + '|' +
			  document.querySelectorAll('.entry.target').length + '|' + document.getElementById('notice').hidden; })()`)
		if got != want+"|true|true|1|true" {
			t.Errorf("target %q, want approval %q's card highlighted, on screen, and no notice", got, want)
		}
	}

	must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/sessions/long#approval-ap%207%2Fx")))
	browser.WaitJS(t, ctx, `document.body.dataset.state === "ready" && document.body.dataset.target === `+jsString("approval-"+id), 30*time.Second)
	onScreen(id)
	if got := browser.Eval[string](t, ctx, `document.querySelector('.entry.target .outcome .what').textContent`); got != "Denied by dashboard" {
		t.Errorf("the linked card says %q", got)
	}

	// Another approval's link on the same page moves the highlight.
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`location.hash = '#approval-ap-end'`)))
	browser.WaitJS(t, ctx, `document.body.dataset.target === "approval-ap-end"`, 10*time.Second)
	onScreen("ap-end")

	// An approval the session does not have yet: a notice, then its card
	// once its event arrives.
	must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/sessions/long#approval-ap-late")))
	browser.WaitJS(t, ctx, `document.body.dataset.state === "ready" && document.body.dataset.live === "1"`, 30*time.Second)
	if got := browser.Eval[string](t, ctx, `document.getElementById('notice').hidden + '|' + document.getElementById('notice').textContent`); !strings.HasPrefix(got, `false|No approval "ap-late" in this session yet`) {
		t.Errorf("notice for an approval not there yet: %q", got)
	}
	s.post("long", ev{"relay.approval_requested", "relay", map[string]any{"run_id": "r1", "approval_id": "ap-late", "kind": "tool", "tool_name": "Edit", "title": "main.go"}})
	browser.WaitJS(t, ctx, `document.body.dataset.target === "approval-ap-late"`, 10*time.Second)
	onScreen("ap-late")
	noScriptErrors(t, tab, "401", "/api/approvals")
}
