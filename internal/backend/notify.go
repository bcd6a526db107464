package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/hashicorp/go-retryablehttp"

	"github.com/claude-relay/claude-relay/internal/backoff"
	"github.com/claude-relay/claude-relay/internal/redact"
)

// Push notifications for pending approvals (CONTRACT §10): with
// serve.notify_url set, each new pending approval POSTs one short message
// there, ntfy-style, so a phone can say "Claude is waiting for you".
//
// The request is ntfy's header form: the body is the message as
// text/plain, Title and Click (the approval's page) are headers, Tags: lock
// shows a 🔒, and X-Priority: high raises the notification above the
// default. Priority goes in X-Priority, which ntfy reads before Priority,
// because proxies such as Cloudflare set the HTTP "Priority" header
// (RFC 9218) on what they forward, and ntfy then ignores it.
// The URL may carry credentials (https://user:pass@host/topic, or
// ?auth=…), and the topic itself is a password on public servers, so logs
// name only the scheme and host.
//
// Delivery is best effort and never blocks the caller: Send queues, one
// worker posts, retrying network errors, 408, 429 (honouring Retry-After)
// and 5xx with capped, jittered exponential backoff for a bounded number of
// attempts. A full queue drops the push with a warning: a push is a nudge,
// and the approval itself stays pending on the dashboard.

// Limits of a push. Titles and bodies are written by the caller and short
// already; these caps are a defence against a caller's bug putting tool
// input in them.
const (
	notifyTitleRunes = 100 // runes
	notifyBodyRunes  = 300 // runes
)

// Defaults of a notifier (notifyOptions zero values).
const (
	defaultNotifyQueue       = 64
	defaultNotifyAttempts    = 5
	defaultNotifyMinBackoff  = 500 * time.Millisecond
	defaultNotifyMaxBackoff  = 30 * time.Second
	defaultNotifyRetryAfter  = time.Minute // the longest Retry-After we wait
	defaultNotifyAttemptTime = 10 * time.Second
)

// pushMessage is one push: short, no secrets, no tool input.
type pushMessage struct {
	Title, Body, ClickURL string
}

// notifyOptions tunes a notifier; zero values mean the defaults. Tests
// shorten the backoff and the queue, and inject a transport.
type notifyOptions struct {
	queue         int
	attempts      int
	minBackoff    time.Duration
	maxBackoff    time.Duration
	maxRetryAfter time.Duration
	attemptTime   time.Duration
	transport     http.RoundTripper
}

// notifier posts pushes to one URL from one goroutine it owns; Close stops
// it. A nil *notifier (or one with no URL) takes every Send and does
// nothing, so a server without serve.notify_url needs no special case.
type notifier struct {
	url    string
	target string // scheme://host: all the logs may say about url
	bad    string // why url is unusable, or ""
	// secrets are the parts of url that must never reach a log even inside
	// an error text: userinfo, path (the topic), query, fragment.
	secrets []string
	log     *slog.Logger
	client  *retryablehttp.Client

	mu     sync.Mutex // guards closed and sending on queue
	closed bool
	queue  chan pushMessage

	ctx       context.Context // ends in-flight and queued sends when Close gives up waiting
	cancel    context.CancelFunc
	done      chan struct{} // closed when the worker has returned
	closeOnce sync.Once

	attempt   atomic.Int64 // attempts of the push in flight (1 = first try)
	sent      atomic.Int64 // pushes the receiver accepted
	failed    atomic.Int64 // pushes given up on (rejected, or out of attempts)
	dropped   atomic.Int64 // pushes refused by Send (queue full, closed, bad URL)
	abandoned atomic.Int64 // pushes queued or in flight when Close stopped waiting
}

// newNotifier starts a notifier posting to rawURL (serve.notify_url). An
// empty rawURL gives a notifier that does nothing; an unusable one logs why
// now and on each Send. log may be nil.
func newNotifier(rawURL string, log *slog.Logger) *notifier {
	return newNotifierWith(rawURL, log, notifyOptions{})
}

