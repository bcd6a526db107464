package push

import (
	"context"
	"net/http"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/claude-relay/claude-relay/internal/backoff"
)

func (c *Client) newRetryingClient(o options) *retryablehttp.Client {
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
	rc.CheckRetry = checkRetry
	rc.Backoff = func(lo, hi time.Duration, attempt int, resp *http.Response) time.Duration {
		return retryDelay(lo, hi, o.maxRetryAfter, attempt, resp, time.Now())
	}
	// retryablehttp's own logs print the URL with its path and query; ours
	// say what happened without it.
	rc.Logger = nil
	// Hand back the last response or error as it is: the default handler
	// wraps it in a message that quotes the URL.
	rc.ErrorHandler = retryablehttp.PassthroughErrorHandler
	rc.RequestLogHook = func(_ retryablehttp.Logger, _ *http.Request, attempt int) {
		c.attempt.Store(int64(attempt) + 1)
	}
	return rc
}

// checkRetry retries network errors (but not those retrying cannot fix:
// a bad scheme, an untrusted certificate, too many redirects), 408, 429
// and 5xx except 501; never once ctx has ended.
func checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
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

// retryDelay waits what a 429 or 503's Retry-After says (seconds or an
// HTTP date, up to maxRetryAfter), else a full-jitter delay between lo and
// lo·2^attempt capped at hi.
func retryDelay(lo, hi, maxRetryAfter time.Duration, attempt int, resp *http.Response, now time.Time) time.Duration {
	return backoff.Delay(lo, hi, maxRetryAfter, attempt, resp, now)
}
