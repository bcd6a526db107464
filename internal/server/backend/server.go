package backend

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/budget"
	"github.com/claude-relay/claude-relay/internal/policy"
	"github.com/claude-relay/claude-relay/internal/server/dashboard"
	"github.com/claude-relay/claude-relay/internal/server/peer"
	"github.com/claude-relay/claude-relay/internal/server/push"
	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/tokens"
)

// defaultHeartbeat is how often an idle SSE stream gets a ": ping" comment,
// so proxies keep the connection and clients notice a dead one.
const defaultHeartbeat = 15 * time.Second

// Options configures a Server. Zero values mean the default.
type Options struct {
	Store store.Store // required
	// Tokens returns the accepted tokens. It is called on every request so a
	// reloaded configuration takes effect at once. Nil or empty: every route
	// but /healthz answers 401.
	Tokens func() []config.Secret
	// ServeTokens returns named tokens with scopes (serve.tokens entries;
	// package tokens has the scopes). Tokens' tokens carry ingest and read.
	// Asked on every request, like Tokens; the first entry that matches a
	// token wins, ServeTokens before Tokens. Nil: none.
	ServeTokens func() []config.ServeToken
	// Issued is the token file of `claude-relay token create`, read (stat)
	// on every request so a create or revoke counts at once. Nil: none.
	Issued *tokens.File
	// TokenFile is the path of the generated default token when that token
	// is among Tokens. The login page names it so a user knows where to find
	// a token; the page never shows the token itself. Empty: no hint.
	TokenFile string
	// Peer finds the local process at the other end of a connection, for
	// refusing decisions that an agent's own tool command sends (self
	// approval). Nil: peer.Lookup. Tests inject a fake.
	Peer PeerLookup
	// AllowUncheckedLocal lets a decision from this machine through when
	// its process cannot be checked at all (another user's, a reverse
	// proxy's, or no /proc): serve.allow_unchecked_local_decisions. False:
	// refused (selfapproval.go).
	AllowUncheckedLocal bool
	// NotifyURL receives a push for each new pending approval (ntfy-style);
	// empty: no pushes.
	NotifyURL string
	// PublicURL is the dashboard as people reach it, for the links in
	// pushes and the same-origin check of dashboard decisions; empty: only
	// each request's Host is the dashboard's origin, and pushes carry no
	// link.
	PublicURL string
	// AllowedHosts are the names (serve.allowed_hosts) a request's Host
	// header may carry besides loopback names, IP literals and PublicURL's
	// host; "*.example.com" takes its subdomains (hosts.go).
	AllowedHosts []string
	// NotifyIncludeInput puts the approval's short title (the command,
	// redacted) in pushes: serve.notify_include_input. False: the tool and
	// the project only.
	NotifyIncludeInput bool
	// Budgets are the spend caps (serve.budgets) GET /api/budgets reports
	// and pushes warn about (budgets.go).
	Budgets []budget.Rule
	// StateDir keeps the dashboard login's key and its logouts (the data
	// dir), so logins and logouts outlive a restart and hold for every
	// backend of the data dir; empty: in memory, for this Server only.
	StateDir string
	// now replaces time.Now for login cookies and throttling (tests).
	now func() time.Time
	// pusher replaces the push.Client of NotifyURL (tests).
	pusher pusher
	// recheck replaces defaultRecheck (tests).
	recheck time.Duration
	// MaxEventBytes is the largest event in bytes, posted alone or in a
	// batch, and the largest body of any other request (0: DefaultMaxEvent);
	// MaxBatchBytes the largest batch body (0:
	// DefaultMaxBatch; at least MaxEventBytes). Bodies in flight are capped
	// at 4 × MaxBatchBytes (limits.go).
	MaxEventBytes, MaxBatchBytes int64
	// MaxStreamsPerToken is how many live streams (SSE) one credential may
	// hold open at once (0: DefaultMaxStreams).
	MaxStreamsPerToken int
	// Tests shorten these (limits.go has the defaults).
	budgetWait, bodyFloor time.Duration
	bodyRate, maxInFlight int64
	Logger                *slog.Logger // nil: discard
	// Policy is serve.policy, served at GET /api/policy (policy.go); nil:
	// no rules. New panics on rules policy.Compile refuses: config checked
	// them.
	Policy []policy.Rule
	// Registry receives the server's metrics. Nil: a new registry with the Go
	// and process collectors. /metrics serves Registry when it is also a
	// prometheus.Gatherer (a *prometheus.Registry is), else only our metrics.
	Registry prometheus.Registerer
}