func newNotifierWith(rawURL string, log *slog.Logger, o notifyOptions) *notifier {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	o = o.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	n := &notifier{
		url:    rawURL,
		log:    log,
		queue:  make(chan pushMessage, o.queue),
		ctx:    ctx,
		cancel: cancel,
		done:   make(chan struct{}),
	}
	n.target, n.secrets, n.bad = describeNotifyURL(rawURL)
	if n.bad != "" {
		n.log.Warn("backend: serve.notify_url is unusable, so no push will be sent: "+n.bad+"; set it to the http(s) URL of an ntfy topic", "target", n.target)
	}
	n.client = n.newClient(o)
	go n.run()
	return n
}

func (o notifyOptions) withDefaults() notifyOptions {
	if o.queue <= 0 {
		o.queue = defaultNotifyQueue
	}
	if o.attempts <= 0 {
		o.attempts = defaultNotifyAttempts
	}
	if o.minBackoff <= 0 {
		o.minBackoff = defaultNotifyMinBackoff
	}
	if o.maxBackoff <= 0 {
		o.maxBackoff = defaultNotifyMaxBackoff
	}
	if o.maxRetryAfter <= 0 {
		o.maxRetryAfter = defaultNotifyRetryAfter
	}
	if o.attemptTime <= 0 {
		o.attemptTime = defaultNotifyAttemptTime
	}
	if o.transport == nil {
		o.transport = cleanhttp.DefaultPooledTransport()
	}
	return o
}

// describeNotifyURL returns what logs may show of raw (scheme://host), the
// parts they must not, and why raw cannot be used ("" if it can). Neither
// the reason nor the target ever quotes raw: url.Parse's errors do, so they
// are not passed on.
func describeNotifyURL(raw string) (target string, secrets []string, bad string) {
	if raw == "" {
		return "", nil, ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)", nil, "it is not a valid URL"
	}
	target = u.Scheme + "://" + u.Host
	if u.User != nil {
		secrets = append(secrets, u.User.String(), u.User.Username())
		if p, ok := u.User.Password(); ok {
			secrets = append(secrets, p)
		}
	}
	secrets = append(secrets, u.EscapedPath(), u.Path, u.RawQuery, u.EscapedFragment())
	secrets = slices.DeleteFunc(secrets, func(s string) bool {
		// Too short to redact without mangling an error text: the "/" of
		// a bare host, an empty query.
		return len(s) < 2
	})
	// Longest first, so a part of a longer secret is not replaced first
	// and leaves the rest of it behind.
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return target, secrets, fmt.Sprintf("its scheme is %q, not http or https", u.Scheme)
	case u.Host == "":
		return target, secrets, "it has no host"
	}
	return target, secrets, ""
}

func (n *notifier) newClient(o notifyOptions) *retryablehttp.Client {
	rc := retryablehttp.NewClient()
	rc.HTTPClient = &http.Client{
		Timeout:   o.attemptTime,
		Transport: o.transport,
		// A redirected POST comes back as a GET without its body (301,
		// 302), which a server answers 200 without publishing anything: a
		// push silently lost. Stop at the redirect and say so instead.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	rc.RetryMax = o.attempts - 1
	rc.RetryWaitMin, rc.RetryWaitMax = o.minBackoff, o.maxBackoff
	rc.CheckRetry = checkPushRetry
	rc.Backoff = func(lo, hi time.Duration, attempt int, resp *http.Response) time.Duration {
		return pushBackoff(lo, hi, o.maxRetryAfter, attempt, resp, time.Now())
	}
	// retryablehttp's own logs print the URL with its path and query; ours
	// say what happened without it.
	rc.Logger = nil
	// Hand back the last response or error as it is: the default handler
	// wraps it in a message that quotes the URL.
	rc.ErrorHandler = retryablehttp.PassthroughErrorHandler
	rc.RequestLogHook = func(_ retryablehttp.Logger, _ *http.Request, attempt int) {
		n.attempt.Store(int64(attempt) + 1)
	}
	return rc
}

// checkPushRetry retries network errors (but not those retrying cannot fix:
// a bad scheme, an untrusted certificate, too many redirects), 408, 429
// and 5xx except 501; never once ctx has ended.
func checkPushRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if err != nil {
		return retryablehttp.DefaultRetryPolicy(ctx, resp, err)
	}
	return retryableStatus(resp.StatusCode), nil
}

