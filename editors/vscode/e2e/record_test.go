//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/claude-relay/claude-relay/internal/localbackend"
	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/testkit/browser"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// The record check (issue 23's "done when"): after the drive, `claude-relay
// serve` on the test's data dir shows, in headless Chromium, each session
// the extension started: its list row (title, source, status, turns,
// tokens, cost, model) and its page (every prompt, every turn's status),
// with figures equal to the CLI's own records as the backend stored them.

// pageWait bounds one wait in the dashboard (a page to load, a row to show).
const pageWait = 30 * time.Second

// serveListening is the line serve prints once it listens.
var serveListening = regexp.MustCompile(`claude-relay serve: (http://127\.0\.0\.1:\d+) `)

// dashboard is `claude-relay serve` on the test's data dir and a headless
// Chromium tab logged in to it.
type dashboard struct {
	url   string
	token string // serve.token: ingest and read, what people log in with
	tab   *browser.Tab
	shots string
}

// startDashboard starts `bin serve` (the helper the .vsix bundled) with
// env, whose HOME is home: the data dir the embedded default backend has
// filled. serve shares its SQLite store (localbackend's doc), so it shows
// what the helpers stored, even while they still run.
func startDashboard(t *testing.T, ctx context.Context, bin, logFile, home, shots string, env []string) *dashboard {
	t.Helper()
	p := start(t, ctx, logFile, env, bin, "serve", "--addr=127.0.0.1:0")
	base := p.waitLog(t, "claude-relay serve", serveListening, pageWait)
	tok, err := os.ReadFile(localbackend.TokenPath(filepath.Join(home, ".local", "share", "claude-relay")))
	if err != nil {
		t.Fatalf("serve's token: %v", err)
	}
	d := &dashboard{url: base, token: strings.TrimSpace(string(tok)), shots: shots}
	if code := d.get(t, "/healthz", nil); code != http.StatusOK {
		t.Fatalf("serve at %s: /healthz answers %d; its log %s:\n%s", base, code, logFile, tail(logFile, 2000))
	}
	t.Logf("claude-relay serve at %s (log %s)", base, logFile)
	d.tab = browser.New(t, browser.Options{Width: 1280, Height: 900, Timeout: 3 * time.Minute})
	err = chromedp.Do(d.tab.Ctx,
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), d.token),
		chromedp.Click(chromedp.ID("login")),
	)
	if err != nil {
		t.Fatalf("log in to the dashboard at %s: %v", base, err)
	}
	browser.WaitJS(t, d.tab.Ctx, `location.pathname === "/" && document.body.dataset.state === "ready"`, pageWait)
	return d
}

// get GETs path with serve's token into v (when not nil) and returns the
// status.
func (d *dashboard) get(t *testing.T, path string, v any) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, d.url+path, nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if resp.StatusCode == http.StatusOK && v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("GET %s: %v: %.300s", path, err, body)
		}
	}
	return resp.StatusCode
}

// find waits for the one session whose prompts hold marker to satisfy
// ready, and returns it; ok is false (and t failed) when it never did.
func (d *dashboard) find(t *testing.T, marker string, ready func(store.Session) bool) (store.Session, bool) {
	t.Helper()
	var list struct {
		Sessions []store.Session `json:"sessions"`
	}
	ok := poll.Within(backendWait, func() bool {
		code := d.get(t, "/api/sessions?limit=20&q="+url.QueryEscape(marker), &list)
		return code == http.StatusOK && len(list.Sessions) == 1 && ready(list.Sessions[0])
	})
	if !ok {
		t.Errorf("serve has no session of %q that is ready within %s: %d sessions match: %+v", marker, backendWait, len(list.Sessions), list.Sessions)
		return store.Session{}, false
	}
	return list.Sessions[0], true
}

// events pages through the session's events.
func (d *dashboard) events(t *testing.T, session string) []store.Event {
	t.Helper()
	var all []store.Event
	after := int64(0)
	for {
		var page struct {
			Events []store.Event `json:"events"`
			Next   int64         `json:"next"`
		}
		if code := d.get(t, fmt.Sprintf("/api/sessions/%s/events?after=%d&limit=500", url.PathEscape(session), after), &page); code != http.StatusOK {
			t.Fatalf("events of %s: HTTP %d", session, code)
		}
		all = append(all, page.Events...)
		if len(page.Events) == 0 || page.Next == after {
			return all
		}
		after = page.Next
	}
}