// Server is the reference backend's HTTP API and dashboard. Create it with
// New, serve Handler, and call Shutdown when done.
type Server struct {
	store       store.Store
	tokens      func() []config.Secret
	serveTokens func() []config.ServeToken
	issued      *tokens.File
	derived     derivedCache
	tokenFile   string
	peer        PeerLookup
	hostAddrs   hostAddrs
	// allowUnchecked is Options.AllowUncheckedLocal.
	allowUnchecked bool
	publicURL      string
	hosts          hostAllowlist // hosts.go
	login          *loginState   // login.go: cookie key, logouts, throttling
	pushInput      bool          // Options.NotifyIncludeInput
	push           pusher        // nil without NotifyURL
	pushes         chan string   // approval IDs for pushLoop; nil without NotifyURL
	budgets        budgets       // budgets.go
	maxEvent       int64         // Options.MaxEventBytes resolved
	maxBatch       int64         // Options.MaxBatchBytes resolved
	lim            limits
	log            *slog.Logger
	metrics        *metrics
	gatherer       prometheus.Gatherer
	hub            *hub
	markdown       *markdownRenderer // markdown_render.go; Shutdown waits for its renders
	policy         *policy.Policy    // policy.go
	handler        http.Handler

	// heartbeat is defaultHeartbeat; tests shorten it.
	heartbeat time.Duration
	// sseFlushInterval throttles the session-list feed per client.
	sseFlushInterval time.Duration

	// ctx ends every SSE stream and the store subscription when Shutdown
	// starts; the hub waits for both.
	ctx      context.Context
	cancel   context.CancelFunc
	shutOnce sync.Once

	// bg is the server's own goroutines (pushLoop); Shutdown waits.
	bg sync.WaitGroup

	lastNoTokenLog   atomic.Int64 // unix nanos; throttles the "no tokens" warning
	lastTokenFileLog atomic.Int64 // same, for an unreadable token file
	lastPushDropLog  atomic.Int64 // same, for pushes dropped when the queue is full

	// recheck is how often a decisions long-poll asks the store again
	// whatever the notifications say (a safety net); tests shorten it.
	recheck time.Duration
}

