package push

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/goleak"

	"github.com/claude-relay/claude-relay/internal/testkit/poll"
	"github.com/claude-relay/claude-relay/internal/testkit/syncbuf"
)

// TestMain fails the package when a Client's worker outlives its test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// patience bounds every wait in these tests; it is a safety net, not
// a timing assertion.
const patience = 20 * time.Second

// receiver is an ntfy stand-in that records every POST and answers
// with the next scripted status (200 once the script runs out).
type receiver struct {
	t  *testing.T
	ts *httptest.Server

	mu       sync.Mutex
	got      []receivedPost
	statuses []int
	headers  []http.Header // extra response headers, per scripted status

	// block, when set, holds each request until it is closed or the
	// request is abandoned; arrived gets one value per request that
	// started waiting.
	block   chan struct{}
	arrived chan struct{}
}

type receivedPost struct {
	header http.Header
	body   string
	user   string
	pass   string
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	r := &receiver{t: t, statuses: statuses, arrived: make(chan struct{}, 64)}
	r.ts = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.ts.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	user, pass, _ := req.BasicAuth()
	if req.Method != http.MethodPost {
		r.t.Errorf("method %s, want POST", req.Method)
	}
	r.mu.Lock()
	r.got = append(r.got, receivedPost{header: req.Header.Clone(), body: string(body), user: user, pass: pass})
	status, extra := http.StatusOK, http.Header(nil)
	if len(r.statuses) > 0 {
		status, r.statuses = r.statuses[0], r.statuses[1:]
		if len(r.headers) > 0 {
			extra, r.headers = r.headers[0], r.headers[1:]
		}
	}
	block := r.block
	r.mu.Unlock()
	if block != nil {
		r.arrived <- struct{}{}
		select {
		case <-block:
		case <-req.Context().Done():
			return
		}
	}
	for k, v := range extra {
		w.Header()[k] = v
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, `{"id":"x"}`)
}

func (r *receiver) pushes() []receivedPost {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]receivedPost(nil), r.got...)
}

// fastOptions are options with millisecond backoff, so retries take no
// time worth mentioning.
func fastOptions() options {
	return options{minBackoff: time.Millisecond, maxBackoff: 2 * time.Millisecond, maxRetryAfter: 2 * time.Millisecond}
}

// testClient starts a Client whose log goes to the returned buffer and
// closes it when the test ends (in case the test did not).
func testClient(t *testing.T, url string, o options) (*Client, *syncbuf.Buffer) {
	t.Helper()
	logs := &syncbuf.Buffer{}
	c := newWith(url, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), o)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c, logs
}

func closeClient(t *testing.T, c *Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := c.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestClientOnePostPerSend(t *testing.T) {
	r := newReceiver(t)
	c, _ := testClient(t, r.ts.URL+"/claude-approvals", fastOptions())
	msgs := []Message{
		{Title: "Approve Bash", Body: "npm test in ~/src/app", ClickURL: "https://relay.example/approvals/a1"},
		{Title: "Approve Edit", Body: "main.go", ClickURL: "https://relay.example/approvals/a2"},
		{Title: "Question", Body: "Which database?"},
	}
	for _, m := range msgs {
		c.Send(t.Context(), m)
	}
	closeClient(t, c) // waits for the queue to drain

	got := r.pushes()
	if len(got) != len(msgs) {
		t.Fatalf("receiver got %d POSTs, want one per Send (%d)", len(got), len(msgs))
	}
	for i, m := range msgs {
		h := got[i].header
		if got[i].body != m.Body {
			t.Errorf("push %d body %q, want %q", i, got[i].body, m.Body)
		}
		if h.Get("Title") != m.Title || h.Get("Click") != m.ClickURL {
			t.Errorf("push %d Title %q Click %q, want %q %q", i, h.Get("Title"), h.Get("Click"), m.Title, m.ClickURL)
		}
		if m.ClickURL == "" && len(h.Values("Click")) > 0 {
			t.Errorf("push %d has a Click header without a click URL", i)
		}
		if h.Get("Tags") != "lock" || h.Get("X-Priority") != "high" || h.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Errorf("push %d headers %v: want Tags lock, X-Priority high, text/plain", i, h)
		}
	}
	if s := c.sent.Load(); s != int64(len(msgs)) {
		t.Errorf("sent = %d, want %d", s, len(msgs))
	}
}

