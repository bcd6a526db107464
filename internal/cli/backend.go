package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/backend"
	"github.com/claude-relay/claude-relay/internal/ndjson"
	"github.com/claude-relay/claude-relay/internal/proc"
	"github.com/claude-relay/claude-relay/internal/store"
	"github.com/claude-relay/claude-relay/internal/store/postgres"
	"github.com/claude-relay/claude-relay/internal/store/sqlite"
)

// backendConn is the backend a command talks to.
type backendConn struct {
	URL       string
	Dashboard string        // where people look
	Token     config.Secret // set for the embedded default, which has its own
	Embedded  bool
	close     func()
}

// Close stops an embedded backend, if one was started.
func (b *backendConn) Close() {
	if b.close != nil {
		b.close()
	}
}

// Files in the data dir that tie `serve` and the embedded default together.
const (
	serveTokenFile = "serve.token" // the generated token of the embedded default
	serveInfoFile  = "serve.json"  // where a running serve listens
)

// maxEventBytes is the backend's limit for one event: as large as the
// longest CLI line the helper accepts, so the project's own backend never
// refuses (and dead-letters) an event the helper took.
const maxEventBytes = ndjson.DefaultMax

// serveInfo advertises a running `serve` for its data dir.
type serveInfo struct {
	URL     string    `json:"url"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
}

// backend returns the configured backend; with none configured, a running
// `serve` of the same data dir, or else the embedded default started here.
func (a *App) backend(ctx context.Context) (*backendConn, error) {
	c := a.loaded.Config
	if c.Backend.URL != "" {
		return &backendConn{URL: c.Backend.URL}, nil
	}
	tok, err := a.serveToken()
	if err != nil {
		return nil, err
	}
	if info, ok := a.runningServe(ctx); ok {
		a.log.Debug("using the running serve", "url", info.URL)
		return &backendConn{URL: info.URL, Dashboard: info.URL, Token: tok}, nil
	}
	return a.startEmbedded(ctx, tok)
}

// serveToken returns the configured backend token, or the data dir's
// generated one (created on first use, 0600).
func (a *App) serveToken() (config.Secret, error) {
	if t := a.loaded.Config.Backend.Token; t != "" {
		return t, nil
	}
	return dataDirToken(filepath.Join(a.loaded.Config.DataDir, serveTokenFile))
}

// dataDirToken reads the generated token, creating it if it is missing or
// empty. The file appears whole (written aside, then linked into place), so
// a helper starting at the same moment never reads half a token.
func dataDirToken(path string) (config.Secret, error) {
	for range 20 {
		if b, err := os.ReadFile(path); err == nil {
			if tok := strings.TrimSpace(string(b)); tok != "" {
				return config.Secret(tok), nil
			}
			os.Remove(path) // an empty file (a crash mid-write before this scheme): start over
		}
		raw := make([]byte, 24)
		if _, err := rand.Read(raw); err != nil {
			return "", fmt.Errorf("generate a backend token: %w", err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return "", fmt.Errorf("data dir: %w", err)
		}
		tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
		if err := os.WriteFile(tmp, []byte(hex.EncodeToString(raw)+"\n"), 0o600); err != nil {
			return "", fmt.Errorf("write %s: %w", path, err)
		}
		err := os.Link(tmp, path) // fails if another helper won: then read theirs
		os.Remove(tmp)
		if err != nil && !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("write %s: %w", path, err)
		}
	}
	return "", fmt.Errorf("cannot create a usable token in %s", path)
}

// runningServe finds a live `serve` advertised for this data dir.
func (a *App) runningServe(ctx context.Context) (serveInfo, bool) {
	var info serveInfo
	b, err := os.ReadFile(filepath.Join(a.loaded.Config.DataDir, serveInfoFile))
	if err != nil || json.Unmarshal(b, &info) != nil || info.URL == "" {
		return info, false
	}
	if p, err := proc.Lookup(info.PID); err != nil || !proc.Alive(p) {
		return info, false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, info.URL+"/healthz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return info, false
	}
	resp.Body.Close()
	return info, resp.StatusCode == http.StatusOK
}

// openStore opens serve.db: sqlite:PATH or a postgres:// URL.
func openStore(ctx context.Context, db string) (store.Store, error) {
	switch {
	case strings.HasPrefix(db, "sqlite:"):
		return sqlite.Open(ctx, strings.TrimPrefix(db, "sqlite:"))
	case strings.HasPrefix(db, "postgres://"), strings.HasPrefix(db, "postgresql://"):
		return postgres.Open(ctx, db)
	}
	return nil, fmt.Errorf("serve.db %q: allowed: sqlite:PATH or a postgres:// URL", db)
}

// startEmbedded runs the reference backend in this process on a loopback
// port, on the configured database (SQLite in the data dir by default).
func (a *App) startEmbedded(ctx context.Context, tok config.Secret) (*backendConn, error) {
	st, err := openStore(ctx, a.loaded.Config.Serve.DB)
	if err != nil {
		return nil, fmt.Errorf("embedded backend: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("embedded backend: %w", err)
	}
	srv := backend.New(backend.Options{Store: st, Logger: a.log, MaxBody: maxEventBytes,
		Tokens: func() []config.Secret { return append(a.live.ServeTokens(), tok) }})
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := backend.Serve(sctx, ln, srv); err != nil {
			a.log.Error("embedded backend stopped", "err", err)
		}
	}()
	url := "http://" + ln.Addr().String()
	return &backendConn{URL: url, Dashboard: url, Token: tok, Embedded: true, close: func() {
		cancel()
		<-done
		st.Close()
	}}, nil
}
