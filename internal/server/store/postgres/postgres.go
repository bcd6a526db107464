// Package postgres is the store.Store for scale: PostgreSQL through pgx's
// connection pool, for several `serve` processes on one database.
//
// Every Append is one transaction that locks the rows of its sessions (in
// session order, so concurrent batches cannot deadlock) and so numbers
// cursors without gaps or duplicates, whichever process appends. It ends
// with a NOTIFY (payload "session_id:cursor") per session, which PostgreSQL
// delivers at commit to every listener: each Store keeps one dedicated
// connection LISTENing and fans notifications out to its subscribers, so
// every process sees every process's events live.
//
// Open applies pending schema migrations under an advisory lock, so
// processes starting at once migrate once.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/server/store/fanout"
	"github.com/claude-relay/claude-relay/internal/server/store/internal/ingest"
)

// channel is the LISTEN/NOTIFY channel of new events.
const channel = "claude_relay_events"

// appendAttempts bounds retries of an Append whose transaction lost a race
// PostgreSQL reports as retryable.
const appendAttempts = 4

var _ store.Store = (*Store)(nil)

// Store is a store.Store on a PostgreSQL database.
type Store struct {
	pool      *pgxpool.Pool
	hub       *fanout.Hub
	clock     ingest.Clock
	listener  *listener
	closed    atomic.Bool
	closeOnce sync.Once
}

// Open connects to the database at url (a postgres:// URL or key=value
// string, as libpq takes), applies pending migrations, and starts listening
// for notifications; it returns once the listener is subscribed, so that a
// Subscribe after Open sees every later Append of any process.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse database URL: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %s: %w", describe(cfg), err)
	}
	s := &Store{pool: pool, hub: fanout.New()}
	s.listener, err = startListener(ctx, cfg.ConnConfig, s.hub, s.catchUp)
	if err != nil {
		s.hub.Close()
		pool.Close()
		return nil, fmt.Errorf("postgres: %s: %w", describe(cfg), err)
	}
	return s, nil
}

// describe names a database for errors without its password.
func describe(cfg *pgxpool.Config) string {
	return fmt.Sprintf("database %q on %s:%d", cfg.ConnConfig.Database, cfg.ConnConfig.Host, cfg.ConnConfig.Port)
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
	for attempt := 1; ; attempt++ {
		res, err := s.appendOnce(ctx, events)
		if err == nil || attempt == appendAttempts || !retryable(err) || ctx.Err() != nil {
			if err != nil {
				return nil, fmt.Errorf("postgres: append: %w", err)
			}
			return res, nil
		}
	}
}

func (s *Store) appendOnce(ctx context.Context, events []store.Event) ([]store.AppendResult, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	out, err := ingest.Append(ctx, &writeTx{tx: tx}, events, s.clock.Now())
	if err != nil {
		return nil, err
	}
	if len(out.Notifications) > 0 {
		b := &pgx.Batch{}
		for _, n := range out.Notifications {
			b.Queue(`SELECT pg_notify($1, $2)`, channel, formatPayload(n))
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return nil, fmt.Errorf("notify: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	return out.Results, nil
}

// retryable reports errors after which the same Append can succeed: a
// unique violation (a row another transaction inserted that the session
// locks do not order, such as an approval of another session), a
// deadlock, or a serialization failure.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "23505", "40P01", "40001":
		return true
	}
	return false
}

// Session implements store.Store.
func (s *Store) Session(ctx context.Context, id string) (store.Session, error) {
	if s.closed.Load() {
		return store.Session{}, store.ErrClosed
	}
	sess, err := ingest.ScanSession(s.pool.QueryRow(ctx, `SELECT `+ingest.SessionColumns+` FROM sessions WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Session{}, fmt.Errorf("session %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("postgres: session %q: %w", id, err)
	}
	return sess, nil
}

// dialect is PostgreSQL's SQL for ingest's shared queries. strpos compares
// bytes (search text and needle are lower-cased already); sums of bigint
// are numeric, cast back.
var dialect = ingest.Dialect{
	Placeholder: func(n int) string { return "$" + strconv.Itoa(n) },
	Contains:    func(h, n string) string { return "strpos(" + h + ", " + n + ") > 0" },
	Int:         func(e string) string { return e + "::bigint" },
	ByteOrder:   `COLLATE "C"`,
}

// Sessions implements store.Store: newest UpdatedAt first, then greatest ID.
func (s *Store) Sessions(ctx context.Context, opts store.ListOptions) ([]store.Session, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	q, args := ingest.ListQuery(dialect, opts)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: sessions: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Session, error) { return ingest.ScanSession(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: sessions: %w", err)
	}
	return out, nil
}

// Events implements store.Store. A session without events (or unknown) has
// an empty page.
func (s *Store) Events(ctx context.Context, sessionID string, after int64, limit int) ([]store.Event, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.pool.Query(ctx, `SELECT `+ingest.EventColumns+` FROM events
		WHERE session_id = $1 AND cursor > $2 ORDER BY cursor LIMIT $3`, sessionID, after, ingest.Limit(limit))
	if err != nil {
		return nil, fmt.Errorf("postgres: events of %q: %w", sessionID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Event, error) { return ingest.ScanEvent(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: events of %q: %w", sessionID, err)
	}
	return out, nil
}

// Subscribe implements store.Store: it sees the Appends of every process on
// the database.
func (s *Store) Subscribe(ctx context.Context) (<-chan store.Notification, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	return s.hub.Subscribe(ctx)
}

// Close stops the listener, closes subscriber channels and the pool. It is
// idempotent.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.listener.stop()
		s.hub.Close()
		s.pool.Close()
	})
	return nil
}
