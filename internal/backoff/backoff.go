// Package backoff is the wait between retries that every HTTP client of
// the relay uses (the forwarder's deliveries, the backend's pushes, the
// helper's decisions poll): what the server asked for with Retry-After,
// else full jitter over a capped exponential. Each caller decides how far
// to trust a Retry-After (its own cap).
package backoff

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Jitter is a full-jitter wait for the attempt-th retry (from 0): uniform
// from lo up to lo·2^attempt, capped at hi.
func Jitter(lo, hi time.Duration, attempt int) time.Duration {
	ceiling := hi
	if attempt < 30 {
		ceiling = min(lo<<attempt, hi)
	}
	return lo + rand.N(max(ceiling-lo, 1))
}

// RetryAfter is the wait a 429 or 503 answer's Retry-After asks for, in
// whole seconds or as an HTTP date (from now; a date past is 0). ok is
// false for a nil answer, another status, or a header that is neither.
func RetryAfter(resp *http.Response, now time.Time) (d time.Duration, ok bool) {
	if resp == nil || (resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable) {
		return 0, false
	}
	s := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if s == "" {
		return 0, false
	}
	if secs, err := strconv.Atoi(s); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(s); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// Delay is how long to wait before attempt: what resp's Retry-After says,
// up to maxRetryAfter, else Jitter(lo, hi, attempt).
func Delay(lo, hi, maxRetryAfter time.Duration, attempt int, resp *http.Response, now time.Time) time.Duration {
	if d, ok := RetryAfter(resp, now); ok {
		return min(d, maxRetryAfter)
	}
	return Jitter(lo, hi, attempt)
}
