package dashboard_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/server/store/sqlite"
	"github.com/claude-relay/claude-relay/internal/testkit/browser"
)

// TestSessionListStale: a running session that has had no event for
// store.StaleAfter (its helper was killed and nothing ended the run yet) is
// listed as "no news since <time>", under its own status filter, and its
// page's header says so; news makes it running again, live.
func TestSessionListStale(t *testing.T) {
	path := filepath.Join(t.TempDir(), "relay.db")
	st, err := sqlite.Open(context.Background(), path)
	must(t, err)
	s := newSite(t, st)
	s.post("done-1", backgroundRun("done-1", "Tidy the imports", "/work/app", "claude-sonnet-4-5", "Bash", 0.01)...)
	s.post("quiet-1", runStarted("run-quiet-1", "Migrate the billing tables", "/work/app", "claude-sonnet-4-5", ""),
		initModel("conv-quiet-1", "claude-sonnet-4-5", "/work/app"))
	s.post("busy-1", runStarted("run-busy-1", "Write the release notes", "/work/app", "claude-sonnet-4-5", ""),
		initModel("conv-busy-1", "claude-sonnet-4-5", "/work/app"))
	// The backend last heard of quiet-1 two hours ago: the store keeps
	// when events arrive, so move that back.
	lastNews := time.Now().Add(-2 * time.Hour)
	age(t, path, "quiet-1", lastNews)

	list := func(query string) []store.Session {
		var l struct{ Sessions []store.Session }
		s.get("/api/sessions?"+query, &l)
		return l.Sessions
	}
	if l := list("status=stale"); len(l) != 1 || l[0].ID != "quiet-1" || !l[0].Stale || l[0].Status != store.StatusRunning {
		t.Errorf("GET ?status=stale = %+v, want quiet-1, running and stale", l)
	}
	if l := list("status=running"); len(l) != 1 || l[0].ID != "busy-1" || l[0].Stale {
		t.Errorf("GET ?status=running = %+v, want busy-1 alone, not stale", l)
	}
	var one store.Session
	if s.get("/api/sessions/quiet-1", &one); !one.Stale {
		t.Errorf("GET /api/sessions/quiet-1 = %+v, want it stale", one)
	}

	tab := browser.New(t, browser.Options{Width: 1280, Height: 800})
	ctx := tab.Ctx
	login(t, ctx, s.url)
	browser.WaitJS(t, ctx, `document.body.dataset.state === "ready" && document.body.dataset.live === "1"`, 20*time.Second)

	t.Run("the list says no news since", func(t *testing.T) {
		badge := browser.Eval[string](t, ctx, browser.ListCell("quiet-1", ".status"))
		if !strings.HasPrefix(badge, "no news since ") {
			t.Errorf("quiet-1's status reads %q, want \"no news since …\"", badge)
		}
		if cls := browser.Eval[string](t, ctx, `document.querySelector('#sessions tr[data-id="quiet-1"] .status').className`); cls != "status stale" {
			t.Errorf("quiet-1's badge class %q", cls)
		}
		for id, want := range map[string]string{"busy-1": "running", "done-1": "completed"} {
			if got := browser.Eval[string](t, ctx, browser.ListCell(id, ".status")); got != want {
				t.Errorf("%s's status reads %q, want %q", id, got, want)
			}
		}
	})

	t.Run("the status filter has it", func(t *testing.T) {
		must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/?status=stale")))
		browser.WaitJS(t, ctx, `document.body.dataset.state === "ready" && document.body.dataset.live === "1"`, 20*time.Second)
		if ids := browser.Eval[[]string](t, ctx, rowIDs); !slices.Equal(ids, []string{"quiet-1"}) {
			t.Errorf("?status=stale lists %v, want [quiet-1]", ids)
		}
		if v := browser.Eval[string](t, ctx, `document.getElementById('status').value`); v != "stale" {
			t.Errorf("the status control shows %q", v)
		}
		// Picking Running in the control lists the sessions with news.
		must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](
			`(() => { const c = document.getElementById('status'); c.value = 'running'; c.dispatchEvent(new Event('change')); })()`)))
		browser.WaitJS(t, ctx, `location.search === "?status=running" && document.body.dataset.state === "ready" && `+
			rowIDs+`.join() === "busy-1"`, 20*time.Second)
	})

	t.Run("the session page says it", func(t *testing.T) {
		must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/sessions/quiet-1")))
		browser.WaitJS(t, ctx, `(document.getElementById('s-status').textContent || '').startsWith('no news since ')`, 20*time.Second)
		title := browser.Eval[string](t, ctx, `document.getElementById('s-status').title`)
		if !strings.Contains(title, "spool flush") {
			t.Errorf("the header's explanation %q does not say what ends the run", title)
		}
	})

	t.Run("news makes it running again", func(t *testing.T) {
		must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/?status=stale")))
		browser.WaitJS(t, ctx, `document.body.dataset.state === "ready" && document.body.dataset.live === "1" && `+
			rowIDs+`.join() === "quiet-1"`, 20*time.Second)
		s.post("quiet-1", assistant("conv-quiet-1", text("Still here.")))
		browser.WaitJS(t, ctx, rowIDs+`.length === 0 && !document.getElementById('no-match').hidden`, 20*time.Second)
	})
	noScriptErrors(t, tab, "401")
}

// age sets when the backend last heard of a session, in the SQLite file the
// store keeps it in (nanoseconds since the epoch, as the store writes it).
func age(t *testing.T, path, session string, at time.Time) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	must(t, err)
	defer db.Close()
	res, err := db.Exec(`UPDATE sessions SET updated_at = ? WHERE id = ?`, at.UnixNano(), session)
	must(t, err)
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("aging session %s: %d rows, %v", session, n, err)
	}
}

// The page marks a session stale by itself when it stays open: its
// threshold must be the server's.
func TestStaleThresholdMatchesTheStore(t *testing.T) {
	js, err := os.ReadFile("static/common.js")
	must(t, err)
	m := regexp.MustCompile(`const STALE_MS = (\d+) \* 60 \* 1000;`).FindSubmatch(js)
	if m == nil {
		t.Fatal("common.js declares no STALE_MS in minutes")
	}
	if mins, _ := strconv.Atoi(string(m[1])); time.Duration(mins)*time.Minute != store.StaleAfter {
		t.Errorf("common.js's STALE_MS is %d minutes, store.StaleAfter %v", mins, store.StaleAfter)
	}
}
