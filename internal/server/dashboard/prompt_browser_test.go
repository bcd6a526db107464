package dashboard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/claude-relay/claude-relay/internal/server/backend/memstore"
	"github.com/claude-relay/claude-relay/internal/testkit/browser"
)

// acpSession is an ACP session as the relay posts it (issue 23, event
// schema 2): an idle start at session/new with the CLI's control answers,
// then one interaction per prompt, each opened by relay.message_sent with
// the prompt's text and its blocks: text around a resource link and an
// embedded resource, an image alone, and a prompt over the record's cap.
func acpSession(conv string) []spInter {
	at := func(inter string) func(e ev) spInter { return func(e ev) spInter { return spInter{inter, e} } }
	i0, i1, i2, i3 := at("i0"), at("i1"), at("i2"), at("i3")
	control := ev{"control_response", "", map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": "c1"}}}
	sent := func(d map[string]any) ev {
		d["v"], d["run_id"] = 2, "r-acp"
		return ev{"relay.message_sent", "relay", d}
	}
	turnDone := func(n int) ev {
		return ev{"relay.turn_completed", "relay", map[string]any{"v": 1, "run_id": "r-acp", "turn": n, "status": "completed",
			"result": map[string]any{"stdout": "", "stderr": "", "exitCode": 0, "duration_ms": 1200}}}
	}
	return []spInter{
		i0(ev{"relay.run_started", "relay", map[string]any{"v": 2, "run_id": "r-acp", "mode": "acp", "idle": true, "cwd": "/work/zed-project",
			"permission_mode": "default", "approvals": true}}),
		i0(control),
		i0(control),
		i1(sent(map[string]any{"prompt": "Explain why the parser test is flaky in @/work/zed-project/parser_test.go\n\n@/work/zed-project/notes.md",
			"prompt_bytes": 95, "blocks": []any{
				map[string]any{"type": "text", "size": 40},
				map[string]any{"type": "resource_link", "name": "parser_test.go", "path": "file:///work/zed-project/parser_test.go", "size": 0},
				map[string]any{"type": "resource", "path": "file:///work/zed-project/notes.md", "media_type": "text/markdown", "size": 27, "sha256": "ab"},
			}})),
		i1(initEvent(conv)),
		i1(assistant(conv, text("It races on the shared buffer."))),
		i1(result(conv)),
		i1(turnDone(1)),
		i2(sent(map[string]any{"blocks": []any{
			map[string]any{"type": "image", "path": "file:///work/zed-project/shot.png", "media_type": "image/png", "size": 122880, "sha256": "cd"},
		}})),
		i2(assistant(conv, text("A stack trace."))),
		i2(turnDone(2)),
		i3(sent(map[string]any{"prompt": "paste of a huge log", "prompt_bytes": 10 << 20, "prompt_truncated": true,
			"blocks": []any{map[string]any{"type": "text", "size": 10 << 20}}})),
		i3(assistant(conv, text("That log is long."))),
		i3(turnDone(3)),
		i3(ev{"relay.run_cancelled", "relay", map[string]any{"v": 1, "run_id": "r-acp", "mode": "acp", "status": "cancelled",
			"result": map[string]any{"stdout": "", "stderr": "", "exitCode": 130, "duration_ms": 9000}}}),
	}
}

// TestACPSessionPrompts: an ACP session's list row and page show what was
// asked: the first prompt as the title, each turn's prompt text (a prompt
// of an image alone as its description, a cut prompt marked), and no empty
// turn for the idle start at session/new.
func TestACPSessionPrompts(t *testing.T) {
	s := newSite(t, memstore.New())
	s.spPost("acp-prompts", acpSession("7e57ab1e-0000-4000-8000-00000000a2c9")...)
	// An ACP session closed before any prompt: no turn, no title.
	s.spPost("acp-idle", spInter{"i0", ev{"relay.run_started", "relay", map[string]any{"v": 2, "run_id": "r-idle", "mode": "acp", "idle": true, "cwd": "/work/zed-project"}}},
		spInter{"i0", ev{"relay.run_cancelled", "relay", map[string]any{"v": 1, "run_id": "r-idle", "mode": "acp", "status": "cancelled",
			"result": map[string]any{"stdout": "", "stderr": "", "exitCode": 130, "duration_ms": 10}}}})
	const first = "Explain why the parser test is flaky in @/work/zed-project/parser_test.go @/work/zed-project/notes.md"

	tab := browser.New(t, browser.Options{Width: 1280, Height: 900})
	ctx := tab.Ctx
	login(t, ctx, s.url)
	browser.WaitJS(t, ctx, `document.body.dataset.state === "ready"`, 20*time.Second)
	if got := browser.Eval[string](t, ctx, browser.ListCell("acp-prompts", ".title-link")); got != first {
		t.Errorf("list row title %q, want the first prompt %q", got, first)
	}
	if got := browser.Eval[string](t, ctx, browser.ListCell("acp-prompts", "td.source")); got != "ACP" {
		t.Errorf("list row source %q, want ACP", got)
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(s.url+"/sessions/acp-prompts")); err != nil {
		t.Fatal(err)
	}
	browser.WaitJS(t, ctx, `document.body.dataset.state === "ready" && document.querySelectorAll('.entry.turn').length === 3`, 20*time.Second)
	prompts := browser.Eval[[]string](t, ctx, `Array.from(document.querySelectorAll('.entry.turn .prompt')).map(e => e.textContent)`)
	want := []string{
		"Explain why the parser test is flaky in @/work/zed-project/parser_test.go\n\n@/work/zed-project/notes.md",
		"shot.png (PNG, 120.0 KiB)",
		"paste of a huge log\n\n[cut: the prompt was 10.0 MiB; its first 256 KiB were recorded]",
	}
	if strings.Join(prompts, "|") != strings.Join(want, "|") {
		t.Errorf("turn prompts %q,\nwant %q", prompts, want)
	}
	if n := browser.Eval[int](t, ctx, `document.querySelectorAll('.prompt.missing').length`); n != 0 {
		t.Errorf("%d turns without their prompt, want none (the idle start makes no turn)", n)
	}
	if got := browser.Eval[string](t, ctx, `document.querySelector('#timeline > .entry').className`); got != "entry turn" {
		t.Errorf("first card %q, want the first prompt's turn", got)
	}
	if got := browser.Eval[string](t, ctx, `document.getElementById('s-title').textContent`); got != first {
		t.Errorf("header title %q, want %q", got, first)
	}
	stats := browser.Eval[string](t, ctx, `document.querySelectorAll('.entry.turn')[2].querySelector('.turn-stats').textContent`)
	// Its run was closed after the turn completed (an ACP client closing
	// stdin while idle; helpers before event schema 2 said "cancelled"):
	// the turn stays completed, and the close is a minor note.
	if !strings.Contains(stats, "completed") {
		t.Errorf("last turn's stats %q, want completed: the run was closed while idle", stats)
	}
	if got := browser.Eval[string](t, ctx, `Array.from(document.querySelectorAll('#timeline .entry')).map(e => e.textContent).join('|')`); !strings.Contains(got, "closed between turns") {
		t.Errorf("the timeline %q does not say the run was closed between turns", got)
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(s.url+"/sessions/acp-idle")); err != nil {
		t.Fatal(err)
	}
	browser.WaitJS(t, ctx, `document.body.dataset.state === "ready"`, 20*time.Second)
	if n := browser.Eval[int](t, ctx, `document.querySelectorAll('#timeline > .entry').length`); n != 0 {
		t.Errorf("an idle session shows %d cards, want none", n)
	}
	noScriptErrors(t, tab, "401", "/api/approvals")
}
