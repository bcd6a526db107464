package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/claude-relay/claude-relay/internal/fsutil"
)

// CacheFile is the last known policy's file name in the data dir.
const CacheFile = "policy.json"

// ErrNoBackendPolicy is a backend without GET /api/policy (an older serve):
// no central policy, not an outage.
var ErrNoBackendPolicy = errors.New("the backend has no /api/policy")

// ClientOptions configure a Client; zero values mean the defaults.
type ClientOptions struct {
	URL   string        // the backend
	Token func() string // the helper's token, read for each fetch
	// TTL is how long a fetched policy is used before it is fetched again
	// (1m). A failed fetch keeps the last known policy.
	TTL time.Duration
	// Timeout bounds one fetch (5s): the hook that asks waits for it.
	Timeout time.Duration
	// CachePath is the file the last fetched policy is kept in for starts
	// with the backend down; "" keeps none.
	CachePath string
	HTTP      *http.Client
	Logger    *slog.Logger
	now       func() time.Time
}

// Client is the helper's view of the backend's policy.
type Client struct {
	o ClientOptions

	mu      sync.Mutex
	cur     *Policy
	fetched time.Time // when cur came from the backend; zero: from the disk cache, or none
	failing bool      // the last fetch failed: logged once per streak
}

// NewClient returns a Client; nothing is fetched until Current.
func NewClient(o ClientOptions) *Client {
	if o.TTL <= 0 {
		o.TTL = time.Minute
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.HTTP == nil {
		o.HTTP = http.DefaultClient
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.now == nil {
		o.now = time.Now
	}
	return &Client{o: o}
}

// Source says where a policy came from.
type Source string

// Sources.
const (
	FromBackend Source = "backend" // fetched within the TTL
	FromCache   Source = "cache"   // the backend could not be reached: the last known policy
	FromNone    Source = "none"    // never fetched and no cache: no central policy
)

// Current is the policy to enforce now: fetched when the one held is older
// than the TTL, else the one held; when the backend cannot be reached, the
// last known one (in memory, else on disk). The lock is held across the
// fetch so that concurrent hooks wait for one fetch rather than each start
// their own.
func (c *Client) Current(ctx context.Context) (*Policy, Source) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur != nil && !c.fetched.IsZero() && c.o.now().Sub(c.fetched) < c.o.TTL {
		return c.cur, FromBackend
	}
	p, err := c.fetch(ctx)
	if err == nil {
		if c.failing {
			c.o.Logger.Info("policy: the backend answers again", "rules", len(p.rules))
		}
		c.cur, c.fetched, c.failing = p, c.o.now(), false
		c.save(p)
		return p, FromBackend
	}
	if !c.failing && ctx.Err() == nil { // a caller that gave up (a helper closing) is no outage
		c.o.Logger.Warn("policy: cannot fetch the backend's policy; enforcing the last known one", "err", err)
		c.failing = true
	}
	if c.cur == nil {
		c.cur = c.load()
	}
	if c.cur == nil {
		return nil, FromNone
	}
	return c.cur, FromCache
}

func (c *Client) fetch(ctx context.Context) (*Policy, error) {
	if c.o.URL == "" {
		return nil, errors.New("no backend")
	}
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.o.URL+"/api/policy", nil)
	if err != nil {
		return nil, err
	}
	if c.o.Token != nil {
		if t := c.o.Token(); t != "" {
			req.Header.Set("Authorization", "Bearer "+t)
		}
	}
	resp, err := c.o.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		// An older backend: it has no policy to enforce.
		return &Policy{}, nil
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("GET /api/policy: %s", resp.Status)
	}
	return decode(body)
}

func decode(b []byte) (*Policy, error) {
	var doc Document
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	return Compile(doc.Rules)
}

// cacheDoc is the disk cache: the policy and the backend it came from, so
// that a cache of another backend is not taken for this one's.
type cacheDoc struct {
	Backend   string    `json:"backend"`
	FetchedAt time.Time `json:"fetched_at"`
	Rules     []Rule    `json:"rules"`
}

// save writes the policy for offline starts (0600, atomically).
func (c *Client) save(p *Policy) {
	if c.o.CachePath == "" {
		return
	}
	b, err := json.MarshalIndent(cacheDoc{Backend: c.o.URL, FetchedAt: c.o.now().UTC(), Rules: orEmpty(p.Rules())}, "", "  ")
	if err == nil {
		err = writeAtomic(c.o.CachePath, b)
	}
	if err != nil {
		c.o.Logger.Warn("policy: cannot keep the policy for offline starts", "path", c.o.CachePath, "err", err)
	}
}

func (c *Client) load() *Policy {
	if c.o.CachePath == "" {
		return nil
	}
	b, err := os.ReadFile(c.o.CachePath)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var doc cacheDoc
	if err == nil {
		err = json.Unmarshal(b, &doc)
	}
	var p *Policy
	if err == nil && doc.Backend != c.o.URL {
		err = fmt.Errorf("it is the policy of %s, not of %s", doc.Backend, c.o.URL)
	}
	if err == nil {
		p, err = Compile(doc.Rules)
	}
	if err != nil {
		c.o.Logger.Warn("policy: ignoring the cached policy", "path", c.o.CachePath, "err", err)
		return nil
	}
	c.o.Logger.Info("policy: the backend is unreachable; enforcing the cached policy", "fetched_at", doc.FetchedAt, "rules", len(p.rules))
	return p
}

func writeAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(path, b)
}
