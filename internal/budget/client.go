package budget

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-cleanhttp"

	"github.com/claude-relay/claude-relay/internal/fsutil"
)

// Offline is what a helper does when it cannot ask the backend
// (budgets.offline).
type Offline string

// The offline policies.
const (
	OfflineAllow Offline = "allow" // run, with a warning and relay.budget_unchecked
	OfflineDeny  Offline = "deny"  // refuse, as an exhausted budget does
)

// TypeUnchecked is the event a run gets when it started (or a turn was
// sent) without its budgets checked: the backend could not be asked and
// budgets.offline is allow (docs/events.md).
const TypeUnchecked = "relay.budget_unchecked"

// Unchecked is relay.budget_unchecked's event_data.
type Unchecked struct {
	V     int    `json:"v"` // 1
	RunID string `json:"run_id"`
	Cwd   string `json:"cwd"`
	Error string `json:"error"`
}

// ErrUnchecked is what a refusal under budgets.offline: deny wraps.
var ErrUnchecked = errors.New("cannot check the budgets")

// ClientOptions configure a Client; zero values mean the defaults.
type ClientOptions struct {
	URL string // the backend's base URL; empty: no checks (every run allowed)
	// Token is the backend token, read for every request.
	Token   func() string
	Offline Offline       // OfflineAllow when empty
	Timeout time.Duration // of one check (5s): a run waits this long at most
	// CacheFile keeps the last answer (which projects have budgets), so
	// that a backend out of reach says nothing about a project no budget
	// covered when it was last asked; "" keeps none.
	CacheFile string
	Transport http.RoundTripper
	Logger    *slog.Logger
}

// Client asks the backend for the budgets before a run or a turn.
type Client struct {
	o      ClientOptions
	client *http.Client

	mu   sync.Mutex
	kept []byte // what CacheFile holds, as last written: unchanged answers are not written again
}

// NewClient returns a Client.
func NewClient(o ClientOptions) *Client {
	if o.Token == nil {
		o.Token = func() string { return "" }
	}
	if o.Offline == "" {
		o.Offline = OfflineAllow
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	tr := o.Transport
	if tr == nil {
		tr = cleanhttp.DefaultPooledTransport()
	}
	return &Client{o: o, client: &http.Client{Transport: tr, Timeout: o.Timeout}}
}

// Grant is what a check allows.
type Grant struct {
	// Limited: a budget covers the project; RemainingUSD is the least
	// that any of them has left, which the run passes as --max-budget-usd.
	Limited      bool
	RemainingUSD float64
	Budget       Status // the budget with the least left, when Limited
	// Unchecked is why the budgets could not be checked when
	// budgets.offline let the run go anyway; nil when they were.
	Unchecked error
}

// Check asks the backend for the budgets that cover cwd. An exhausted one
// is an *ExhaustedError; a backend that cannot be asked is an error
// wrapping ErrUnchecked under OfflineDeny, and a Grant with Unchecked set
// under OfflineAllow. A backend without the budgets API (404) has none.
func (c *Client) Check(ctx context.Context, cwd string) (Grant, error) {
	if c == nil || c.o.URL == "" {
		return Grant{}, nil
	}
	resp, err := c.fetch(ctx)
	if err != nil {
		if last, ok := c.cached(); ok && !coversAny(last, cwd) {
			return Grant{}, nil // no budget covered it when last asked: nothing to hold
		}
		if c.o.Offline == OfflineDeny {
			return Grant{}, fmt.Errorf("%w: %w; refusing the run because budgets.offline is deny (set it to allow to run unchecked)", ErrUnchecked, err)
		}
		return Grant{Unchecked: err}, nil // the run core says so, once
	}
	var budgets []Status
	if resp != nil {
		budgets = resp.Budgets
	}
	c.remember(budgets)
	return Decide(budgets, cwd)
}

// cache is CacheFile's content: the budgets as this backend last listed
// them.
type cache struct {
	URL     string   `json:"url"`
	Budgets []Status `json:"budgets"`
}

// remember keeps the answer for offline checks; failing to is only logged.
func (c *Client) remember(budgets []Status) {
	if c.o.CacheFile == "" {
		return
	}
	// Only which projects have budgets matters offline; the figures
	// change with every run and need no write.
	keep := make([]Status, len(budgets))
	for i, b := range budgets {
		keep[i] = Status{Project: b.Project, Period: b.Period, CapUSD: b.CapUSD}
	}
	b, err := json.Marshal(cache{URL: c.o.URL, Budgets: keep})
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil && !bytes.Equal(b, c.kept) {
		if err = fsutil.WriteFileAtomic(c.o.CacheFile, b); err == nil {
			c.kept = b
		}
	}
	if err != nil {
		c.o.Logger.Debug("budgets: cannot keep the last answer", "err", err)
	}
}

// cached is the last answer of this backend, if one is kept.
func (c *Client) cached() ([]Status, bool) {
	if c.o.CacheFile == "" {
		return nil, false
	}
	b, err := os.ReadFile(c.o.CacheFile)
	if err != nil {
		return nil, false
	}
	var last cache
	if json.Unmarshal(b, &last) != nil || last.URL != c.o.URL {
		return nil, false
	}
	return last.Budgets, true
}

func coversAny(budgets []Status, cwd string) bool {
	for _, b := range budgets {
		if Covers(b.Project, cwd) {
			return true
		}
	}
	return false
}

// Decide is the check of cwd against budgets: the first exhausted budget
// that covers it refuses; otherwise the least remaining limits the run.
func Decide(budgets []Status, cwd string) (Grant, error) {
	var g Grant
	for _, b := range budgets {
		if !Covers(b.Project, cwd) {
			continue
		}
		if b.State == Exhausted || b.RemainingUSD <= 0 {
			return Grant{}, &ExhaustedError{Status: b}
		}
		if !g.Limited || b.RemainingUSD < g.RemainingUSD {
			g.Limited, g.RemainingUSD, g.Budget = true, b.RemainingUSD, b
		}
	}
	return g, nil
}

// maxBody bounds the answer read: a list of configured budgets is small.
const maxBody = 1 << 20

// fetch is GET /api/budgets; nil, nil when the backend has no such route.
func (c *Client) fetch(ctx context.Context) (*Response, error) {
	url := strings.TrimRight(c.o.URL, "/") + "/api/budgets"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("budgets: %w", err)
	}
	if t := c.o.Token(); t != "" {
		req.Header.Set("Authorization", "Bearer "+t)
	}
	res, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxBody))
	switch {
	case err != nil:
		return nil, fmt.Errorf("GET %s: %w", url, err)
	case res.StatusCode == http.StatusNotFound || res.StatusCode == http.StatusMethodNotAllowed:
		return nil, nil // an older backend: no budgets to hold
	case res.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("GET %s: %s: %s", url, res.Status, strings.TrimSpace(string(body)))
	}
	var out Response
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("GET %s: not a budgets answer: %w", url, err)
	}
	return &out, nil
}
