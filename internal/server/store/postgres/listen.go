package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/server/store/fanout"
)

// Reconnect backoff of the listener: jittered, doubling, capped.
const (
	backoffMin = 100 * time.Millisecond
	backoffMax = 5 * time.Second
	// catchUpWindow: after a reconnect, sessions updated this long before the
	// connection was found broken are announced again, since their NOTIFYs
	// may have been lost. It covers clock skew between processes and
	// transactions in flight.
	catchUpWindow = 30 * time.Second
)

// listener owns the dedicated LISTEN connection and its goroutine.
type listener struct {
	cfg     *pgx.ConnConfig
	hub     *fanout.Hub
	catchUp func(ctx context.Context, since time.Time) error
	cancel  context.CancelFunc
	done    chan struct{}
}

// startListener subscribes a connection to channel and then keeps one
// subscribed until stop, publishing every notification to hub.
func startListener(ctx context.Context, cfg *pgx.ConnConfig, hub *fanout.Hub,
	catchUp func(context.Context, time.Time) error) (*listener, error) {
	l := &listener{cfg: cfg, hub: hub, catchUp: catchUp, done: make(chan struct{})}
	conn, err := l.connect(ctx)
	if err != nil {
		return nil, err
	}
	lctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	go l.run(lctx, conn)
	return l, nil
}

func (l *listener) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, l.cfg.Copy())
	if err != nil {
		return nil, fmt.Errorf("listener: connect: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("listener: LISTEN %s: %w", channel, err)
	}
	return conn, nil
}

// stop ends the goroutine and waits for it. It is idempotent.
func (l *listener) stop() {
	l.cancel()
	<-l.done
}

func (l *listener) run(ctx context.Context, conn *pgx.Conn) {
	defer close(l.done)
	for {
		l.receive(ctx, conn)
		lost := time.Now()
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = conn.Close(closeCtx)
		cancel()
		if conn = l.reconnect(ctx); conn == nil {
			return // stopped
		}
		// Best effort: a failure shows as a missed notification, which
		// subscribers tolerate (they re-read from their cursor).
		_ = l.catchUp(ctx, lost.Add(-catchUpWindow))
	}
}

// receive publishes notifications until the connection fails or ctx ends.
func (l *listener) receive(ctx context.Context, conn *pgx.Conn) {
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return
		}
		if note, ok := parsePayload(n.Payload); ok {
			l.hub.Publish(note)
		}
	}
}

// reconnect retries with backoff until it has a listening connection, or
// returns nil when ctx ends.
func (l *listener) reconnect(ctx context.Context) *pgx.Conn {
	delay := backoffMin
	for {
		// Full jitter in [delay/2, delay): processes that lost the same
		// server do not come back in lockstep.
		wait := delay/2 + rand.N(delay/2)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		if conn, err := l.connect(ctx); err == nil {
			return conn
		}
		delay = min(2*delay, backoffMax)
	}
}

// formatPayload is the NOTIFY payload of n: "session_id:cursor".
func formatPayload(n store.Notification) string {
	return n.SessionID + ":" + strconv.FormatInt(n.Cursor, 10)
}

// parsePayload reverses formatPayload; the session ID may contain colons,
// the cursor does not.
func parsePayload(p string) (store.Notification, bool) {
	i := strings.LastIndexByte(p, ':')
	if i <= 0 {
		return store.Notification{}, false
	}
	c, err := strconv.ParseInt(p[i+1:], 10, 64)
	if err != nil {
		return store.Notification{}, false
	}
	return store.Notification{SessionID: p[:i], Cursor: c}, true
}

// catchUp announces the sessions updated since since.
func (s *Store) catchUp(ctx context.Context, since time.Time) error {
	rows, err := s.pool.Query(ctx, `SELECT id, last_cursor FROM sessions WHERE updated_at >= $1`, since.UnixNano())
	if err != nil {
		return fmt.Errorf("catch up: %w", err)
	}
	notes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Notification, error) {
		var n store.Notification
		err := r.Scan(&n.SessionID, &n.Cursor)
		return n, err
	})
	if err != nil {
		return fmt.Errorf("catch up: %w", err)
	}
	s.hub.Publish(notes...)
	return nil
}