func TestClientRetries(t *testing.T) {
	tests := []struct {
		name      string
		statuses  []int
		headers   []http.Header
		wantPosts int
		wantSent  int64
	}{
		{name: "503 twice then 200", statuses: []int{503, 503, 200}, wantPosts: 3, wantSent: 1},
		{name: "429 with Retry-After then 200", statuses: []int{429, 200},
			headers: []http.Header{{"Retry-After": {"0"}}}, wantPosts: 2, wantSent: 1},
		{name: "408 then 502 then 200", statuses: []int{408, 502, 200}, wantPosts: 3, wantSent: 1},
		{name: "400 is not retried", statuses: []int{400}, wantPosts: 1},
		{name: "401 is not retried", statuses: []int{401}, wantPosts: 1},
		{name: "501 is not retried", statuses: []int{501}, wantPosts: 1},
		{name: "a redirect is not followed", statuses: []int{301},
			headers: []http.Header{{"Location": {"/moved"}}}, wantPosts: 1},
		{name: "500 until the attempts run out", statuses: []int{500, 500, 500, 500, 500, 500, 500}, wantPosts: defaultAttempts},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newReceiver(t, tc.statuses...)
			r.headers = tc.headers
			c, logs := testClient(t, r.ts.URL+"/topic", fastOptions())
			c.Send(t.Context(), Message{Title: "Approve Bash", Body: "ls"})
			closeClient(t, c)
			if got := len(r.pushes()); got != tc.wantPosts {
				t.Fatalf("receiver got %d POSTs, want %d", got, tc.wantPosts)
			}
			if c.sent.Load() != tc.wantSent || c.failed.Load() != 1-tc.wantSent {
				t.Fatalf("sent %d failed %d, want sent %d", c.sent.Load(), c.failed.Load(), tc.wantSent)
			}
			if tc.wantSent == 0 {
				want := "giving up"
				switch {
				case tc.statuses[0] == 301:
					want = "a redirect"
				case tc.wantPosts == 1:
					want = "not retried"
				}
				if !strings.Contains(logs.String(), want) || !strings.Contains(logs.String(), "level=WARN") {
					t.Fatalf("log does not warn %q:\n%s", want, logs)
				}
			}
		})
	}
}

// failingTransport fails the first n round trips as a refused connection
// would, then passes requests on.
type failingTransport struct {
	n     atomic.Int32
	tries atomic.Int32
	next  http.RoundTripper
}

func (f *failingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	f.tries.Add(1)
	if f.n.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	}
	return f.next.RoundTrip(req)
}

func TestClientRetriesNetworkErrors(t *testing.T) {
	r := newReceiver(t)
	tr := &failingTransport{next: http.DefaultTransport}
	tr.n.Store(2)
	o := fastOptions()
	o.transport = tr
	c, _ := testClient(t, r.ts.URL+"/topic", o)
	c.Send(t.Context(), Message{Title: "Approve Bash", Body: "ls"})
	closeClient(t, c)
	if tries, posts := tr.tries.Load(), len(r.pushes()); tries != 3 || posts != 1 {
		t.Fatalf("%d tries and %d POSTs received, want 3 tries (2 refused) and 1 POST", tries, posts)
	}
	if c.sent.Load() != 1 {
		t.Fatalf("sent = %d, want 1", c.sent.Load())
	}
}

// TestClientBackoff: a push trusts Retry-After up to maxRetryAfter (not
// the retries' own cap hi), and without one waits a jittered delay within
// [lo, min(lo·2^attempt, hi)]; package backoff has the rest of the rules.
func TestClientBackoff(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	tooMany := func(retryAfter string) *http.Response {
		return &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {retryAfter}}}
	}
	lo, hi, maxRA := time.Second, 30*time.Second, time.Minute
	if got := retryDelay(lo, hi, maxRA, 0, tooMany("45"), now); got != 45*time.Second {
		t.Errorf("Retry-After 45 (above hi, below the cap): backoff %s, want 45s", got)
	}
	if got := retryDelay(lo, hi, maxRA, 0, tooMany("3600"), now); got != maxRA {
		t.Errorf("Retry-After 3600: backoff %s, want the cap %s", got, maxRA)
	}
	for attempt := range 8 {
		for _, r := range []*http.Response{nil, {StatusCode: 500, Header: http.Header{"Retry-After": {"9"}}}, tooMany("soon")} {
			ceiling := min(lo<<attempt, hi)
			for range 20 {
				if got := retryDelay(lo, hi, maxRA, attempt, r, now); got < lo || got > ceiling {
					t.Fatalf("attempt %d: backoff %s outside [%s, %s]", attempt, got, lo, ceiling)
				}
			}
		}
	}
}

