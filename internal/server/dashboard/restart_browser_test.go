package dashboard_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/server/backend"
	"github.com/claude-relay/claude-relay/internal/server/store/sqlite"
	"github.com/claude-relay/claude-relay/internal/testkit/browser"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
)

// restartable is a backend on one SQLite file and one loopback address
// that a test can stop and start again, as a user restarts `serve`.
type restartable struct {
	t    *testing.T
	db   string
	addr string
	stop func()
}

func (r *restartable) start() {
	r.t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, r.db)
	must(r.t, err)
	// The data dir keeps the login key, so the browser's login outlives
	// the restart as it does with serve.
	srv := backend.New(backend.Options{Store: st, Tokens: func() []config.Secret { return []config.Secret{token} },
		StateDir: filepath.Dir(r.db)})
	var ln net.Listener
	// The port was ours a moment ago; another test may grab it between
	// stop and start only by accident, so a second of tries is enough.
	poll.Within(time.Second, func() bool {
		ln, err = net.Listen("tcp", r.addr)
		return err == nil
	})
	must(r.t, err)
	r.addr = ln.Addr().String()
	hs := &http.Server{Handler: srv.Handler()}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	r.stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx) // ends the SSE streams, as a stopping serve does
		_ = hs.Shutdown(ctx)
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			r.t.Errorf("serve: %v", err)
		}
		_ = st.Close()
	}
}

// TestPagesStayLiveThroughRestart: a session page and the session list
// open while the backend restarts pick up, without a reload, what arrives
// after the restart (the EventSource reconnects with Last-Event-ID).
func TestPagesStayLiveThroughRestart(t *testing.T) {
	r := &restartable{t: t, db: filepath.Join(t.TempDir(), "relay.db"), addr: "127.0.0.1:0"}
	r.start()
	t.Cleanup(func() { r.stop() })
	s := &site{t: t, url: "http://" + r.addr, seq: map[string]int64{}}
	const conv = "4f1c2a8e-5b6d-4e7f-8a9b-0c1d2e3f4a5b"
	s.post("restart", ev{"relay.run_started", "relay", map[string]any{"prompt": "keep going"}}, initEvent(conv),
		assistant(conv, text("before the restart")))

	tab := browser.New(t, browser.Options{Width: 1280, Height: 900})
	ctx := tab.Ctx
	login(t, ctx, s.url)
	list := browser.New(t, browser.Options{Width: 1280, Height: 900})
	login(t, list.Ctx, s.url)
	browser.WaitJS(t, list.Ctx, `document.body.textContent.includes("keep going")`, 20*time.Second)

	must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/sessions/restart")))
	browser.WaitJS(t, ctx, `document.body.dataset.state === "ready" && document.body.textContent.includes("before the restart")`, 20*time.Second)

	r.stop()
	browser.WaitJS(t, ctx, `document.getElementById("conn").className.includes("down")`, 20*time.Second)
	r.start()

	s.post("restart", assistant(conv, text("after the restart")))
	s.post("another", ev{"relay.run_started", "relay", map[string]any{"prompt": "a session born after the restart"}})
	browser.WaitJS(t, ctx, `document.body.textContent.includes("after the restart")`, 30*time.Second)
	browser.WaitJS(t, list.Ctx, `document.body.textContent.includes("a session born after the restart")`, 30*time.Second)
	// Nothing twice: the resumed stream starts after the last event shown.
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.body.textContent.split("before the restart").length - 1`))
	must(t, err)
	if n != 1 {
		t.Errorf("the event before the restart is shown %d times after reconnecting", n)
	}
	// The refused connections while it was down are in the log by design;
	// an exception is not.
	for _, tb := range []*browser.Tab{tab, list} {
		if e := tb.Exceptions(); len(e) > 0 {
			t.Errorf("uncaught exceptions: %q", e)
		}
	}
}
