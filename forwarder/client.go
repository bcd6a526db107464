package forwarder

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/hashicorp/go-retryablehttp"
)

// client is the forwarder's HTTP side: retrying for ever while running,
// by the rules of retry.go, and what it learnt of the backend's batch
// endpoint.
type client struct {
	http  *retryablehttp.Client
	batch atomic.Int32 // batchUnknown, batchYes or batchNo
}

func newClient(f *Forwarder) *client {
	c := &client{}
	rc := retryablehttp.NewClient()
	tr := f.opts.Transport
	if tr == nil {
		t := cleanhttp.DefaultPooledTransport()
		// One request in flight per session: keep a connection per busy
		// session instead of re-dialling past GOMAXPROCS+1 idle ones.
		t.MaxIdleConnsPerHost = 256
		tr = t
	}
	rc.HTTPClient = &http.Client{Timeout: f.opts.AttemptTimeout, Transport: tr,
		// A redirect is not the backend's answer: a POST followed as a GET
		// would get some page's 200. It is judged, and reported, as is.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	rc.RetryMax = 1<<31 - 1 // for ever, while running: we never drop an event
	rc.RetryWaitMin, rc.RetryWaitMax = f.opts.MinBackoff, f.opts.MaxBackoff
	rc.CheckRetry = func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		t, _ := ctx.Value(tryKey{}).(*try)
		retry, checkErr := checkRetry(ctx, resp, err)
		if retry && t != nil && f.giveUp(t, resp) {
			return false, nil // the caller takes it from here
		}
		if retry {
			f.noteTransient(t, resp, err)
		}
		return retry, checkErr
	}
	rc.Backoff = f.opts.Backoff
	rc.Logger = retryLogger{f.log}
	rc.RequestLogHook = func(_ retryablehttp.Logger, req *http.Request, attempt int) {
		// Read the token on every attempt: a reloaded token applies at once.
		if tok := f.opts.Token(); tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		if attempt > 0 {
			f.retried.Add(1)
		}
	}
	c.http = rc
	switch f.opts.Batch {
	case "always":
		c.batch.Store(batchYes)
	case "never":
		c.batch.Store(batchNo)
	}
	return c
}

// post sends one request with retries; it returns an error only when the
// forwarder is stopping.
func (f *Forwarder) post(t *try, u string, body []byte, eventID string) (response, error) {
	req, err := retryablehttp.NewRequestWithContext(context.WithValue(f.ctx, tryKey{}, t), http.MethodPost, u, body)
	if err != nil {
		return response{}, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if eventID != "" {
		req.Header.Set("Idempotency-Key", eventID)
	}
	f.inFlight.Add(1)
	resp, err := f.client.http.Do(req)
	f.inFlight.Add(-1)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return response{status: resp.StatusCode, body: b, ctype: resp.Header.Get("Content-Type"),
		location: resp.Header.Get("Location")}, nil
}
