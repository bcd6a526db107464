package sqlite_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/claude-relay/claude-relay/internal/store"
	"github.com/claude-relay/claude-relay/internal/store/sqlite"
	"github.com/claude-relay/claude-relay/internal/store/storetest"
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
	if n, err := s.SchemaVersions(context.Background()); err != nil || len(n) != 1 || n[0] != 1 {
		t.Errorf("schema_migrations = %v, %v; want [1]", n, err)
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

func TestMain(m *testing.M) {
	// Close must stop every goroutine the Store started.
	goleak.VerifyTestMain(m)
}
