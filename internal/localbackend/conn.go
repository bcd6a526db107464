package localbackend

import (
	"context"
	"log/slog"
	"net"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/budget"
	"github.com/claude-relay/claude-relay/internal/policy"
	"github.com/claude-relay/claude-relay/internal/tokens"
)

// Options configure the reference backend of a data dir, embedded or served.
type Options struct {
	DB string // serve.db: sqlite:PATH or a postgres:// URL
	// Token is the data dir's token (Token) or the configured one: always
	// accepted, with the scopes ingest and read only (CONTRACT §10: the
	// token the helper posts with cannot approve).
	Token     config.Secret
	TokenFile string // where Token lives, named on the login page; "" for a configured token
	// HelperToken is the data dir's helper token (HelperToken), accepted
	// with tokens.Helper's scopes; "" none.
	HelperToken config.Secret
	Tokens      func() []config.ServeToken // the serve tokens configured now, asked on every request; nil: none
	// Issued is the data dir's file of tokens made by `claude-relay token
	// create` (tokens.Path); nil: none.
	Issued    *tokens.File
	NotifyURL string // serve.notify_url; "" none
	// AllowUncheckedLocal is serve.allow_unchecked_local_decisions.
	AllowUncheckedLocal bool
	PublicURL           string       // serve.public_url, else where serve listens; "" none
	Logger              *slog.Logger // nil: discard
	// MaxEventBytes, MaxBatchBytes and MaxStreamsPerToken are
	// serve.max_event_bytes, serve.max_batch_bytes and
	// serve.max_streams_per_token (0: the backend's defaults). An event
	// over the limit is not lost: the forwarder keeps it whole in its
	// dead-letter file and posts a stand-in in its place.
	MaxEventBytes, MaxBatchBytes int64
	MaxStreamsPerToken           int
	// DataDir keeps the dashboard login's key and logouts (shared by the
	// data dir's backends, kept across restarts); "" keeps them in memory.
	// The backend warns when it, or the SQLite database's directory, is
	// open to other users.
	DataDir string
	// Budgets are serve.budgets (issue 26): the caps GET /api/budgets
	// reports and helpers hold runs to.
	Budgets []budget.Rule
	// Policy is serve.policy (GET /api/policy); nil: none.
	Policy []policy.Rule
	// AllowedHosts is serve.allowed_hosts; NotifyIncludeInput is
	// serve.notify_include_input.
	AllowedHosts       []string
	NotifyIncludeInput bool
}

// Conn is the backend a command talks to: a configured one, the data dir's
// running serve, or the embedded default this process started (in itself,
// or as a child process: StartChild).
type Conn struct {
	URL       string
	Dashboard string        // where people look; "" for a configured backend
	Token     config.Secret // set for the data dir's own backends, which accept the data dir's token
	Embedded  bool
	stop      func() // sync.OnceFunc: a func value, so a Conn stays copyable
	reload    func() // hands a child the serve tokens and log level of the moment; nil in process
}

// NewConn is an embedded default at url that stop stops (it must be
// idempotent), for the packages that start one.
func NewConn(url string, token config.Secret, stop func()) *Conn {
	return &Conn{URL: url, Dashboard: url, Token: token, Embedded: true, stop: stop}
}

// Close stops an embedded backend, if one was started, and waits for it. It
// is idempotent.
func (c *Conn) Close() {
	if c.stop != nil {
		c.stop()
	}
}

// Reload tells an embedded default running as a child process that the
// configuration was reloaded (it takes the serve tokens and the log level
// again). Nothing to do for the others: a backend in this process asks
// Options.Tokens on every request.
func (c *Conn) Reload() {
	if c.reload != nil {
		c.reload()
	}
}

// Backend is an opened serve.db that serves the reference backend on a
// listener: what `serve` runs. Package server implements it; it is named
// here, where claude-relay can name it without linking that package.
type Backend interface {
	// Serve serves the backend o configures on ln until ctx ends, then
	// shuts it down gracefully.
	Serve(ctx context.Context, ln net.Listener, o Options) error
	Close() error
}
