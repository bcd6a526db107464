// Package sqlite is the default store.Store: one SQLite file, nothing to run
// beside the binary.
//
// It uses modernc.org/sqlite, SQLite translated to pure Go: no cgo, so the
// binary still cross-compiles with CGO_ENABLED=0 and needs no C toolchain,
// at some cost in speed that an event relay does not notice.
//
// The file is opened twice: a writer pool of one connection, whose
// transactions begin IMMEDIATE (they take the write lock up front, so a
// transaction never fails upgrading a read lock, and busy_timeout covers
// other processes), and a reader pool that WAL mode lets read while the
// writer writes. Each Append is one transaction however many events it has.
//
// Subscribe is in-process: it sees the Appends and Decides of this Store
// only. Several processes serving one database live should use package
// postgres.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/server/store/fanout"
	"github.com/claude-relay/claude-relay/internal/server/store/internal/ingest"
)

// busyTimeoutMS is how long a statement waits for another process's lock.
const busyTimeoutMS = 10000

var _ store.Store = (*Store)(nil)

// Store is a store.Store on one SQLite file.
type Store struct {
	w, r      *sql.DB
	st        *statements
	hub       *fanout.Hub
	clock     ingest.Clock
	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// Open opens (creating if needed) the database at path, creating its parent
// directory with mode 0700 and the file 0600 (perm.go), and applies
// pending migrations.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: empty database path")
	}
	if strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("sqlite: database path %q contains '?': choose another path", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("sqlite: create directory for %s: %w", path, err)
	}
	if err := createPrivate(path); err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	w, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	// One writer connection: SQLite allows one writer anyway, and queueing in
	// database/sql is cheaper than spinning on SQLITE_BUSY.
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	if err := migrate(ctx, w); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	if err := enableWAL(ctx, w); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	if err := restrictSidecars(path); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	r, err := sql.Open("sqlite", dsn(path, true))
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	r.SetMaxOpenConns(max(4, runtime.GOMAXPROCS(0)))
	st, err := prepare(ctx, w, r)
	if err != nil {
		_ = errors.Join(r.Close(), w.Close())
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	return &Store{w: w, r: r, st: st, hub: fanout.New()}, nil
}

// dsn configures each connection: busy_timeout first (the driver applies it
// before the other pragmas), synchronous=NORMAL (durable at checkpoints, safe
// against corruption in WAL mode), foreign keys, and IMMEDIATE transactions
// for the writer. WAL is set once by enableWAL, not here.
func dsn(path string, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Set("_txlock", "immediate")
	}
	return path + "?" + q.Encode()
}

// enableWAL switches the file to WAL, so readers and the writer do not block
// each other; the mode is stored in the file. The switch needs the file to
// itself and SQLite answers SQLITE_BUSY at once, without busy_timeout, while
// another process holds it (several opening a new file together), so it is
// retried here for as long as busy_timeout would wait.
func enableWAL(ctx context.Context, w *sql.DB) error {
	deadline := time.Now().Add(busyTimeoutMS * time.Millisecond)
	for delay := time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		var mode string
		err := w.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode)
		switch {
		case err == nil && strings.EqualFold(mode, "wal"):
			return nil
		case err == nil:
			return fmt.Errorf("journal_mode is %q after asking for WAL (a file system without shared memory?)", mode)
		case !isBusy(err) || time.Now().After(deadline):
			return fmt.Errorf("enable WAL: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("enable WAL: %w", ctx.Err())
		case <-time.After(delay):
		}
	}
}

// isBusy reports SQLITE_BUSY (5) or SQLITE_LOCKED (6), with extended codes.
func isBusy(err error) bool {
	var c interface{ Code() int }
	if !errors.As(err, &c) {
		return false
	}
	code := c.Code() & 0xff
	return code == 5 || code == 6
}

// Append implements store.Store.
func (s *Store) Append(ctx context.Context, events []store.Event) ([]store.AppendResult, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	if len(events) == 0 {
		return []store.AppendResult{}, nil
	}
	if err := ingest.Validate(events); err != nil {
		return nil, err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlite: append: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	// The clock is read under the write lock so that updated_at follows
	// commit order.
	out, err := ingest.Append(ctx, &writeTx{tx: tx, st: s.st}, events, s.clock.Now())
	if err != nil {
		return nil, fmt.Errorf("sqlite: append: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("sqlite: append: commit: %w", err)
	}
	s.hub.Publish(out.Notifications...)
	return out.Results, nil
}

// Session implements store.Store.
func (s *Store) Session(ctx context.Context, id string) (store.Session, error) {
	if s.closed.Load() {
		return store.Session{}, store.ErrClosed
	}
	sess, err := ingest.ScanSession(s.st.readSession.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Session{}, fmt.Errorf("session %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("sqlite: session %q: %w", id, err)
	}
	return sess, nil
}

// dialect is SQLite's SQL for ingest's shared queries. instr compares
// bytes: search text and needle are lower-cased already.
var dialect = ingest.Dialect{
	Placeholder: func(int) string { return "?" },
	Contains:    func(h, n string) string { return "instr(" + h + ", " + n + ") > 0" },
	Int:         func(e string) string { return e },
}

// Sessions implements store.Store: newest UpdatedAt first, then greatest ID.
func (s *Store) Sessions(ctx context.Context, opts store.ListOptions) ([]store.Session, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	q, args := ingest.ListQuery(dialect, opts)
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: sessions: %w", err)
	}
	out, err := collect(rows, ingest.ScanSession)
	if err != nil {
		return nil, fmt.Errorf("sqlite: sessions: %w", err)
	}
	return out, nil
}

// Events implements store.Store. A session without events (or unknown) has
// an empty page.
func (s *Store) Events(ctx context.Context, sessionID string, after int64, limit int) ([]store.Event, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.st.readEvents.QueryContext(ctx, sessionID, after, ingest.Limit(limit))
	if err != nil {
		return nil, fmt.Errorf("sqlite: events of %q: %w", sessionID, err)
	}
	out, err := collect(rows, ingest.ScanEvent)
	if err != nil {
		return nil, fmt.Errorf("sqlite: events of %q: %w", sessionID, err)
	}
	return out, nil
}

// collect reads every row of rows with scan and closes them: what
// pgx.CollectRows is to the PostgreSQL store, except that no rows is an
// empty list, never nil.
func collect[T any](rows *sql.Rows, scan func(ingest.Scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Subscribe implements store.Store for the Appends of this Store.
func (s *Store) Subscribe(ctx context.Context) (<-chan store.Notification, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	return s.hub.Subscribe(ctx)
}

// Close closes subscriber channels and the database. It is idempotent.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.hub.Close()
		s.closeErr = errors.Join(s.st.close(), s.r.Close(), s.w.Close())
		if s.closeErr != nil {
			s.closeErr = fmt.Errorf("sqlite: close: %w", s.closeErr)
		}
	})
	return s.closeErr
}