// cliRecord is what the CLI itself said of a session, from its stored
// events.
type cliRecord struct {
	results   int        // result events: one per turn
	usage     wire.Usage // summed over results' model_usage_since_last_result
	mainUsage wire.Usage // summed over results' usage (the main loop's calls only)
	cost      float64    // summed over results' model_usage_since_last_result costUSD
	lastTotal float64    // the last result's total_cost_usd: the CLI process's running total
	model     string     // system/init's
	turns     []wire.TurnCompleted
	ends      []string // the run's end events, if it ended
}

// readRecord reads the CLI's result and system/init lines and the relay's
// turn and run ends from evs.
func readRecord(t *testing.T, evs []store.Event) cliRecord {
	t.Helper()
	var r cliRecord
	for _, ev := range evs {
		switch ev.EventType {
		case "system":
			var init struct {
				Subtype string `json:"subtype"`
				Model   string `json:"model"`
			}
			if json.Unmarshal(ev.EventData, &init) == nil && init.Subtype == "init" && init.Model != "" {
				r.model = init.Model
			}
		case "result":
			var res struct {
				Usage     wire.Usage `json:"usage"`
				TotalCost *float64   `json:"total_cost_usd"`
				Since     map[string]struct {
					InputTokens              int64   `json:"inputTokens"`
					OutputTokens             int64   `json:"outputTokens"`
					CacheReadInputTokens     int64   `json:"cacheReadInputTokens"`
					CacheCreationInputTokens int64   `json:"cacheCreationInputTokens"`
					CostUSD                  float64 `json:"costUSD"`
				} `json:"model_usage_since_last_result"`
			}
			if err := json.Unmarshal(ev.EventData, &res); err != nil {
				t.Errorf("a stored result: %v: %.300s", err, ev.EventData)
				continue
			}
			r.results++
			r.mainUsage = r.mainUsage.Add(res.Usage)
			for _, m := range res.Since {
				r.usage = r.usage.Add(wire.Usage{InputTokens: m.InputTokens, OutputTokens: m.OutputTokens,
					CacheReadInputTokens: m.CacheReadInputTokens, CacheCreationInputTokens: m.CacheCreationInputTokens})
				r.cost += m.CostUSD
			}
			if res.TotalCost != nil {
				r.lastTotal = *res.TotalCost
			}
		case wire.TypeTurnCompleted:
			var tc wire.TurnCompleted
			if err := json.Unmarshal(ev.EventData, &tc); err != nil {
				t.Errorf("a stored %s: %v", ev.EventType, err)
				continue
			}
			r.turns = append(r.turns, tc)
		case wire.TypeRunCompleted, wire.TypeRunFailed, wire.TypeRunCancelled:
			r.ends = append(r.ends, ev.EventType)
		}
	}
	return r
}

// sessionWant is what a session's list row and page must show.
type sessionWant struct {
	name     string // the screenshot's and the log's name
	title    string
	source   string // as the list shows it
	status   string // the list's badge
	turns    int64
	tokens   int64
	cost     float64
	model    string
	prompts  []string // each turn card's prompt
	statuses []string // each turn card's status
	says     []string // words the page must hold
}

// shown is what a session's list row and page header read.
type shown struct {
	row  map[string]string
	head map[string]string
}

// checkRecord checks the three sessions the drive left: the approved Bash
// run, the denied Write and "Run in Terminal". The extension's runs are
// keep_alive: they stay open for a follow-up after their turn, so they have
// no run end yet; the terminal stays open too.
func checkRecord(t *testing.T, d *dashboard, cfg driveConfig, api *routedAPI) {
	t.Helper()
	var rows [][]string
	for _, c := range []struct {
		name, marker, prompt string
		want                 func(*testing.T, store.Session, cliRecord, string) sessionWant
	}{
		{"bash", "route-bash", cfg.Bash.Prompt, backgroundWant},
		{"write", "route-write", cfg.Write.Prompt, deniedWant},
		{"terminal", "route-terminal", cfg.Terminal.Prompt, terminalWant},
	} {
		// A background run's turn is in once its result is counted; a
		// terminal run's once its relay.turn_completed is.
		s, ok := d.find(t, c.marker, func(s store.Session) bool { return s.Turns >= 1 })
		if !ok {
			continue
		}
		evs := d.events(t, s.ID)
		rec := readRecord(t, evs)
		want := c.want(t, s, rec, c.prompt)
		want.name = c.name
		if m := mainModel(api, c.marker); m != want.model {
			t.Errorf("%s: the CLI names the model %q, but asked the scripted API for %q", c.name, want.model, m)
		}
		if served := api.served(c.marker); totalTokens(served) != want.tokens {
			t.Errorf("%s: the CLI's records count %d tokens, the scripted API served the conversation %+v (%d)", c.name, want.tokens, served, totalTokens(served))
		}
		failed := t.Failed()
		got := d.check(t, s.ID, want)
		rows = append(rows, []string{c.name, got.row["title"], got.row["source"], got.row["status"], got.row["turns"],
			got.row["tokens"], got.row["cost"], got.row["model"]})
		if !failed && t.Failed() {
			dumpEvents(t, s.ID, evs)
		}
	}
	d.listShot(t)
	var b strings.Builder
	fmt.Fprintf(&b, "%-8s | %-58s | %-10s | %-9s | %5s | %7s | %8s | %s\n", "session", "title", "source", "status", "turns", "tokens", "cost", "model")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-8s | %-58.58s | %-10s | %-9s | %5s | %7s | %8s | %s\n", r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7])
	}
	t.Logf("what the dashboard's list showed:\n%s", b.String())
	noPageErrors(t, d.tab)
}