func retryableStatus(code int) bool {
	switch {
	case code == http.StatusRequestTimeout, code == http.StatusTooManyRequests:
		return true
	case code == http.StatusNotImplemented:
		return false
	}
	return code >= 500
}

// pushBackoff waits what a 429 or 503's Retry-After says (seconds or an
// HTTP date, up to maxRetryAfter), else a full-jitter delay between lo and
// lo·2^attempt capped at hi.
func pushBackoff(lo, hi, maxRetryAfter time.Duration, attempt int, resp *http.Response, now time.Time) time.Duration {
	return backoff.Delay(lo, hi, maxRetryAfter, attempt, resp, now)
}

// Send queues m for the worker and returns at once. It drops m, with a
// warning, when the queue is full or Close has been called.
func (n *notifier) Send(ctx context.Context, m pushMessage) {
	if n == nil || n.url == "" {
		return
	}
	if n.bad != "" {
		n.dropped.Add(1)
		n.log.WarnContext(ctx, "backend: push not sent: serve.notify_url is unusable: "+n.bad+"; set it to the http(s) URL of an ntfy topic", "target", n.target)
		return
	}
	m = clipPush(m)
	n.mu.Lock()
	closed, queued := n.closed, false
	if !closed {
		select {
		case n.queue <- m:
			queued = true
		default:
		}
	}
	n.mu.Unlock()
	switch {
	case queued:
	case closed:
		n.dropped.Add(1)
		n.log.WarnContext(ctx, "backend: push not sent: the server is shutting down", "target", n.target, "title", m.Title)
	default:
		n.dropped.Add(1)
		n.log.WarnContext(ctx, "backend: push dropped: "+strconv.Itoa(cap(n.queue))+" pushes are already waiting for a slow or unreachable notify server; the approval is still on the dashboard",
			"target", n.target, "title", m.Title)
	}
}

// Close stops taking pushes and waits until the worker has posted what was
// queued, or until ctx ends; then it aborts what is left (the request in
// flight too) and waits for the worker to return. It returns an error
// wrapping ctx's when pushes were abandoned. Calling it again is harmless.
func (n *notifier) Close(ctx context.Context) error {
	if n == nil {
		return nil
	}
	n.closeOnce.Do(func() {
		n.mu.Lock()
		n.closed = true
		close(n.queue)
		n.mu.Unlock()
	})
	select {
	case <-n.done:
	case <-ctx.Done():
	}
	n.cancel()
	<-n.done // prompt now: every wait in the worker ends with n.ctx
	n.client.HTTPClient.CloseIdleConnections()
	if a := n.abandoned.Load(); a > 0 && ctx.Err() != nil {
		return fmt.Errorf("backend: %d push(es) to %s not sent: the shutdown wait ended first: %w", a, n.target, ctx.Err())
	}
	return nil
}

// run is the worker: one push at a time, in order.
func (n *notifier) run() {
	defer close(n.done)
	abandoned := 0
	for m := range n.queue {
		if n.ctx.Err() != nil {
			abandoned++
			continue
		}
		n.post(m)
	}
	if abandoned > 0 {
		n.abandoned.Add(int64(abandoned))
		n.log.Warn("backend: pushes not sent: the server stopped before they could be posted", "target", n.target, "count", abandoned)
	}
}

