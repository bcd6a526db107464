package localbackend

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/backend"
	"github.com/claude-relay/claude-relay/internal/store"
	"github.com/claude-relay/claude-relay/internal/store/postgres"
	"github.com/claude-relay/claude-relay/internal/store/sqlite"
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
	// NewServer warns when it, or the SQLite database's directory, is open
	// to other users.
	DataDir string
	// AllowedHosts is serve.allowed_hosts; NotifyIncludeInput is
	// serve.notify_include_input.
	AllowedHosts       []string
	NotifyIncludeInput bool
}

// Conn is the backend a command talks to: a configured one, the data dir's
// running serve, or the embedded default this process started.
type Conn struct {
	URL       string
	Dashboard string        // where people look; "" for a configured backend
	Token     config.Secret // set for the data dir's own backends, which accept the data dir's token
	Embedded  bool
	stop      func() // sync.OnceFunc: a func value, so a Conn stays copyable
}

// Close stops an embedded backend, if one was started, and waits for it. It
// is idempotent.
func (c *Conn) Close() {
	if c.stop != nil {
		c.stop()
	}
}

// OpenStore opens serve.db: sqlite:PATH or a postgres:// URL.
func OpenStore(ctx context.Context, db string) (store.Store, error) {
	switch {
	case strings.HasPrefix(db, "sqlite:"):
		return sqlite.Open(ctx, strings.TrimPrefix(db, "sqlite:"))
	case strings.HasPrefix(db, "postgres://"), strings.HasPrefix(db, "postgresql://"):
		return postgres.Open(ctx, db)
	}
	return nil, fmt.Errorf("serve.db %q: allowed: sqlite:PATH or a postgres:// URL", db)
}

// NewServer is the reference backend on st as o configures it, for `serve`
// and the embedded default alike.
func NewServer(st store.Store, o Options) *backend.Server {
	warnLooseDirs(o)
	return backend.New(backend.Options{Store: st, Logger: o.Logger, TokenFile: o.TokenFile,
		StateDir: o.DataDir, AllowedHosts: o.AllowedHosts, NotifyIncludeInput: o.NotifyIncludeInput,
		MaxEventBytes: o.MaxEventBytes, MaxBatchBytes: o.MaxBatchBytes, MaxStreamsPerToken: o.MaxStreamsPerToken,
		ServeTokens: func() []config.ServeToken { return acceptedTokens(o) },
		Issued:      o.Issued, NotifyURL: o.NotifyURL, PublicURL: o.PublicURL, AllowUncheckedLocal: o.AllowUncheckedLocal})
}

// defaultTokenName names the data dir's token in the record of who did
// what.
const defaultTokenName = "default"

// helperTokenName names the data dir's helper token likewise.
const helperTokenName = "helper"

// acceptedTokens are o's serve tokens of the moment and o.Token, which
// carries the default scopes (ingest, read).
func acceptedTokens(o Options) []config.ServeToken {
	var live []config.ServeToken
	if o.Tokens != nil {
		live = o.Tokens()
	}
	name := defaultTokenName
	if slices.ContainsFunc(live, func(t config.ServeToken) bool { return t.Name == name }) {
		name = "" // a configured token took the name; the backend numbers this one
	}
	// Clipped: appending in place would write into the caller's array,
	// which other requests read at the same time.
	out := append(slices.Clip(live), config.ServeToken{Name: name, Token: o.Token})
	if o.HelperToken != "" {
		out = append(out, config.ServeToken{Name: helperTokenName, Token: o.HelperToken, Scopes: tokens.Helper})
	}
	return out
}

// StartEmbedded runs the reference backend in this process on a loopback
// port, on o.DB, until the Conn is closed. It takes no part in the data
// dir's lock and does not advertise (see the package doc).
func StartEmbedded(ctx context.Context, o Options) (*Conn, error) {
	st, err := OpenStore(ctx, o.DB)
	if err != nil {
		return nil, fmt.Errorf("embedded backend: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("embedded backend: %w", err)
	}
	srv := NewServer(st, o)
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// It outlives a cancelled ctx on purpose: a command drains its spool to
	// it after a signal. Close is what stops it.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := backend.Serve(sctx, ln, srv); err != nil {
			log.Error("embedded backend stopped", "err", err)
		}
	}()
	url := "http://" + ln.Addr().String()
	return &Conn{URL: url, Dashboard: url, Token: o.Token, Embedded: true, stop: sync.OnceFunc(func() {
		cancel()
		<-done
		st.Close()
	})}, nil
}
