package dashboard_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/server/backend"
	"github.com/claude-relay/claude-relay/internal/server/backend/memstore"
	"github.com/claude-relay/claude-relay/internal/testkit/browser"
)

// spBigSession is n events of a long background run: a prompt, then
// Markdown text, a Bash call and its result, over and over.
func spBigSession(session string, n int) []map[string]any {
	at := time.Now().Add(-time.Hour).UTC()
	envs := make([]map[string]any, 0, n)
	add := func(typ string, data map[string]any) {
		envs = append(envs, map[string]any{
			"session_id": session, "interaction_id": "i1", "event_id": uuid.NewString(), "seq": len(envs) + 1,
			"event_type": typ, "event_data": data, "source": "agent",
			"timestamp": at.Add(time.Duration(len(envs)) * time.Millisecond).Format(time.RFC3339Nano),
		})
	}
	add("relay.run_started", map[string]any{"run_id": "r1", "prompt": "go through every file", "cwd": "/work/big"})
	for i := 0; len(envs) < n; i++ {
		id := fmt.Sprintf("toolu_%05d", i)
		add("assistant", map[string]any{"type": "assistant", "message": map[string]any{"content": []any{
			text(fmt.Sprintf("## Step %d\n\nChecking **file%05d.txt** next: `wc -l` then\n\n- compare\n- record\n\n```sh\nwc -l file%05d.txt\n```\n", i, i, i))}}})
		add("assistant", map[string]any{"type": "assistant", "message": map[string]any{"content": []any{
			toolUse(id, "Bash", map[string]any{"command": fmt.Sprintf("wc -l file%05d.txt", i)})}}})
		add("user", map[string]any{"type": "user", "message": map[string]any{"content": []any{
			toolResult(id, fmt.Sprintf("%d file%05d.txt", i*7, i), false)}}})
	}
	envs = envs[:n]
	return envs
}

// spMark is a performance mark's time in ms since the page's navigation.
func spMark(tb testing.TB, ctx context.Context, name string) float64 {
	tb.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`(performance.getEntriesByName(`+jsString(name)+`).at(-1) || {startTime: -1}).startTime`))
	if err != nil || v < 0 {
		tb.Fatalf("no performance mark %s (%v)", name, err)
	}
	return v
}

// BenchmarkSessionPage drives headless Chromium over the session page, each
// iteration a fresh page load, and reports in-page latencies (performance
// marks, from the navigation's start) as ms, and as ns/op for the table's
// ratio against the baseline (a session of one event: the page's own cost):
//
//   - first-screen: a 10,000-event session, until its newest screen of
//     cards is on the page (the history is all loaded by then);
//   - ready: the same page, until its whole first window is built;
//   - scroll-to-end: that session opened at its first event (#c1), then
//     "Jump to latest" (the End key), until the last event is on screen.
func BenchmarkSessionPage(b *testing.B) {
	const n = 10000
	url := serve(b, backend.Options{Store: memstore.New(), Tokens: func() []config.Secret { return []config.Secret{token} }})
	postBatch(b, url, "big", spBigSession("big", n))
	postBatch(b, url, "empty", spBigSession("empty", 1))
	tab := browser.New(b, browser.Options{Width: 1280, Height: 800, Timeout: 30 * time.Minute})
	ctx := tab.Ctx
	login(b, ctx, url)

	load := func(b *testing.B, path string, i int) {
		b.Helper()
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		page, hash, _ := strings.Cut(path, "#")
		if hash != "" {
			hash = "#" + hash
		}
		if err := chromedp.Do(ctx, chromedp.Navigate(fmt.Sprintf("%s%s%sn=%d%s", url, page, sep, i, hash))); err != nil {
			b.Fatal(err)
		}
		browser.WaitJS(b, ctx, `document.body.dataset.state === "ready"`, 60*time.Second)
	}
	report := func(b *testing.B, total float64) {
		mean := total / float64(b.N)
		b.ReportMetric(mean, "ms")
		b.ReportMetric(mean*1e6, "ns/op")
	}
	first := func(path string) func(*testing.B) {
		return func(b *testing.B) {
			var total float64
			for i := 0; i < b.N; i++ {
				load(b, path, i)
				total += spMark(b, ctx, "cr:first-screen")
			}
			report(b, total)
		}
	}
	b.Run("baseline", first("/sessions/empty"))
	b.Run("first-screen", first("/sessions/big"))
	b.Run("ready", func(b *testing.B) {
		var total float64
		for i := 0; i < b.N; i++ {
			load(b, "/sessions/big", i)
			total += spMark(b, ctx, "cr:ready")
		}
		report(b, total)
	})
	b.Run("scroll-to-end", func(b *testing.B) {
		var total float64
		for i := 0; i < b.N; i++ {
			load(b, "/sessions/big#c1", i)
			start, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`(() => { const t = performance.now(); document.getElementById('jump-end').click(); return t; })()`))
			if err != nil {
				b.Fatal(err)
			}
			browser.WaitJS(b, ctx, `document.body.dataset.at === "end"`, 60*time.Second)
			total += spMark(b, ctx, "cr:end") - start
		}
		report(b, total)
	})
	last, err := chromedp.Run(ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll('#timeline > .entry')).pop().textContent`))
	if err != nil || !strings.Contains(last, fmt.Sprintf("file%05d", (n-2)/3)) {
		b.Errorf("the last card after the jump: %.200q (%v)", last, err)
	}
	if e := tab.Exceptions(); len(e) > 0 {
		b.Errorf("uncaught exceptions: %q", e)
	}
}
