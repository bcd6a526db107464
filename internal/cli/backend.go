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
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/backend"
	"github.com/claude-relay/claude-relay/internal/ndjson"
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
	serveInfoFile  = "serve.json"  // where the data dir's serve listens
	serveLockFile  = "serve.lock"  // flocked by the data dir's one serve; holds its pid
)

// serveStartWait is how long a command waits for a serve that holds the data
// dir but does not answer yet (it is opening its database or about to
// listen) before it gives up on it and starts the embedded default.
const serveStartWait = 5 * time.Second

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

// backend returns the configured backend; with none configured, the serve
// of the same data dir, or else the embedded default started here.
//
// The embedded default takes no part in serve's data-dir lock: several
// helpers (an editor's, a shell's `run`) may each run one at once, and a
// `serve` started meanwhile must not be refused because an editor is open.
// It never advertises itself either, so it cannot hijack a serve. It and a
// serve started later share the store (SQLite takes several processes, and
// ingest is idempotent by event_id), so nothing is lost; only serve's live
// views miss what the embedded default stores until they are reloaded, and
// helpers started after serve use serve.
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

// serveTokenPath is where serveToken's token lives, for the login page's
// hint; empty when the token is backend.token.
func (a *App) serveTokenPath() string {
	if a.loaded.Config.Backend.Token != "" {
		return ""
	}
	return filepath.Join(a.loaded.Config.DataDir, serveTokenFile)
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

// runningServe finds the serve of this data dir (see findServe); a serve
// that holds the data dir but never answers is logged and not used.
func (a *App) runningServe(ctx context.Context) (serveInfo, bool) {
	dir := a.loaded.Config.DataDir
	p := findServe(ctx, dir, serveStartWait)
	if p.Held && !p.Ready && ctx.Err() == nil {
		a.log.Warn("a serve holds the data dir but does not answer; not using it (stop it, or give it its own --data-dir)",
			"data_dir", dir, "pid", p.PID, "url", p.Info.URL)
	}
	return p.Info, p.Ready
}

// serveProbe is what findServe saw.
type serveProbe struct {
	Held  bool      // a serve holds the data dir's lock
	PID   int       // the holder's pid from serve.lock (0 while it writes it)
	Info  serveInfo // serve.json, when it is the holder's
	Ready bool      // Info is the holder's and it answers /healthz
}

// findServe looks for the serve holding dir's lock, at the address its
// serve.json gives, waiting up to wait for one that is still starting.
//
// Only the lock is trusted: it dies with its process, while a SIGKILLed
// serve leaves its serve.json behind (the next serve rewrites it). A free
// lock therefore means no serve, whatever serve.json says, and serve.json
// counts only when it names the pid the holder wrote into serve.lock, so a
// serve that has taken the lock but not yet advertised is waited for, not
// mistaken for the dead one before it.
func findServe(ctx context.Context, dir string, wait time.Duration) serveProbe {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		var p serveProbe
		if p.PID, p.Held = serveLockHolder(dir); !p.Held {
			return p
		}
		if info, err := readServeInfo(dir); err == nil && p.PID != 0 && info.PID == p.PID {
			p.Info = info
			if p.Ready = answers(ctx, info.URL); p.Ready {
				return p
			}
		}
		select {
		case <-ctx.Done():
			return p
		case <-tick.C:
		}
	}
}

// serveLockHolder says whether a serve holds dir's lock, and its pid. The
// probe takes a shared lock for an instant when the lock is free; a serve
// starting at that moment waits it out (lockDataDir).
func serveLockHolder(dir string) (pid int, held bool) {
	f, err := os.Open(filepath.Join(dir, serveLockFile))
	if err != nil {
		return 0, false // no serve ever ran on this data dir
	}
	defer f.Close()
	switch err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); {
	case err == nil:
		unix.Flock(int(f.Fd()), unix.LOCK_UN) //nolint:errcheck // closing releases it anyway
		return 0, false
	case !errors.Is(err, unix.EWOULDBLOCK):
		return 0, false
	}
	return lockPID(f), true
}

// lockPID reads the pid a serve wrote into its lock file; 0 if it has not
// yet.
func lockPID(f *os.File) int {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// readServeInfo reads dir's serve.json; it is replaced whole (renamed into
// place), so a reader never sees half of one.
func readServeInfo(dir string) (serveInfo, error) {
	var info serveInfo
	b, err := os.ReadFile(filepath.Join(dir, serveInfoFile))
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, fmt.Errorf("%s: %w", serveInfoFile, err)
	}
	if info.URL == "" || info.PID <= 0 {
		return info, fmt.Errorf("%s: no url or pid", serveInfoFile)
	}
	return info, nil
}

// answers says whether url's /healthz says OK within a short time.
func answers(ctx context.Context, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/healthz", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
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
	srv := backend.New(backend.Options{Store: st, Logger: a.log, MaxBody: maxEventBytes, TokenFile: a.serveTokenPath(),
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
