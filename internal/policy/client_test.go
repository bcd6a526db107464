package policy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

func TestClientFetchCacheOffline(t *testing.T) {
	var hits atomic.Int32
	var up atomic.Bool
	up.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		if r.URL.Path != "/api/policy" || r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		hits.Add(1)
		w.Write([]byte(`{"rules":[{"rule":"Bash(rm *)","effect":"deny","reason":"no"}]}`)) //nolint:errcheck
	}))
	defer srv.Close()
	now := time.Unix(1000, 0)
	cache := filepath.Join(t.TempDir(), CacheFile)
	opts := ClientOptions{URL: srv.URL, Token: func() string { return "tok" }, TTL: time.Minute, CachePath: cache,
		now: func() time.Time { return now }}
	c := NewClient(opts)
	ctx := context.Background()
	if p, src := c.Current(ctx); src != FromBackend || len(p.Rules()) != 1 {
		t.Fatalf("first: %v %v", p.Rules(), src)
	}
	c.Current(ctx)
	if hits.Load() != 1 {
		t.Fatalf("fetched %d times within the TTL, want 1", hits.Load())
	}
	up.Store(false)
	now = now.Add(2 * time.Minute)
	if p, src := c.Current(ctx); src != FromCache || len(p.Rules()) != 1 {
		t.Fatalf("backend down: %v %v, want the last known policy", p.Rules(), src)
	}
	// A new helper with the backend down starts on the disk cache.
	if p, src := NewClient(opts).Current(ctx); src != FromCache || len(p.Rules()) != 1 {
		t.Fatalf("offline start: %v %v, want the cached policy", p.Rules(), src)
	}
	// Another backend's cache is not this one's policy.
	other := opts
	other.URL = "http://127.0.0.1:1"
	if p, src := NewClient(other).Current(ctx); src != FromNone || p != nil {
		t.Fatalf("another backend's cache: %v %v, want none", p, src)
	}
}