// New returns a Server. It panics when opts.Store is nil: that is a wiring
// bug, not a runtime condition.
func New(opts Options) *Server {
	if opts.Store == nil {
		panic("backend.New: Options.Store is nil")
	}
	s := &Server{
		store:            opts.Store,
		tokens:           opts.Tokens,
		serveTokens:      opts.ServeTokens,
		issued:           opts.Issued,
		tokenFile:        opts.TokenFile,
		peer:             opts.Peer,
		allowUnchecked:   opts.AllowUncheckedLocal,
		publicURL:        strings.TrimRight(opts.PublicURL, "/"),
		pushInput:        opts.NotifyIncludeInput,
		recheck:          defaultRecheck,
		budgets:          budgets{rules: opts.Budgets},
		log:              opts.Logger,
		heartbeat:        defaultHeartbeat,
		sseFlushInterval: 200 * time.Millisecond,
	}
	s.maxEvent, s.maxBatch, s.lim = newLimits(opts)
	if len(opts.Policy) > 0 {
		p, err := policy.Compile(opts.Policy)
		if err != nil {
			panic("backend.New: " + err.Error())
		}
		s.policy = p
	}
	if s.tokens == nil {
		s.tokens = func() []config.Secret { return nil }
	}
	if s.serveTokens == nil {
		s.serveTokens = func() []config.ServeToken { return nil }
	}
	if s.peer == nil {
		s.peer = peer.Lookup
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.hosts = newHostAllowlist(opts.AllowedHosts, s.publicURL)
	s.login = newLoginState(opts, s.publicURL, s.log)
	s.metrics, s.gatherer = newMetrics(opts.Registry)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.hub = newHub(s.ctx, s.store, s.log)
	s.markdown = newMarkdownRenderer()
	if opts.recheck > 0 {
		s.recheck = opts.recheck
	}
	if len(s.credentials()) == 0 {
		s.log.Warn("backend: no serve tokens configured; every request but /healthz will get 401 (set serve.tokens or CLAUDE_RELAY_SERVE_TOKENS)")
	}
	s.handler = s.routes()
	// Last: the push loop reads the server.
	switch {
	case opts.pusher != nil:
		s.startPushes(opts.pusher)
	case opts.NotifyURL != "":
		s.startPushes(push.New(opts.NotifyURL, s.log))
	}
	s.startBudgetPushes()
	return s
}

// Handler returns the HTTP handler for every route.
func (s *Server) Handler() http.Handler { return s.handler }

// Shutdown ends every SSE stream (clients see the stream close and
// reconnect elsewhere or later) and stops the store subscription, waiting
// for them until ctx ends. Other in-flight requests are the http.Server's
// to drain; Serve does both. Shutdown is idempotent.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutOnce.Do(s.cancel)
	done := make(chan struct{})
	// Outlives an expired ctx only until the last stream returns, which its
	// write deadline bounds, and the push loop's store call returns.
	go func() {
		s.hub.wait()
		s.bg.Wait()
		s.markdown.close() // renders running, each bounded by the render budget
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if s.push != nil {
		// Pushes already queued get until ctx ends to go out.
		return s.push.Close(ctx)
	}
	return nil
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.handleHealthz)
	mux.HandleFunc("GET /login", s.handleLoginForm)
	mux.HandleFunc("POST /login", s.handleLogin)
	mux.HandleFunc("POST /logout", s.handleLogout)
	mux.Handle("GET /metrics", s.metricsHandler())

	mux.HandleFunc("POST /api/sessions/{id}/events", s.handleEvent)
	mux.HandleFunc("POST /api/sessions/{id}/events/batch", s.handleBatch)
	mux.HandleFunc("GET /api/sessions", s.handleSessions)
	mux.HandleFunc("GET /api/sessions/{id}", s.handleSession)
	mux.HandleFunc("GET /api/sessions/{id}/events", s.handleEvents)
	mux.HandleFunc("GET /api/sessions/{id}/stream", s.handleSessionStream)
	mux.HandleFunc("GET /api/stream", s.handleSessionsStream)
	mux.HandleFunc("GET /api/sessions/{id}/markdown", s.handleMarkdown)
	mux.HandleFunc("GET /api/usage", s.handleUsage)
	mux.HandleFunc("GET /api/budgets", s.handleBudgets) // budgets.go (issue 26)
	mux.HandleFunc("GET /api/audit", s.handleAudit)     // audit.go (issue 26)

	// Remote approvals (CONTRACT §10).
	mux.HandleFunc("GET /api/whoami", s.handleWhoami)
	mux.HandleFunc("GET /api/approvals", s.handleApprovals)
	mux.HandleFunc("GET /api/approvals/decisions", s.handleDecisionsWait)
	mux.HandleFunc("GET /api/approvals/{id}", s.handleApproval)
	mux.HandleFunc("POST /api/approvals/{id}/decision", s.handleDecision)

	// Central policy (issue 26).
	mux.HandleFunc("GET "+policyPath, s.handlePolicy)

	// An unknown API path is a JSON 404; every other unknown page the
	// dashboard's not-found page.
	mux.HandleFunc("GET /api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no API route "+r.URL.Path+" (the API: GET /api/sessions, /api/sessions/{id}, /api/approvals, /api/usage)")
	})
	dashboard.Register(mux, dashboard.Pages{SessionExists: s.sessionExists})
	return s.logRequests(s.checkHost(s.limitBodies(s.authenticate(mux))))
}

func (s *Server) handleHealthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte("ok\n"))
}