// backgroundWant: an extension run's row and page. Its figures are the
// CLI's result lines': turns their number, tokens and cost the sums of what
// each says it counted since the previous one (the CLI's documented figure
// to sum over a conversation), which must agree with the process's own
// running total_cost_usd. Its one turn is completed. The run itself is open
// for a follow-up (keep_alive) until "End" or its idle timeout: between
// turns a session is as its last turn ended, so the list and the page say
// "completed", as VS Code's Runs view does.
func backgroundWant(t *testing.T, s store.Session, r cliRecord, prompt string) sessionWant {
	t.Helper()
	t.Logf("session %s (%s): %d results, model_usage_since_last_result %+v ($%v), usage %+v, last total_cost_usd $%v, system/init model %q, ends %v",
		s.ID, prompt, r.results, r.usage, r.cost, r.mainUsage, r.lastTotal, r.model, r.ends)
	if r.results != 1 {
		t.Errorf("session %s: %d result lines stored, want the one turn's", s.ID, r.results)
	}
	if r.usage == (wire.Usage{}) || r.cost <= 0 {
		t.Errorf("session %s: its results state no usage or cost since the previous one (%+v, $%v)", s.ID, r.usage, r.cost)
	}
	if !sameCost(r.cost, r.lastTotal) {
		t.Errorf("session %s: its results' costs since the last sum to $%v, the CLI's total_cost_usd is $%v", s.ID, r.cost, r.lastTotal)
	}
	if len(r.ends) != 0 {
		t.Errorf("session %s: the keep_alive run ended already (%v); it should wait for a follow-up", s.ID, r.ends)
	}
	return sessionWant{title: prompt, source: "background", status: "completed", turns: int64(r.results),
		tokens: totalTokens(r.usage), cost: r.cost, model: r.model, prompts: []string{prompt}, statuses: []string{"completed"}}
}

// deniedWant: the denied Write's run reads as backgroundWant's (the model
// answered the refusal, so the turn completed); its page shows the denial.
func deniedWant(t *testing.T, s store.Session, r cliRecord, prompt string) sessionWant {
	t.Helper()
	w := backgroundWant(t, s, r, prompt)
	w.says = []string{"Approval: Denied by extension"}
	return w
}

