package browser

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/claude-relay/claude-relay/internal/testkit/poll"
)

// The launcher works and records dialogs, exceptions and console errors.
func TestTabRecords(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(`<!doctype html><title>t</title><p id="p">hi</p>
<script>console.error("boom"); alert("one"); setTimeout(() => { throw new Error("late") }, 0);</script>`))
	}))
	defer ts.Close()
	tab := New(t, Options{})
	if err := chromedp.Do(tab.Ctx, chromedp.Navigate(ts.URL), chromedp.WaitVisible(chromedp.CSS("#p"))); err != nil {
		t.Fatal(err)
	}
	// The exception is thrown from a timer.
	poll.Until(t, 10*time.Second, "the timer's exception", func() bool { return len(tab.Exceptions()) > 0 })
	if d := tab.Dialogs(); len(d) != 1 || d[0] != "alert: one" {
		t.Errorf("dialogs %q", d)
	}
	if c := tab.ConsoleErrors(); len(c) != 1 {
		t.Errorf("console errors %q", c)
	}
	if e := tab.Exceptions(); len(e) != 1 {
		t.Errorf("exceptions %q", e)
	}
}

// WaitJS sees a condition that becomes true later, across a navigation.
func TestWaitJS(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/next" {
			_, _ = w.Write([]byte(`<!doctype html><title>next</title><script>setTimeout(() => { window.done = true }, 200)</script>`))
			return
		}
		_, _ = w.Write([]byte(`<!doctype html><title>t</title><script>setTimeout(() => { location.href = "/next" }, 100)</script>`))
	}))
	defer ts.Close()
	tab := New(t, Options{})
	if err := chromedp.Do(tab.Ctx, chromedp.Navigate(ts.URL)); err != nil {
		t.Fatal(err)
	}
	WaitJS(t, tab.Ctx, `location.pathname === "/next" && window.done === true`, 20*time.Second)
}
