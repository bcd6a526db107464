package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/server/store/postgres"
	"github.com/claude-relay/claude-relay/internal/server/store/storetest"
	"github.com/claude-relay/claude-relay/internal/testkit/pgtest"
)

// pg is one real PostgreSQL server for the whole test binary; each test
// gets a database of its own.
var pg pgtest.Shared

// searchFixture is the search benchmarks' 10,000 sessions, built once in a
// database that lives as long as the server.
var searchFixture storetest.Fixture

func searchStore(b *testing.B) store.Store {
	srv := pg.Server(b)
	return searchFixture.Store(b, 10000, func() (store.Store, func() error, error) {
		_, url, err := srv.CreateDatabase(context.Background())
		if err != nil {
			return nil, nil, err
		}
		s, err := postgres.Open(context.Background(), url)
		if err != nil {
			return nil, nil, err
		}
		return s, s.Close, nil
	})
}

// BenchmarkSessionSearch: a search of 10,000 sessions that matches ten (it
// reads every session's search text), against the unfiltered first page.
func BenchmarkSessionSearch(b *testing.B) {
	b.Run("postgres", func(b *testing.B) {
		storetest.BenchSessionSearch(b, searchStore(b), store.ListOptions{Query: storetest.SearchRare}, 10)
	})
}

func BenchmarkSessionSearchBaseline(b *testing.B) {
	b.Run("postgres", func(b *testing.B) {
		storetest.BenchSessionSearch(b, searchStore(b), store.ListOptions{}, 100)
	})
}

func TestMain(m *testing.M) {
	code := m.Run()
	if err := searchFixture.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	pg.Stop()
	// Close must stop every goroutine a Store started (listener, pool).
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

func open(t testing.TB, url string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return open(t, pg.Database(t)) })
}

// TestTwoStores: two Stores on one database, as two replicas.
func TestTwoStores(t *testing.T) {
	storetest.RunShared(t, storetest.Shared{Notifies: true, Open: func(t *testing.T) (store.Store, store.Store) {
		url := pg.Database(t)
		return open(t, url), open(t, url)
	}})
}

// TestBackfill opens a database that a release before migration 2 filled:
// the migration derives the new fields, tables and rows from the events.
func TestBackfill(t *testing.T) {
	events := storetest.BackfillFixture()
	s := openOld(t, 1, storetest.V1Inserts(events, ph))
	storetest.CheckBackfill(t, s, events)
}

// migrations are every schema version this build applies.
var migrations = []int{1, 2, 3, 4, 5, 6, 7, 8, 9} // 8: the audit order (audit.go), PostgreSQL only; 9: the approvals' policy (SQLite's 8)

// ph numbers PostgreSQL's placeholders for storetest's statements.
func ph(n int) string { return "$" + strconv.Itoa(n) }

// TestBackfillApprovalPolicy: migration 9 gives the approvals stored
// before it the policy their requests carried.
func TestBackfillApprovalPolicy(t *testing.T) {
	s := openOld(t, 8, storetest.PolicyInserts(storetest.PolicyFixture(), ph))
	storetest.CheckApprovalPolicy(t, s, "pb-a")
}

// openOld opens a database that a release at schema version left, filled
// with stmts, and checks that opening it applied every later migration.
func openOld(t *testing.T, version int, stmts []storetest.Statement) *postgres.Store {
	t.Helper()
	ctx := context.Background()
	url := pg.Database(t)
	if err := postgres.CreateOld(ctx, url, version, stmts); err != nil {
		t.Fatalf("create a v%d database: %v", version, err)
	}
	s := open(t, url)
	if v, err := s.SchemaVersions(ctx); err != nil || !slices.Equal(v, migrations) {
		t.Fatalf("schema_migrations = %v, %v; want %v", v, err, migrations)
	}
	return s
}