// Close drains the queue: what was sent before Close is posted before it
// returns.
func TestClientCloseDeliversQueued(t *testing.T) {
	r := newReceiver(t)
	c, _ := testClient(t, r.ts.URL+"/topic", fastOptions())
	for range 5 {
		c.Send(t.Context(), Message{Title: "Approve Bash", Body: "ls"})
	}
	closeClient(t, c)
	if got := len(r.pushes()); got != 5 {
		t.Fatalf("receiver got %d POSTs by the time Close returned, want 5", got)
	}
	// Closed: a later Send is refused, not queued, and does not panic.
	c.Send(t.Context(), Message{Title: "late"})
	if c.dropped.Load() != 1 {
		t.Fatalf("dropped = %d after a Send on a closed client, want 1", c.dropped.Load())
	}
	closeClient(t, c) // a second Close is harmless
}

// Close waits for the send in flight until its context ends, then aborts
// it and returns the context's error; the worker is gone either way
// (TestMain checks for leaked goroutines).
func TestClientCloseWaitsUntilContextEnds(t *testing.T) {
	r := newReceiver(t)
	r.block = make(chan struct{}) // never released: the receiver hangs
	c, logs := testClient(t, r.ts.URL+"/topic", fastOptions())
	c.Send(t.Context(), Message{Title: "Approve Bash", Body: "ls"})
	c.Send(t.Context(), Message{Title: "Approve Edit", Body: "x.go"})
	select {
	case <-r.arrived:
	case <-time.After(patience):
		t.Fatal("the first push never reached the receiver")
	}
	ctx, cancel := context.WithCancel(context.Background())
	closed := make(chan error, 1)
	go func() { closed <- c.Close(ctx) }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a push was in flight and its context live", err)
	case <-time.After(50 * time.Millisecond):
		// Not a timing assertion: a Close that returned early fails above
		// on most runs, and the checks below hold either way.
	}
	cancel()
	var err error
	select {
	case err = <-closed:
	case <-time.After(patience):
		t.Fatal("Close did not return after its context ended")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Close = %v, want an error wrapping context.Canceled", err)
	}
	if c.abandoned.Load() != 2 || c.sent.Load() != 0 {
		t.Fatalf("abandoned %d sent %d, want the in-flight and the queued push abandoned", c.abandoned.Load(), c.sent.Load())
	}
	if !strings.Contains(logs.String(), "push abandoned") || !strings.Contains(logs.String(), "count=1") {
		t.Fatalf("log does not tell of the abandoned pushes:\n%s", logs)
	}
}

func TestClientQueueFullDrops(t *testing.T) {
	r := newReceiver(t)
	r.block = make(chan struct{})
	o := fastOptions()
	o.queue = 2
	c, logs := testClient(t, r.ts.URL+"/topic", o)
	c.Send(t.Context(), Message{Title: "in flight"})
	select {
	case <-r.arrived: // the worker holds it: the queue is empty again
	case <-time.After(patience):
		t.Fatal("the first push never reached the receiver")
	}
	c.Send(t.Context(), Message{Title: "queued 1"})
	c.Send(t.Context(), Message{Title: "queued 2"})
	c.Send(t.Context(), Message{Title: "one too many"}) // returns at once although nothing moves
	if c.dropped.Load() != 1 {
		t.Fatalf("dropped = %d, want 1", c.dropped.Load())
	}
	if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "push dropped") || !strings.Contains(l, `title="one too many"`) {
		t.Fatalf("log does not warn about the dropped push:\n%s", l)
	}
	close(r.block)
	closeClient(t, c)
	var titles []string
	for _, p := range r.pushes() {
		titles = append(titles, p.header.Get("Title"))
	}
	if strings.Join(titles, ",") != "in flight,queued 1,queued 2" {
		t.Fatalf("receiver got %q, want the in-flight and the two queued pushes in order", titles)
	}
}

