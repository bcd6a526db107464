// Package browser starts a real headless Chromium for tests, through
// chromedp. A test that needs one calls New; without a Chromium on the
// machine the test is skipped locally and fails in CI (CI=true), so a broken
// CI image cannot silently turn browser tests off.
//
// The browser runs with a throwaway profile and with every background
// network feature off: the test machines have no network, and without
// these flags Chromium keeps trying to reach Google's services.
package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// candidates are where Chromium is looked for, in order. Debian's
// `chromium` package installs /usr/bin/chromium.
var candidates = []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome-stable", "google-chrome"}

// Path returns the Chromium binary to use, or "" when there is none.
func Path() string {
	for _, c := range candidates {
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	return ""
}

// Options configure New. Zero values mean the default.
type Options struct {
	Width, Height int           // window size; 0: 1280x900
	Timeout       time.Duration // the whole tab's life; 0: 3 minutes
}

// Tab is one browser tab. Run chromedp actions with Ctx. It records what a
// test usually wants to assert on: JavaScript dialogs (alert, confirm,
// prompt; each is dismissed at once so the page goes on), uncaught
// exceptions and console errors.
type Tab struct {
	Ctx context.Context

	mu         sync.Mutex
	dialogs    []string
	exceptions []string
	console    []string
	logs       []string
	handlers   sync.WaitGroup // dialog dismissals in flight
}

// New starts Chromium and opens a tab; both stop when the test ends. It
// skips the test when Chromium is missing, unless CI=true.
func New(t testing.TB, opts Options) *Tab {
	t.Helper()
	bin := Path()
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("browser: no Chromium found (looked for " + joinNames() + "); the CI image must install Debian's chromium package")
		}
		t.Skip("browser: no Chromium found; install it (apt-get install chromium) to run browser tests")
	}
	if opts.Width == 0 || opts.Height == 0 {
		opts.Width, opts.Height = 1280, 900
	}
	if opts.Timeout == 0 {
		opts.Timeout = 3 * time.Minute
	}
	var output bytes.Buffer
	var outMu sync.Mutex
	allocOpts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(opts.Width, opts.Height),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), // containers run as root
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-breakpad", true),
		chromedp.Flag("disable-client-side-phishing-detection", true),
		chromedp.Flag("disable-dev-shm-usage", true), // small /dev/shm in containers
		chromedp.Flag("disable-features", "Translate,OptimizationHints,MediaRouter"),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("safebrowsing-disable-auto-update", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.Flag("use-mock-keychain", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		chromedp.CombinedOutput(&lockedWriter{mu: &outMu, w: &output}),
	}
	base, cancelTimeout := context.WithTimeout(context.Background(), opts.Timeout)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(base, allocOpts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	tab := &Tab{Ctx: ctx}
	t.Cleanup(func() {
		cancelTab()
		tab.handlers.Wait()
		cancelAlloc() // waits for the browser process to exit
		cancelTimeout()
		if t.Failed() {
			outMu.Lock()
			t.Logf("chromium output:\n%s", output.String())
			outMu.Unlock()
		}
	})
	// Start the browser now, so a launch failure is reported as such.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("browser: starting %s: %v", bin, err)
	}
	if err := chromedp.Listen(ctx, tab.listen); err != nil {
		t.Fatalf("browser: listening to the tab: %v", err)
	}
	return tab
}

func joinNames() string {
	var b bytes.Buffer
	for i, c := range candidates {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c)
	}
	return b.String()
}

func (tab *Tab) listen(ev any) {
	switch ev := ev.(type) {
	case *page.EventJavascriptDialogOpening:
		tab.mu.Lock()
		tab.dialogs = append(tab.dialogs, string(ev.Type)+": "+ev.Message)
		tab.mu.Unlock()
		// A listener must not block the event loop; the dismissal is a
		// command, so it runs in its own goroutine, waited for at cleanup.
		tab.handlers.Add(1)
		go func() {
			defer tab.handlers.Done()
			_, _ = chromedp.Call(tab.Ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}()
	case *runtime.EventExceptionThrown:
		msg := ev.ExceptionDetails.Text
		if ev.ExceptionDetails.Exception != nil && ev.ExceptionDetails.Exception.Description != "" {
			msg += ": " + ev.ExceptionDetails.Exception.Description
		}
		tab.mu.Lock()
		tab.exceptions = append(tab.exceptions, msg)
		tab.mu.Unlock()
	case *cdplog.EventEntryAdded:
		if ev.Entry == nil || ev.Entry.Level != cdplog.EntryLevelError {
			return
		}
		tab.mu.Lock()
		tab.logs = append(tab.logs, string(ev.Entry.Source)+": "+ev.Entry.Text)
		tab.mu.Unlock()
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError && ev.Type != runtime.ConsoleAPICalledTypeAssert {
			return
		}
		var b bytes.Buffer
		for _, a := range ev.Args {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			if len(a.Value) > 0 {
				b.Write(a.Value)
			} else {
				b.WriteString(a.Description)
			}
		}
		tab.mu.Lock()
		tab.console = append(tab.console, b.String())
		tab.mu.Unlock()
	}
}

// Dialogs returns the JavaScript dialogs the page opened ("alert: 1").
func (tab *Tab) Dialogs() []string {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	return append([]string(nil), tab.dialogs...)
}

// Exceptions returns the page's uncaught JavaScript exceptions.
func (tab *Tab) Exceptions() []string {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	return append([]string(nil), tab.exceptions...)
}

// ConsoleErrors returns console.error and console.assert messages.
func (tab *Tab) ConsoleErrors() []string {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	return append([]string(nil), tab.console...)
}

// LogErrors returns the browser's own error log entries as "source: text":
// Content-Security-Policy violations ("security: ..."), failed loads
// ("network: ..."), and the like.
func (tab *Tab) LogErrors() []string {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	return append([]string(nil), tab.logs...)
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Eval evaluates expr in the page of ctx's tab and returns its value; a
// failure ends the test.
func Eval[T any](t testing.TB, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// ListCell is an expression for the text of the cell sel of the dashboard
// session list's row of session id (undefined when there is none).
func ListCell(id, sel string) string {
	b, _ := json.Marshal(id) // a string always marshals
	return `(document.querySelector('#sessions tr[data-id=` + string(b) + `] ` + sel + `') || {}).textContent`
}
