package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/server/store/sqlite"
	"github.com/claude-relay/claude-relay/internal/server/store/storetest"
)

func open(t testing.TB) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "data", "relay.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return open(t) })
}

// TestTwoStores: two Stores on one file, as two processes.
func TestTwoStores(t *testing.T) {
	storetest.RunShared(t, storetest.Shared{Open: func(t *testing.T) (store.Store, store.Store) {
		path := filepath.Join(t.TempDir(), "relay.db")
		a, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = a.Close() })
		b, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return a, b
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
var migrations = []int{1, 2, 3, 4, 5, 6, 7, 8}

// ph numbers SQLite's placeholders for storetest's statements.
func ph(int) string { return "?" }

// TestBackfillApprovalPolicy: migration 8 gives the approvals stored
// before it the policy their requests carried.
func TestBackfillApprovalPolicy(t *testing.T) {
	s := openOld(t, 7, storetest.PolicyInserts(storetest.PolicyFixture(), ph))
	storetest.CheckApprovalPolicy(t, s, "pb-a")
}

// openOld opens a database that a release at schema version left, filled
// with stmts, and checks that opening it applied every later migration.
func openOld(t *testing.T, version int, stmts []storetest.Statement) *sqlite.Store {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), fmt.Sprintf("v%d.db", version))
	if err := sqlite.CreateOld(ctx, path, version, stmts); err != nil {
		t.Fatalf("create a v%d database: %v", version, err)
	}
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open a v%d database: %v", version, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if v, err := s.SchemaVersions(ctx); err != nil || !slices.Equal(v, migrations) {
		t.Fatalf("schema_migrations = %v, %v; want %v", v, err, migrations)
	}
	return s
}

func TestOpenCreatesPrivateDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "dir")
	s, err := sqlite.Open(context.Background(), filepath.Join(dir, "relay.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Errorf("directory mode %v, want 0700", perm)
	}
}

// TestMigrationsIdempotent opens one file repeatedly, also concurrently (as
// two processes starting at once would): each migration applies once.
func TestMigrationsIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "relay.db")
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			s, err := sqlite.Open(context.Background(), path)
			if err != nil {
				errs <- err
				return
			}
			errs <- s.Close()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent Open: %v", err)
		}
	}
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	if n, err := s.SchemaVersions(context.Background()); err != nil || !slices.Equal(n, migrations) {
		t.Errorf("schema_migrations = %v, %v; want %v", n, err, migrations)
	}
	// The file header's read and write versions (bytes 18 and 19) are 2 in
	// WAL mode: every concurrent opener saw the same mode.
	head := make([]byte, 20)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.ReadFull(f, head); err != nil {
		t.Fatal(err)
	}
	if head[18] != 2 || head[19] != 2 {
		t.Errorf("file format versions %d/%d, want 2/2 (WAL)", head[18], head[19])
	}
}

func TestOpenRejectsBadPath(t *testing.T) {
	for _, p := range []string{"", "a?b.db"} {
		if s, err := sqlite.Open(context.Background(), p); err == nil {
			_ = s.Close()
			t.Errorf("Open(%q) succeeded, want an error", p)
		}
	}
}

func BenchmarkIngest(b *testing.B) {
	for _, bc := range []struct {
		name  string
		batch int
	}{{"sqlite-single", 1}, {"sqlite-batch100", 100}} {
		b.Run(bc.name, func(b *testing.B) {
			storetest.BenchIngest(b, open(b), bc.batch)
		})
	}
}

// searchFixture is the search benchmarks' 10,000 sessions, built once.
var searchFixture storetest.Fixture

func searchStore(b *testing.B) store.Store {
	return searchFixture.Store(b, 10000, func() (store.Store, func() error, error) {
		dir, err := os.MkdirTemp("", "relay-search-")
		if err != nil {
			return nil, nil, err
		}
		s, err := sqlite.Open(context.Background(), filepath.Join(dir, "relay.db"))
		if err != nil {
			return nil, nil, errors.Join(err, os.RemoveAll(dir))
		}
		return s, func() error { return errors.Join(s.Close(), os.RemoveAll(dir)) }, nil
	})
}

// BenchmarkSessionSearch: a search of 10,000 sessions that matches ten (it
// reads every session's search text), against the unfiltered first page.
func BenchmarkSessionSearch(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		storetest.BenchSessionSearch(b, searchStore(b), store.ListOptions{Query: storetest.SearchRare}, 10)
	})
}

func BenchmarkSessionSearchBaseline(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		storetest.BenchSessionSearch(b, searchStore(b), store.ListOptions{}, 100)
	})
}

func TestMain(m *testing.M) {
	code := m.Run()
	if err := searchFixture.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	// Close must stop every goroutine the Store started.
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}
