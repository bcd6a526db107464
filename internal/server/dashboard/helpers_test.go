package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/claude-relay/claude-relay/internal/server/backend"
	"github.com/claude-relay/claude-relay/internal/testkit/browser"
)

// Helpers the browser tests and benchmarks of every page share.

// serve runs a backend with o on loopback until tb ends, then closes
// o.Store, and returns the backend's URL.
func serve(tb testing.TB, o backend.Options) string {
	tb.Helper()
	srv := backend.New(o)
	ts := httptest.NewServer(srv.Handler())
	tb.Cleanup(func() {
		ts.Close()
		_ = o.Store.Close()
	})
	// Registered last, so it runs first: the SSE streams end before the
	// HTTP server waits for its connections.
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return ts.URL
}

// postBatch posts envelopes of session to the backend at url with the
// ingest token, in batches of at most 500, failing tb unless every event
// is accepted.
func postBatch(tb testing.TB, url, session string, envs []map[string]any) {
	tb.Helper()
	for len(envs) > 0 {
		n := min(len(envs), 500)
		body, _ := json.Marshal(map[string]any{"events": envs[:n]})
		envs = envs[n:]
		req, _ := http.NewRequest("POST", url+"/api/sessions/"+session+"/events/batch", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			tb.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || bytes.Contains(out, []byte(`"status":400`)) {
			tb.Fatalf("posting events: %d %s", resp.StatusCode, out)
		}
	}
}

// login logs the tab in with the ingest token and waits for the session
// list it lands on.
func login(tb testing.TB, ctx context.Context, base string) {
	tb.Helper()
	loginAs(tb, ctx, base+"/login", token,
		`location.pathname === "/" && document.readyState === "complete" && !!document.getElementById("sessions")`)
}

// loginAs submits the login form at loginURL with tok, then waits until
// ready is true in the page the login leads to.
func loginAs(tb testing.TB, ctx context.Context, loginURL, tok, ready string) {
	tb.Helper()
	err := chromedp.Do(ctx,
		chromedp.Navigate(loginURL),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), tok),
		chromedp.Click(chromedp.ID("login")),
	)
	if err != nil {
		tb.Fatal(err)
	}
	browser.WaitJS(tb, ctx, ready, 20*time.Second)
}

// pressKey presses a key as a keyboard does: one keyDown that carries its
// text, so a page that cancels the keydown gets no character (chromedp's
// KeyEvent sends the character as a separate event that no handler can
// cancel, which no real keyboard does), then the keyUp. code is the
// physical key ("KeyJ", "Slash"), vk its virtual key code (0: none).
func pressKey(t *testing.T, ctx context.Context, key, code string, vk int64) {
	t.Helper()
	for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeKeyDown, input.DispatchKeyEventTypeKeyUp} {
		p := input.DispatchKeyEventParams{Type: typ, Key: key, Code: code, WindowsVirtualKeyCode: vk, NativeVirtualKeyCode: vk}
		if typ == input.DispatchKeyEventTypeKeyDown {
			p.Text, p.UnmodifiedText = key, key
		}
		if _, err := chromedp.Call(ctx, input.DispatchKeyEvent, p); err != nil {
			t.Fatal(err)
		}
	}
}

// screenshot saves the top of the page, unfocused, as DIR/name when
// CLAUDE_RELAY_SCREENSHOTS=DIR (the README's pictures come from here).
// With a width and height it first sizes the viewport so; 0, 0 keeps the
// window's.
func screenshot(t *testing.T, tab *browser.Tab, name string, width, height int64) {
	t.Helper()
	dir := os.Getenv("CLAUDE_RELAY_SCREENSHOTS")
	if dir == "" {
		return
	}
	if width > 0 && height > 0 {
		_, err := chromedp.Call(tab.Ctx, emulation.SetDeviceMetricsOverride,
			emulation.SetDeviceMetricsOverrideParams{Width: width, Height: height, DeviceScaleFactor: 1})
		must(t, err)
	}
	must(t, chromedp.Do(tab.Ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0); document.activeElement && document.activeElement.blur()`)))
	png, err := chromedp.Run(tab.Ctx, chromedp.CaptureScreenshot())
	must(t, err)
	must(t, os.MkdirAll(dir, 0o755))
	p := filepath.Join(dir, name)
	must(t, os.WriteFile(p, png, 0o644))
	t.Logf("screenshot: %s (%d bytes)", p, len(png))
}

// noScriptErrors fails t for uncaught exceptions, console errors, browser
// log entries (CSP reports, failed loads) and dialogs in the tab. expected
// are the failed requests the test causes on purpose: a "network: " entry
// that contains one of them is no error ("401": the login page is a 401 by
// design).
func noScriptErrors(t *testing.T, tab *browser.Tab, expected ...string) {
	t.Helper()
	if e := tab.Exceptions(); len(e) > 0 {
		t.Errorf("uncaught exceptions: %q", e)
	}
	if c := tab.ConsoleErrors(); len(c) > 0 {
		t.Errorf("console errors: %q", c)
	}
	for _, l := range tab.LogErrors() {
		if !expectedFailure(l, expected) {
			t.Errorf("browser log: %s", l)
		}
	}
	if d := tab.Dialogs(); len(d) > 0 {
		t.Errorf("the page opened dialogs: %q", d)
	}
}

func expectedFailure(logLine string, expected []string) bool {
	if !strings.HasPrefix(logLine, "network: ") {
		return false
	}
	for _, e := range expected {
		if strings.Contains(logLine, e) {
			return true
		}
	}
	return false
}