// The URL's userinfo, topic (path) and query are secrets: they are used
// (basic auth, the topic) but never logged, whatever goes wrong.
func TestClientNeverLogsURLSecrets(t *testing.T) {
	const user, pass, topic, token = "alice-user", "s3cret-pass", "topic-k8x2q9", "tk_querytoken"
	secrets := []string{user, pass, topic, token}
	checkLogs := func(t *testing.T, logs, target string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(logs, s) {
				t.Fatalf("log reveals %q:\n%s", s, logs)
			}
		}
		if !strings.Contains(logs, "target="+target) {
			t.Fatalf("log does not name the target %s:\n%s", target, logs)
		}
	}
	withSecrets := func(hostport string) string {
		return "http://" + user + ":" + pass + "@" + hostport + "/" + topic + "?auth=" + token
	}

	t.Run("rejected", func(t *testing.T) {
		r := newReceiver(t, http.StatusForbidden)
		host := strings.TrimPrefix(r.ts.URL, "http://")
		c, logs := testClient(t, withSecrets(host), fastOptions())
		c.Send(t.Context(), Message{Title: "Approve Bash"})
		closeClient(t, c)
		got := r.pushes()
		if len(got) != 1 || got[0].user != user || got[0].pass != pass {
			t.Fatalf("receiver got %+v, want one POST with the URL's basic auth", got)
		}
		checkLogs(t, logs.String(), r.ts.URL)
	})
	t.Run("unreachable", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		host := ln.Addr().String()
		ln.Close() // nothing listens there now: connection refused
		c, logs := testClient(t, withSecrets(host), fastOptions())
		c.Send(t.Context(), Message{Title: "Approve Bash"})
		closeClient(t, c)
		if c.failed.Load() != 1 || !strings.Contains(logs.String(), "giving up") || !strings.Contains(logs.String(), "attempts=5") {
			t.Fatalf("failed = %d; want one push given up after 5 attempts, logged:\n%s", c.failed.Load(), logs)
		}
		checkLogs(t, logs.String(), "http://"+host)
	})
	t.Run("queue full and shutdown", func(t *testing.T) {
		r := newReceiver(t)
		r.block = make(chan struct{})
		host := strings.TrimPrefix(r.ts.URL, "http://")
		o := fastOptions()
		o.queue = 1
		c, logs := testClient(t, withSecrets(host), o)
		c.Send(t.Context(), Message{Title: "a"})
		select {
		case <-r.arrived:
		case <-time.After(patience):
			t.Fatal("the first push never reached the receiver")
		}
		c.Send(t.Context(), Message{Title: "b"})
		c.Send(t.Context(), Message{Title: "c"}) // dropped
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := c.Close(ctx); err == nil || strings.Contains(err.Error(), pass) || strings.Contains(err.Error(), topic) {
			t.Fatalf("Close = %v; want an error without secrets", err)
		}
		checkLogs(t, logs.String(), r.ts.URL)
	})
	t.Run("bad scheme", func(t *testing.T) {
		c, logs := testClient(t, "ftp://"+user+":"+pass+"@127.0.0.1/"+topic+"?auth="+token, fastOptions())
		c.Send(t.Context(), Message{Title: "a"})
		if c.dropped.Load() != 1 || !strings.Contains(logs.String(), `scheme is \"ftp\"`) {
			t.Fatalf("dropped = %d; want the push refused with the reason logged:\n%s", c.dropped.Load(), logs)
		}
		checkLogs(t, logs.String(), "ftp://127.0.0.1")
	})
	t.Run("unparsable", func(t *testing.T) {
		c, logs := testClient(t, "http://"+user+":"+pass+"@[::1/"+topic+"%zz", fastOptions())
		c.Send(t.Context(), Message{Title: "a"})
		if c.dropped.Load() != 1 || !strings.Contains(logs.String(), "not a valid URL") {
			t.Fatalf("dropped = %d; want the push refused with the reason logged:\n%s", c.dropped.Load(), logs)
		}
		for _, s := range secrets[:3] {
			if strings.Contains(logs.String(), s) {
				t.Fatalf("log reveals %q:\n%s", s, logs)
			}
		}
	})
}

// redact scrubs the URL's secrets even from an error text that quotes
// them somewhere we did not expect.
func TestClientRedact(t *testing.T) {
	c, _ := testClient(t, "https://bob:pw-123@ntfy.example:8443/my-topic?auth=tk_abc#frag-x", fastOptions())
	err := errors.New(`proxy said: no route to https://bob:pw-123@ntfy.example:8443/my-topic?auth=tk_abc#frag-x`)
	got := c.redact(err)
	for _, s := range []string{"bob", "pw-123", "my-topic", "tk_abc", "frag-x"} {
		if strings.Contains(got, s) {
			t.Fatalf("redact left %q in %q", s, got)
		}
	}
	if !strings.Contains(got, "ntfy.example:8443") {
		t.Fatalf("redact removed the host too: %q", got)
	}
}