func event(session, id string, seq int64) store.Event {
	return store.Event{
		SessionID: session, InteractionID: "i1", EventID: id, Seq: seq, EventType: "assistant",
		EventData: json.RawMessage(`{"type":"assistant"}`), Timestamp: time.Now(), Source: "agent",
	}
}

// await reads ch until session reaches cursor want.
func await(t *testing.T, ch <-chan store.Notification, session string, want int64) {
	t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case n, ok := <-ch:
			if !ok {
				t.Fatal("subscription closed")
			}
			if n.SessionID == session && n.Cursor >= want {
				return
			}
		case <-timeout:
			t.Fatalf("no notification of %s at cursor %d", session, want)
		}
	}
}

// TestTwoReplicas: two Stores on one database, as two serve processes: a
// subscriber of B sees A's appends, and cursors interleave without gaps.
func TestTwoReplicas(t *testing.T) {
	url := pg.Database(t)
	a, b := open(t, url), open(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := b.Subscribe(ctx)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	if _, err := a.Append(ctx, []store.Event{event("shared:1", "e1", 1)}); err != nil {
		t.Fatalf("Append on A: %v", err)
	}
	await(t, ch, "shared:1", 1) // the session ID has a colon, like the payload separator
	res, err := b.Append(ctx, []store.Event{event("shared:1", "e2", 2), event("shared:1", "e1", 1)})
	if err != nil {
		t.Fatalf("Append on B: %v", err)
	}
	if res[0].Cursor != 2 || res[0].Duplicate || res[1].Cursor != 1 || !res[1].Duplicate {
		t.Errorf("B's results = %+v; want cursor 2 and a duplicate at 1", res)
	}
	await(t, ch, "shared:1", 2)
	sess, err := a.Session(ctx, "shared:1")
	if err != nil || sess.LastCursor != 2 || sess.EventCount != 2 {
		t.Errorf("A sees %+v, %v; want 2 events", sess, err)
	}
}

// TestConcurrentOpen starts Stores on one fresh database at once, as
// processes starting together: the advisory lock applies migrations once.
func TestConcurrentOpen(t *testing.T) {
	url := pg.Database(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			s, err := postgres.Open(context.Background(), url)
			if err == nil {
				err = s.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent Open: %v", err)
		}
	}
	s := open(t, url)
	if v, err := s.SchemaVersions(context.Background()); err != nil || !slices.Equal(v, migrations) {
		t.Errorf("schema_migrations = %v, %v; want %v", v, err, migrations)
	}
}

// TestListenerReconnects kills the listener's server connection: the Store
// reconnects and its subscribers see later appends.
func TestListenerReconnects(t *testing.T) {
	url := pg.Database(t)
	s := open(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := s.Subscribe(ctx)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	var killed int
	if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminated %d listeners (%v), want 1", killed, err)
	}
	for i := int64(1); ; i++ {
		// Appends before the reconnect are announced by the catch-up.
		if _, err := s.Append(ctx, []store.Event{event("after-kill", "k"+string(rune('a'+i)), i)}); err != nil {
			t.Fatalf("Append: %v", err)
		}
		select {
		case n := <-ch:
			if n.SessionID == "after-kill" {
				return
			}
		case <-time.After(500 * time.Millisecond):
		}
		if i == 20 {
			t.Fatal("no notification after the listener's connection was killed")
		}
	}
}

func TestOpenBadURL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, url := range []string{"postgres://%zz", "postgres://nobody@127.0.0.1:1/none?connect_timeout=1"} {
		if s, err := postgres.Open(ctx, url); err == nil {
			_ = s.Close()
			t.Errorf("Open(%q) succeeded", url)
		}
	}
}

func BenchmarkIngest(b *testing.B) {
	for _, bc := range []struct {
		name  string
		batch int
	}{{"postgres-single", 1}, {"postgres-batch100", 100}} {
		b.Run(bc.name, func(b *testing.B) {
			storetest.BenchIngest(b, open(b, pg.Database(b)), bc.batch)
		})
	}
}