// terminalWant: "Run in Terminal"'s row and page. Its runner posts each
// turn's tokens (from the transcript) in relay.turn_completed with mode
// terminal, and the CLI's cost only on the run's end: the terminal is still
// open, so the cost the row shows is what the turns carried (none).
func terminalWant(t *testing.T, s store.Session, r cliRecord, prompt string) sessionWant {
	t.Helper()
	var tokens wire.Usage
	var cost float64
	var statuses []string
	model := ""
	for _, tc := range r.turns {
		t.Logf("session %s: relay.turn_completed turn %d mode %q status %q usage %+v total_cost_usd %v model_usage %+v",
			s.ID, tc.Turn, tc.Mode, tc.Status, tc.Usage, costOf(tc.TotalCostUSD), tc.Models)
		if tc.Mode != wire.ModeTerminal {
			t.Errorf("session %s: turn %d has mode %q, want %q", s.ID, tc.Turn, tc.Mode, wire.ModeTerminal)
		}
		if tc.Usage == nil || *tc.Usage == (wire.Usage{}) {
			t.Errorf("session %s: turn %d carries no tokens", s.ID, tc.Turn)
		} else {
			tokens = tokens.Add(*tc.Usage)
		}
		if tc.TotalCostUSD != nil {
			cost += *tc.TotalCostUSD
		}
		for m := range tc.Models {
			model = m
		}
		statuses = append(statuses, string(tc.Status))
	}
	if len(r.turns) == 0 {
		t.Errorf("session %s: no relay.turn_completed after the terminal's turn ended", s.ID)
	}
	if len(r.ends) != 0 {
		t.Errorf("session %s: the terminal run ended (%v) while its terminal is open", s.ID, r.ends)
	}
	if r.results != 0 {
		t.Errorf("session %s: %d CLI result lines in a terminal session", s.ID, r.results)
	}
	t.Logf("session %s (%s): %d turns, tokens %+v, cost the turns carry $%v, model %q (backend: %d turns, %+v, $%v, %q)",
		s.ID, prompt, len(r.turns), tokens, cost, model, s.Turns, s.Usage, s.CostUSD, s.Model)
	return sessionWant{title: prompt, source: "terminal", status: "completed", turns: int64(len(r.turns)),
		tokens: totalTokens(tokens), cost: cost, model: model, prompts: []string{prompt}, statuses: statuses}
}

// mainModel is the model the CLI asked marker's scripted API for.
func mainModel(api *routedAPI, marker string) string {
	for _, r := range api.API(marker).MainRequests() {
		if r.Model != "" {
			return r.Model
		}
	}
	return ""
}

// check reads the session's list row and page in the tab against want and
// saves the page's screenshot; it returns what they showed.
func (d *dashboard) check(t *testing.T, id string, want sessionWant) shown {
	t.Helper()
	ctx := d.tab.Ctx
	row := `#sessions tr[data-id=` + jsString(id) + `]`
	d.navigate(t, "/", `document.body.dataset.state === "ready" && !!document.querySelector(`+jsString(row)+`)`)
	got := shown{row: map[string]string{}, head: map[string]string{}}
	for k, sel := range map[string]string{"title": ".title-link", "source": "td.source .src", "status": ".status",
		"turns": "td:nth-child(7)", "tokens": "td:nth-child(8)", "cost": "td.cost", "model": "td.model"} {
		got.row[k] = browser.Eval[string](t, ctx, `(`+browser.ListCell(id, sel)+`) || ''`)
	}
	wantRow := map[string]string{"title": want.title, "source": want.source, "status": want.status, "model": want.model,
		"turns":  browser.Eval[string](t, ctx, fmt.Sprintf(`CRFmt.tokens(%d)`, want.turns)),
		"tokens": browser.Eval[string](t, ctx, fmt.Sprintf(`CRFmt.tokens(%d)`, want.tokens)),
		"cost":   browser.Eval[string](t, ctx, fmt.Sprintf(`CRFmt.usd(%v)`, want.cost))}
	for _, k := range []string{"title", "source", "status", "turns", "tokens", "cost", "model"} {
		if got.row[k] != wantRow[k] {
			t.Errorf("%s: the list row's %s reads %q, want %q", want.name, k, got.row[k], wantRow[k])
		}
	}

	d.navigate(t, "/sessions/"+url.PathEscape(id), fmt.Sprintf(`document.body.dataset.state === "ready" && document.querySelectorAll('.entry.turn').length >= %d`, len(want.prompts)))
	prompts := browser.Eval[[]string](t, ctx, `Array.from(document.querySelectorAll('.entry.turn')).map(e => (e.querySelector('.prompt') || {}).textContent || '')`)
	statuses := browser.Eval[[]string](t, ctx, `Array.from(document.querySelectorAll('.entry.turn .turn-stats')).map(e => (e.querySelector('.status') || {}).textContent || '')`)
	stats := browser.Eval[[]string](t, ctx, `Array.from(document.querySelectorAll('.entry.turn .turn-stats')).map(e => e.textContent)`)
	if !slices.Equal(prompts, want.prompts) {
		t.Errorf("%s: the page's turns show the prompts %q, want %q", want.name, prompts, want.prompts)
	}
	if !slices.Equal(statuses, want.statuses) {
		t.Errorf("%s: the page's turns read %q, want %q (the cards read %q)", want.name, statuses, want.statuses, stats)
	}
	ids := []string{"s-title", "s-source", "s-status", "s-model", "s-turns", "s-tokens", "s-cost"}
	vals := browser.Eval[[]string](t, ctx, `[`+strings.Join(mapStrings(ids, jsString), ",")+`].map(id => (document.getElementById(id) || {}).textContent || '')`)
	for i, k := range ids {
		got.head[strings.TrimPrefix(k, "s-")] = vals[i]
	}
	wantHead := map[string]string{"title": want.title, "source": want.source, "status": want.status, "model": want.model,
		"turns":  browser.Eval[string](t, ctx, fmt.Sprintf(`CR.fmtInt(%d)`, want.turns)),
		"tokens": browser.Eval[string](t, ctx, fmt.Sprintf(`CR.fmtInt(%d)`, want.tokens)),
		"cost":   browser.Eval[string](t, ctx, fmt.Sprintf(`CR.fmtCost(%v)`, want.cost))}
	for _, k := range []string{"title", "source", "status", "model", "turns", "tokens", "cost"} {
		if got.head[k] != wantHead[k] {
			t.Errorf("%s: the page's header %s reads %q, want %q", want.name, k, got.head[k], wantHead[k])
		}
	}
	all := browser.Eval[string](t, ctx, `Array.from(document.querySelectorAll('#timeline .entry')).map(e => e.textContent).join(' | ')`)
	for _, w := range want.says {
		if !strings.Contains(all, w) {
			t.Errorf("%s: the page does not say %q:\n%s", want.name, w, all)
		}
	}
	t.Logf("%s: page header %v; turn cards %q", want.name, got.head, stats)
	d.shot(t, "dashboard-"+want.name+".png")
	return got
}

