package push

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/hashicorp/go-retryablehttp"
)

// Defaults of a Client (options zero values).
const (
	defaultQueue         = 64
	defaultAttempts      = 5
	defaultMinBackoff    = 500 * time.Millisecond
	defaultMaxBackoff    = 30 * time.Second
	defaultMaxRetryAfter = time.Minute // the longest Retry-After we wait
	defaultAttemptTime   = 10 * time.Second
)

// Message is one push: short, no secrets, no tool input.
type Message struct {
	Title, Body, ClickURL string
}

// options tunes a Client; zero values mean the defaults. Only tests tune
// one: they shorten the backoff and the queue, and inject a transport.
type options struct {
	queue         int
	attempts      int
	minBackoff    time.Duration
	maxBackoff    time.Duration
	maxRetryAfter time.Duration
	attemptTime   time.Duration
	transport     http.RoundTripper
}

// Client posts pushes to one URL from one goroutine it owns; Close stops
// it. A nil *Client (or one with no URL) takes every Send and does
// nothing, so a server without serve.notify_url needs no special case.
type Client struct {
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
	queue  chan Message

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

// New starts a Client posting to rawURL (serve.notify_url). An empty rawURL
// gives a Client that does nothing; an unusable one logs why now and on
// each Send. log may be nil.
func New(rawURL string, log *slog.Logger) *Client {
	return newWith(rawURL, log, options{})
}

func newWith(rawURL string, log *slog.Logger, o options) *Client {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	o = o.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	c := &Client{
		url:    rawURL,
		log:    log,
		queue:  make(chan Message, o.queue),
		ctx:    ctx,
		cancel: cancel,
		done:   make(chan struct{}),
	}
	c.target, c.secrets, c.bad = describeURL(rawURL)
	if c.bad != "" {
		c.log.Warn("backend: serve.notify_url is unusable, so no push will be sent: "+c.bad+"; set it to the http(s) URL of an ntfy topic", "target", c.target)
	}
	c.client = c.newRetryingClient(o)
	go c.run()
	return c
}

func (o options) withDefaults() options {
	if o.queue <= 0 {
		o.queue = defaultQueue
	}
	if o.attempts <= 0 {
		o.attempts = defaultAttempts
	}
	if o.minBackoff <= 0 {
		o.minBackoff = defaultMinBackoff
	}
	if o.maxBackoff <= 0 {
		o.maxBackoff = defaultMaxBackoff
	}
	if o.maxRetryAfter <= 0 {
		o.maxRetryAfter = defaultMaxRetryAfter
	}
	if o.attemptTime <= 0 {
		o.attemptTime = defaultAttemptTime
	}
	if o.transport == nil {
		o.transport = cleanhttp.DefaultPooledTransport()
	}
	return o
}

// Send queues m for the worker and returns at once. It drops m, with a
// warning, when the queue is full or Close has been called.
func (c *Client) Send(ctx context.Context, m Message) {
	if c == nil || c.url == "" {
		return
	}
	if c.bad != "" {
		c.dropped.Add(1)
		c.log.WarnContext(ctx, "backend: push not sent: serve.notify_url is unusable: "+c.bad+"; set it to the http(s) URL of an ntfy topic", "target", c.target)
		return
	}
	m = m.clipped()
	c.mu.Lock()
	closed, queued := c.closed, false
	if !closed {
		select {
		case c.queue <- m:
			queued = true
		default:
		}
	}
	c.mu.Unlock()
	switch {
	case queued:
	case closed:
		c.dropped.Add(1)
		c.log.WarnContext(ctx, "backend: push not sent: the server is shutting down", "target", c.target, "title", m.Title)
	default:
		c.dropped.Add(1)
		c.log.WarnContext(ctx, "backend: push dropped: "+strconv.Itoa(cap(c.queue))+" pushes are already waiting for a slow or unreachable notify server; the approval is still on the dashboard",
			"target", c.target, "title", m.Title)
	}
}

// Close stops taking pushes and waits until the worker has posted what was
// queued, or until ctx ends; then it aborts what is left (the request in
// flight too) and waits for the worker to return. It returns an error
// wrapping ctx's when pushes were abandoned. Calling it again is harmless.
func (c *Client) Close(ctx context.Context) error {
	if c == nil {
		return nil
	}
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		close(c.queue)
		c.mu.Unlock()
	})
	select {
	case <-c.done:
	case <-ctx.Done():
	}
	c.cancel()
	<-c.done // prompt now: every wait in the worker ends with c.ctx
	c.client.HTTPClient.CloseIdleConnections()
	if a := c.abandoned.Load(); a > 0 && ctx.Err() != nil {
		return fmt.Errorf("backend: %d push(es) to %s not sent: the shutdown wait ended first: %w", a, c.target, ctx.Err())
	}
	return nil
}

// run is the worker: one push at a time, in order.
func (c *Client) run() {
	defer close(c.done)
	abandoned := 0
	for m := range c.queue {
		if c.ctx.Err() != nil {
			abandoned++
			continue
		}
		c.post(m)
	}
	if abandoned > 0 {
		c.abandoned.Add(int64(abandoned))
		c.log.Warn("backend: pushes not sent: the server stopped before they could be posted", "target", c.target, "count", abandoned)
	}
}

// post delivers one push with retries and logs the outcome.
func (c *Client) post(m Message) {
	req, err := retryablehttp.NewRequestWithContext(c.ctx, http.MethodPost, c.url, []byte(m.Body))
	if err != nil {
		c.failed.Add(1)
		c.log.Warn("backend: push not sent: cannot build the request; check serve.notify_url", "target", c.target, "err", c.redact(err))
		return
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	req.Header.Set("Title", headerText(m.Title))
	if m.ClickURL != "" {
		req.Header.Set("Click", headerURL(m.ClickURL))
	}
	req.Header.Set("Tags", "lock")
	req.Header.Set("X-Priority", "high")
	c.attempt.Store(0)
	resp, err := c.client.Do(req)
	attempts := c.attempt.Load()
	if err != nil {
		if c.ctx.Err() != nil {
			c.abandoned.Add(1)
			c.log.Warn("backend: push abandoned: the server stopped while posting it", "target", c.target, "title", m.Title, "attempts", attempts)
			return
		}
		c.failed.Add(1)
		c.log.Warn("backend: push failed; giving up: check that the notify server is reachable from here", "target", c.target,
			"title", m.Title, "attempts", attempts, "err", c.redact(err))
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	resp.Body.Close()
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		c.sent.Add(1)
		c.log.Debug("backend: push sent", "target", c.target, "title", m.Title, "attempts", attempts)
	case code >= 300 && code < 400:
		c.failed.Add(1)
		c.log.Warn("backend: push not sent: the notify server answered "+resp.Status+", a redirect: set serve.notify_url to the URL it redirects to (https instead of http?)",
			"target", c.target, "title", m.Title, "status", code)
	case retryableStatus(code):
		c.failed.Add(1)
		c.log.Warn("backend: push failed; giving up: the notify server kept answering "+resp.Status, "target", c.target,
			"title", m.Title, "attempts", attempts, "status", code)
	default:
		c.failed.Add(1)
		c.log.Warn("backend: push rejected with "+resp.Status+" and not retried: check serve.notify_url (topic, credentials, access token)",
			"target", c.target, "title", m.Title, "status", code)
	}
}
