package cli

import (
	"context"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/localbackend"
	"github.com/claude-relay/claude-relay/internal/tokens"
)

// backendConn is the backend a command talks to.
type backendConn = localbackend.Conn

// backend returns the configured backend; with none configured, the serve
// of the same data dir, or else the embedded default started here (the
// localbackend package doc says why the two may run side by side).
func (a *App) backend(ctx context.Context) (*backendConn, error) {
	c := a.loaded.Config
	if c.Backend.URL != "" {
		return &backendConn{URL: c.Backend.URL}, nil
	}
	return a.localBackend(ctx)
}

// localBackend returns the data dir's own backend, whatever backend.url
// says: its serve, or else the embedded default started here (in this
// process in claude-relay-server; in claude-relay, as a child running
// claude-relay-server).
func (a *App) localBackend(ctx context.Context) (*backendConn, error) {
	c := a.loaded.Config
	tok, err := a.helperToken()
	if err != nil {
		return nil, err
	}
	if info, ok := a.runningServe(ctx); ok {
		a.log.Debug("using the running serve", "url", info.URL)
		return &backendConn{URL: info.URL, Dashboard: info.URL, Token: tok}, nil
	}
	serveTok, err := a.serveToken()
	if err != nil {
		return nil, err
	}
	o := a.localBackendOptions(c.Serve.DB, serveTok)
	var conn *backendConn
	if a.server != nil {
		conn, err = a.server.StartEmbedded(ctx, o)
	} else {
		conn, err = a.startEmbeddedChild(ctx, o)
	}
	if err != nil {
		return nil, err
	}
	conn.Token = tok
	return conn, nil
}

// helperToken is what this data dir's helpers post with: backend.token
// when set, else the data dir's generated helper token (ingest and
// decisions only: it can neither read sessions nor decide).
func (a *App) helperToken() (config.Secret, error) {
	if t := a.loaded.Config.Backend.Token; t != "" {
		return t, nil
	}
	return localbackend.HelperToken(a.loaded.Config.DataDir)
}

// localBackendOptions configures the data dir's backend, embedded or
// served, on db, accepting tok besides the serve tokens of the moment.
func (a *App) localBackendOptions(db string, tok config.Secret) localbackend.Options {
	o := localbackend.Options{DB: db, Token: tok, TokenFile: a.serveTokenPath(), Tokens: a.live.ServeTokens, Logger: a.log,
		Issued:              tokens.Open(tokens.Path(a.loaded.Config.DataDir)),
		AllowUncheckedLocal: a.loaded.Config.Serve.AllowUncheckedLocalDecisions}
	serveLimits(&o, a.loaded.Config)
	// Login key and logouts, and the security review's serve keys.
	o.DataDir = a.loaded.Config.DataDir
	o.Policy = a.loaded.Config.Serve.Policy
	o.AllowedHosts, o.NotifyIncludeInput = a.loaded.Config.Serve.AllowedHosts, a.loaded.Config.Serve.NotifyIncludeInput
	o.Budgets = a.loaded.Config.Serve.Budgets // issue 26
	if a.loaded.Config.Backend.Token == "" {
		if h, err := localbackend.HelperToken(a.loaded.Config.DataDir); err == nil {
			o.HelperToken = h
		} else {
			a.log.Warn("cannot create the data dir's helper token; helpers of this data dir will not reach this backend", "err", err)
		}
	}
	return o
}

// serveTokenPath is where serveToken's token lives, for the login page's
// hint; empty when the token is backend.token.
func (a *App) serveTokenPath() string {
	if a.loaded.Config.Backend.Token != "" {
		return ""
	}
	return localbackend.TokenPath(a.loaded.Config.DataDir)
}

// serveToken returns the configured backend token, or the data dir's
// generated one (created on first use, 0600).
func (a *App) serveToken() (config.Secret, error) {
	if t := a.loaded.Config.Backend.Token; t != "" {
		return t, nil
	}
	return localbackend.Token(a.loaded.Config.DataDir)
}

// runningServe finds the serve of this data dir; a serve that holds the
// data dir but never answers is logged and not used.
func (a *App) runningServe(ctx context.Context) (localbackend.Info, bool) {
	dir := a.loaded.Config.DataDir
	p := localbackend.Find(ctx, dir, localbackend.StartWait)
	if p.Held && !p.Ready && ctx.Err() == nil {
		a.log.Warn("a serve holds the data dir but does not answer; not using it (stop it, or give it its own --data-dir)",
			"data_dir", dir, "pid", p.PID, "url", p.Info.URL)
	}
	return p.Info, p.Ready
}
