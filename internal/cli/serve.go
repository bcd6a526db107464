package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/backend"
)

type serveOptions struct {
	addr string
	db   string
}

func newServeCmd(a *App) *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the reference backend and its live dashboard",
		Long: "Receive events (POST /api/sessions/{id}/events), store them in SQLite or PostgreSQL,\n" +
			"extract conversation IDs, and serve the API and a live dashboard. SIGTERM shuts down\n" +
			"gracefully. Without serve.tokens or backend.token, a token is generated and kept in\n" +
			"the data dir (serve.token), shared with the embedded default.\n\n" +
			"One data dir has one serve: it holds a lock there (serve.lock) and advertises its\n" +
			"address (serve.json), so run, extension, terminal and spool flush of that data dir\n" +
			"send their events to it. A second serve on the same data dir exits with status 1,\n" +
			"naming the pid and address of the first; give it its own --data-dir to run both.\n" +
			"A killed serve leaves no lock behind: the next one takes the data dir over.",
		Example: "  claude-relay serve\n" +
			"  CLAUDE_RELAY_SERVE_TOKENS=s3cret claude-relay serve --addr :8787\n" +
			"  claude-relay --data-dir ~/relay-pg serve --addr 127.0.0.1:8788 --db postgres://relay@localhost/relay",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServe(cmd.Context(), a, o) },
	}
	cmd.Flags().StringVar(&o.addr, "addr", "", "listen address (default serve.addr, 127.0.0.1:8787)")
	cmd.Flags().StringVar(&o.db, "db", "", "sqlite:PATH or a postgres:// URL (default serve.db)")
	return cmd
}

func runServe(ctx context.Context, a *App, o serveOptions) error {
	c := a.loaded.Config
	if o.addr == "" {
		o.addr = c.Serve.Addr
	}
	if o.db == "" {
		o.db = c.Serve.DB
	}
	// The lock comes first: a second serve must not open the database,
	// listen, or touch serve.json before it knows it is the only one.
	lock, err := lockDataDir(ctx, c.DataDir)
	if err != nil {
		return err
	}
	defer lock.Close() // releases the lock, after serve.json is gone (defers run in reverse)
	tok, err := a.serveToken()
	if err != nil {
		return err
	}
	st, err := openStore(ctx, o.db)
	if err != nil {
		return err
	}
	defer st.Close()
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another program, or the serve of another data dir, on it? pick a free address with --addr)", o.addr, err)
	}
	// The data dir's token is always accepted too: `run` and `extension` of
	// this data dir send it when they find this serve (the file is 0600).
	srv := backend.New(backend.Options{Store: st, Logger: a.log, MaxBody: maxEventBytes, TokenFile: a.serveTokenPath(),
		Tokens: func() []config.Secret { return append(a.live.ServeTokens(), tok) }})
	url := "http://" + ln.Addr().String()
	// Advertise ourselves so `run` and `extension` use this serve, whatever
	// the address: otherwise they would start the embedded default beside
	// it, on the same database, and this dashboard would not see their
	// events live.
	info := serveInfo{URL: localURL(ln.Addr()), PID: os.Getpid(), Started: time.Now().UTC()}
	if err := advertise(c.DataDir, info); err != nil {
		a.log.Warn("cannot advertise serve in the data dir; run and extension will not find it", "err", err)
	}
	defer os.Remove(filepath.Join(c.DataDir, serveInfoFile)) // only the lock holder gets here
	stopWatch := a.watchConfig()
	defer stopWatch()
	tokenHint := "token: backend.token / serve.tokens"
	if len(a.live.ServeTokens()) == 0 {
		tokenHint = "token: in " + filepath.Join(c.DataDir, serveTokenFile)
	}
	fmt.Fprintf(a.Stderr, "claude-relay serve: %s (dashboard %s/, %s, db %s)\n", url, info.URL, tokenHint, redactDB(o.db))
	return backend.Serve(ctx, ln, srv)
}

// serveRunningError is a serve refused because the data dir has one.
type serveRunningError struct {
	DataDir string
	PID     int    // the holder's; 0 if it has not written it yet
	URL     string // where it listens; "" until it advertises
}

func (e *serveRunningError) Error() string {
	who := "another serve"
	switch {
	case e.PID != 0 && e.URL != "":
		who = fmt.Sprintf("another serve (pid %d, %s)", e.PID, e.URL)
	case e.PID != 0:
		who = fmt.Sprintf("another serve (pid %d, still starting)", e.PID)
	}
	return fmt.Sprintf("%s already uses data dir %s; stop it, or give this serve its own with --data-dir", who, e.DataDir)
}

// errLockBusy: serve.lock has an exclusive holder, another serve.
var errLockBusy = errors.New("serve lock held")

// lockDataDir makes this process the data dir's one serve: an exclusive
// flock on serve.lock, which the kernel drops when the process dies (so a
// SIGKILLed serve never blocks the next), with our pid written inside for
// the commands that look for us. The file itself is never removed: a
// removal would let two serves lock two different files of that name.
func lockDataDir(ctx context.Context, dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, serveLockFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the serve lock %s: %w", path, err)
	}
	if err := flockExclusive(ctx, f); err != nil {
		defer f.Close()
		if errors.Is(err, errLockBusy) {
			e := &serveRunningError{DataDir: dir, PID: lockPID(f)}
			if info, err := readServeInfo(dir); err == nil && e.PID != 0 && info.PID == e.PID {
				e.URL = info.URL
			}
			return nil, e
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, fmt.Errorf("write the serve lock %s: %w", path, err)
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("write the serve lock %s: %w", path, err)
	}
	return f, nil
}

// lockSettle bounds how long lockDataDir waits out probes' shared locks.
const lockSettle = 5 * time.Second

// flockExclusive takes f's exclusive flock without waiting on a serve: an
// exclusive holder (another serve) is errLockBusy at once. `run` and `doctor`
// probing for a serve (serveLockHolder) hold a shared lock for an instant;
// those are waited out, so a probe never makes a lone serve refuse to start.
func flockExclusive(ctx context.Context, f *os.File) error {
	fd := int(f.Fd())
	ctx, cancel := context.WithTimeout(ctx, lockSettle)
	defer cancel()
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return err
		}
		// Held: a shared lock we can join means only probes hold it.
		switch err := unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB); {
		case errors.Is(err, unix.EWOULDBLOCK):
			return errLockBusy
		case err != nil:
			return err
		}
		// Let go before retrying, so two serves starting together cannot
		// keep each other out by both holding shared locks.
		if err := unix.Flock(fd, unix.LOCK_UN); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("still held by commands looking for a serve after %s: %w", lockSettle, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// advertise writes serve.json aside and renames it into place, so readers
// see the old file or the new one, never half of one.
func advertise(dir string, info serveInfo) error {
	b, err := json.Marshal(info)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, serveInfoFile)
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// localURL is how a process on this machine reaches a listener: a wildcard
// address (":8788", "0.0.0.0:8788", "[::]:8788") is reached on 127.0.0.1
// (Go's wildcard listeners are dual-stack).
func localURL(addr net.Addr) string {
	t, ok := addr.(*net.TCPAddr)
	if !ok {
		return "http://" + addr.String()
	}
	host := t.IP.String()
	if t.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(t.Port))
}

// redactDB hides a database URL's password for display.
func redactDB(db string) string { return config.RedactURL(db) }
