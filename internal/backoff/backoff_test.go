package backoff

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	resp := func(code int, retryAfter string) *http.Response {
		r := &http.Response{StatusCode: code, Header: http.Header{}}
		if retryAfter != "" {
			r.Header.Set("Retry-After", retryAfter)
		}
		return r
	}
	for _, tc := range []struct {
		name   string
		resp   *http.Response
		want   time.Duration
		wantOK bool
	}{
		{"429 seconds", resp(429, "7"), 7 * time.Second, true},
		{"503 seconds", resp(503, "2"), 2 * time.Second, true},
		{"zero seconds", resp(429, "0"), 0, true},
		{"date", resp(429, now.Add(20*time.Second).Format(http.TimeFormat)), 20 * time.Second, true},
		{"past date", resp(503, now.Add(-time.Hour).Format(http.TimeFormat)), 0, true},
		{"negative seconds", resp(429, "-3"), 0, false},
		{"neither", resp(429, "soon"), 0, false},
		{"no header", resp(429, ""), 0, false},
		{"another status", resp(500, "9"), 0, false},
		{"no answer", nil, 0, false},
	} {
		if got, ok := RetryAfter(tc.resp, now); got != tc.want || ok != tc.wantOK {
			t.Errorf("%s: RetryAfter = %s, %v; want %s, %v", tc.name, got, ok, tc.want, tc.wantOK)
		}
	}
}

func TestJitterBounds(t *testing.T) {
	lo, hi := time.Second, 30*time.Second
	for _, tc := range []struct {
		attempt int
		ceiling time.Duration
	}{
		{0, lo}, {1, 2 * time.Second}, {2, 4 * time.Second}, {4, 16 * time.Second},
		{5, hi}, {29, hi}, {30, hi}, {64, hi}, // no overflow past 2^30
	} {
		for range 50 {
			if got := Jitter(lo, hi, tc.attempt); got < lo || got > tc.ceiling {
				t.Fatalf("attempt %d: Jitter = %s outside [%s, %s]", tc.attempt, got, lo, tc.ceiling)
			}
		}
	}
}
