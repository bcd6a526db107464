// Package server is the reference backend of a data dir run in this
// process: the store, the API, the dashboard and its Markdown, /metrics.
// Only the claude-relay-server executable links it: those libraries' package
// init and memory would otherwise be paid by every helper and hook process
// (package localbackend's doc says how claude-relay reaches it).
package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/localbackend"
	"github.com/claude-relay/claude-relay/internal/server/backend"
	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/server/store/postgres"
	"github.com/claude-relay/claude-relay/internal/server/store/sqlite"
	"github.com/claude-relay/claude-relay/internal/tokens"
)

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

// New is the reference backend on st as o configures it, for `serve` and
// the embedded default alike.
func New(st store.Store, o localbackend.Options) *backend.Server {
	warnLooseDirs(o)
	return backend.New(backend.Options{Store: st, Logger: o.Logger, TokenFile: o.TokenFile,
		StateDir: o.DataDir, AllowedHosts: o.AllowedHosts, NotifyIncludeInput: o.NotifyIncludeInput,
		MaxEventBytes: o.MaxEventBytes, MaxBatchBytes: o.MaxBatchBytes, MaxStreamsPerToken: o.MaxStreamsPerToken,
		ServeTokens: func() []config.ServeToken { return acceptedTokens(o) },
		Issued:      o.Issued, NotifyURL: o.NotifyURL, PublicURL: o.PublicURL, AllowUncheckedLocal: o.AllowUncheckedLocal,
		Budgets: o.Budgets, Policy: o.Policy})
}

// defaultTokenName names the data dir's token in the record of who did
// what.
const defaultTokenName = "default"

// helperTokenName names the data dir's helper token likewise.
const helperTokenName = "helper"

// acceptedTokens are o's serve tokens of the moment and o.Token, which
// carries the default scopes (ingest, read).
func acceptedTokens(o localbackend.Options) []config.ServeToken {
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
// dir's lock and does not advertise (see package localbackend's doc).
func StartEmbedded(ctx context.Context, o localbackend.Options) (*localbackend.Conn, error) {
	st, err := OpenStore(ctx, o.DB)
	if err != nil {
		return nil, fmt.Errorf("embedded backend: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("embedded backend: %w", err)
	}
	srv := New(st, o)
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
	return localbackend.NewConn("http://"+ln.Addr().String(), o.Token, sync.OnceFunc(func() {
		cancel()
		<-done
		st.Close()
	})), nil
}

// InProcess runs the reference backend in this process: the server code
// claude-relay-server hands its commands (cli.ServerMain).
type InProcess struct{}

// Open opens db for `serve`.
func (InProcess) Open(ctx context.Context, db string) (localbackend.Backend, error) {
	st, err := OpenStore(ctx, db)
	if err != nil {
		return nil, err
	}
	return &opened{st: st}, nil
}

// StartEmbedded is the package's StartEmbedded.
func (InProcess) StartEmbedded(ctx context.Context, o localbackend.Options) (*localbackend.Conn, error) {
	return StartEmbedded(ctx, o)
}

// opened is an opened serve.db.
type opened struct{ st store.Store }

var _ localbackend.Backend = (*opened)(nil)

func (b *opened) Serve(ctx context.Context, ln net.Listener, o localbackend.Options) error {
	return backend.Serve(ctx, ln, New(b.st, o))
}

func (b *opened) Close() error { return b.st.Close() }