// navigate opens path in the tab and waits until ready is true there.
func (d *dashboard) navigate(t *testing.T, path, ready string) {
	t.Helper()
	if err := chromedp.Do(d.tab.Ctx, chromedp.Navigate(d.url+path)); err != nil {
		t.Fatalf("open %s%s: %v", d.url, path, err)
	}
	browser.WaitJS(t, d.tab.Ctx, ready, pageWait)
}

// listShot saves the session list.
func (d *dashboard) listShot(t *testing.T) {
	t.Helper()
	d.navigate(t, "/", `document.body.dataset.state === "ready" && document.querySelectorAll('#sessions tbody tr').length > 0`)
	d.shot(t, "dashboard-list.png")
}

// shot saves the whole page into the shots dir: the viewport grows to the
// page's height for it, then goes back.
func (d *dashboard) shot(t *testing.T, name string) {
	t.Helper()
	ctx := d.tab.Ctx
	h := browser.Eval[int64](t, ctx, `window.scrollTo(0, 0); document.activeElement && document.activeElement.blur(); Math.max(document.documentElement.scrollHeight, document.body.scrollHeight)`)
	err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, max(h, 900)))
	var png []byte
	if err == nil {
		png, err = chromedp.Run(ctx, chromedp.CaptureScreenshot())
	}
	if _, cerr := chromedp.Call(ctx, emulation.ClearDeviceMetricsOverride, cdp.Empty{}); err == nil {
		err = cerr
	}
	if err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	p := filepath.Join(d.shots, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	t.Logf("screenshot: %s", p)
}

// noPageErrors fails t for what went wrong in the dashboard's pages: the
// login page's 401 is by design.
func noPageErrors(t *testing.T, tab *browser.Tab) {
	t.Helper()
	for _, e := range tab.Exceptions() {
		t.Errorf("the dashboard: uncaught exception: %s", e)
	}
	for _, e := range tab.ConsoleErrors() {
		t.Errorf("the dashboard: console error: %s", e)
	}
	for _, e := range tab.LogErrors() {
		if !(strings.HasPrefix(e, "network: ") && strings.Contains(e, "401")) {
			t.Errorf("the dashboard: browser log: %s", e)
		}
	}
	if d := tab.Dialogs(); len(d) > 0 {
		t.Errorf("the dashboard opened dialogs: %q", d)
	}
}

// dumpEvents logs a session's events, for a failure's report.
func dumpEvents(t *testing.T, session string, evs []store.Event) {
	t.Helper()
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "  cursor %3d %-10s %-26s %.600s\n", ev.Cursor, ev.Source, ev.EventType, ev.EventData)
	}
	t.Logf("session %s as serve has it:\n%s", session, b.String())
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

func mapStrings(in []string, f func(string) string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = f(s)
	}
	return out
}

func totalTokens(u wire.Usage) int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
}

func sameCost(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func costOf(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