func TestClientHeaderEncoding(t *testing.T) {
	r := newReceiver(t)
	c, _ := testClient(t, r.ts.URL+"/topic", fastOptions())
	title := "Approve Edit: «naïve» 日本語 ✓"
	c.Send(t.Context(), Message{Title: title, Body: "héllo\nwörld", ClickURL: "https://relay.example/approvals/ä 1"})
	c.Send(t.Context(), Message{Title: "evil\r\nX-Injected: 1", Body: "b"})
	c.Send(t.Context(), Message{Title: strings.Repeat("é", 200), Body: "b"}) // several encoded-words
	closeClient(t, c)
	got := r.pushes()
	if len(got) != 3 {
		t.Fatalf("receiver got %d POSTs, want 3", len(got))
	}
	var dec mime.WordDecoder
	for i, want := range []string{title, "evil  X-Injected: 1", strings.Repeat("é", maxTitleRunes-1) + "…"} {
		raw := got[i].header.Get("Title")
		for _, b := range []byte(raw) {
			if b < ' ' || b > '~' {
				t.Fatalf("push %d Title %q is not plain ASCII", i, raw)
			}
		}
		// What ntfy does with it (server/util.go maybeDecodeHeader).
		if d, err := dec.DecodeHeader(raw); err != nil || d != want {
			t.Errorf("push %d Title %q decodes to %q (%v), want %q", i, raw, d, err, want)
		}
	}
	if got[1].header.Get("X-Injected") != "" {
		t.Fatal("a newline in the title injected a header")
	}
	if got[0].body != "héllo\nwörld" {
		t.Errorf("body %q, want the UTF-8 text as is", got[0].body)
	}
	if click := got[0].header.Get("Click"); click != "https://relay.example/approvals/%C3%A4%201" {
		t.Errorf("Click %q, want the URL percent-encoded", click)
	}
}

func TestClientClipsLongTexts(t *testing.T) {
	m := Message{Title: strings.Repeat("t", 150), Body: strings.Repeat("ü", 500) + "\xff"}.clipped()
	if n := utf8.RuneCountInString(m.Title); n != maxTitleRunes || !strings.HasSuffix(m.Title, "…") {
		t.Errorf("title has %d runes (%q…), want %d ending in an ellipsis", n, m.Title[:10], maxTitleRunes)
	}
	if n := utf8.RuneCountInString(m.Body); n != maxBodyRunes || !utf8.ValidString(m.Body) {
		t.Errorf("body has %d runes (valid UTF-8: %v), want %d", n, utf8.ValidString(m.Body), maxBodyRunes)
	}
	short := Message{Title: "Approve Bash", Body: "ls -la"}
	if short.clipped() != short {
		t.Errorf("clipped changed a short message: %+v", short.clipped())
	}
	if got := (Message{Title: "bad \xff byte"}).clipped().Title; got != "bad \uFFFD byte" {
		t.Errorf("invalid UTF-8 title became %q", got)
	}
}

// A server without serve.notify_url holds a nil or URL-less Client:
// Send and Close do nothing and cost nothing.
func TestClientDisabled(t *testing.T) {
	var nilClient *Client
	nilClient.Send(t.Context(), Message{Title: "x"})
	if err := nilClient.Close(t.Context()); err != nil {
		t.Fatalf("Close of a nil Client: %v", err)
	}
	d := New("", nil) // the production constructor; a nil logger is fine
	d.Send(t.Context(), Message{Title: "x"})
	if err := d.Close(t.Context()); err != nil || d.dropped.Load() != 0 {
		t.Fatalf("URL-less Client: Close %v, dropped %d", err, d.dropped.Load())
	}
	c, logs := testClient(t, "", options{})
	c.Send(t.Context(), Message{Title: "x"})
	closeClient(t, c)
	if c.dropped.Load() != 0 || c.sent.Load() != 0 || logs.String() != "" {
		t.Fatalf("URL-less Client did something: dropped %d sent %d logs %q", c.dropped.Load(), c.sent.Load(), logs)
	}
}

// Send returns while the receiver still hangs: ingestion never waits for a
// push.
func TestClientSendDoesNotWaitForDelivery(t *testing.T) {
	r := newReceiver(t)
	r.block = make(chan struct{})
	c, _ := testClient(t, r.ts.URL+"/topic", fastOptions())
	c.Send(t.Context(), Message{Title: "a"}) // returns although the receiver hangs
	poll.Until(t, patience, "the push to reach the receiver", func() bool { return len(r.pushes()) == 1 })
	close(r.block)
	closeClient(t, c)
	if c.sent.Load() != 1 {
		t.Fatalf("sent = %d, want 1", c.sent.Load())
	}
}