// post delivers one push with retries and logs the outcome.
func (n *notifier) post(m pushMessage) {
	req, err := retryablehttp.NewRequestWithContext(n.ctx, http.MethodPost, n.url, []byte(m.Body))
	if err != nil {
		n.failed.Add(1)
		n.log.Warn("backend: push not sent: cannot build the request; check serve.notify_url", "target", n.target, "err", n.redact(err))
		return
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	req.Header.Set("Title", headerText(m.Title))
	if m.ClickURL != "" {
		req.Header.Set("Click", headerURL(m.ClickURL))
	}
	req.Header.Set("Tags", "lock")
	req.Header.Set("X-Priority", "high")
	n.attempt.Store(0)
	resp, err := n.client.Do(req)
	attempts := n.attempt.Load()
	if err != nil {
		if n.ctx.Err() != nil {
			n.abandoned.Add(1)
			n.log.Warn("backend: push abandoned: the server stopped while posting it", "target", n.target, "title", m.Title, "attempts", attempts)
			return
		}
		n.failed.Add(1)
		n.log.Warn("backend: push failed; giving up: check that the notify server is reachable from here", "target", n.target,
			"title", m.Title, "attempts", attempts, "err", n.redact(err))
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	resp.Body.Close()
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		n.sent.Add(1)
		n.log.Debug("backend: push sent", "target", n.target, "title", m.Title, "attempts", attempts)
	case code >= 300 && code < 400:
		n.failed.Add(1)
		n.log.Warn("backend: push not sent: the notify server answered "+resp.Status+", a redirect: set serve.notify_url to the URL it redirects to (https instead of http?)",
			"target", n.target, "title", m.Title, "status", code)
	case retryableStatus(code):
		n.failed.Add(1)
		n.log.Warn("backend: push failed; giving up: the notify server kept answering "+resp.Status, "target", n.target,
			"title", m.Title, "attempts", attempts, "status", code)
	default:
		n.failed.Add(1)
		n.log.Warn("backend: push rejected with "+resp.Status+" and not retried: check serve.notify_url (topic, credentials, access token)",
			"target", n.target, "title", m.Title, "status", code)
	}
}

// redact renders err for a log without any secret part of the URL: a
// transport error is a *url.Error quoting the URL (only its password
// masked), so the URL is left out and anything else is scrubbed.
func (n *notifier) redact(err error) string {
	var ue *url.Error
	msg := err.Error()
	if errors.As(err, &ue) {
		msg = ue.Op + " " + n.target + ": " + ue.Err.Error()
	}
	// Known, not the log redactor: a topic may be short ("/t"), and it is
	// a secret all the same in this URL's own error texts.
	return redact.Known(msg, n.secrets)
}

// clipPush makes m's texts valid UTF-8 within the push limits.
func clipPush(m pushMessage) pushMessage {
	m.Title = clipRunes(strings.ToValidUTF8(m.Title, "\uFFFD"), notifyTitleRunes)
	m.Body = clipRunes(strings.ToValidUTF8(m.Body, "\uFFFD"), notifyBodyRunes)
	return m
}

// clipRunes cuts s to at most n runes, the last one an ellipsis when cut.
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i = range s {
		if count == n-1 {
			break
		}
		count++
	}
	return s[:i] + "…"
}

// headerText makes s a valid header value: control characters (a newline
// would end the header) become spaces, and non-ASCII text is sent as
// RFC 2047 encoded-words (=?UTF-8?b?…?=), which ntfy decodes; HTTP headers
// have no reliable way to carry UTF-8 otherwise.
func headerText(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	return mime.BEncoding.Encode("UTF-8", s)
}

// headerURL percent-encodes every byte of u that is not visible ASCII, so
// a URL with spaces, control characters or raw UTF-8 stays one valid
// header value that still points at the same place.
func headerURL(u string) string {
	var b strings.Builder
	for i := 0; i < len(u); i++ {
		c := u[i]
		if c > ' ' && c < 0x7f {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}
