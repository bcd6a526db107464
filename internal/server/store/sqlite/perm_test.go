package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/server/store/sqlite"
)

// withUmask022 runs the test under the common umask, under which files
// created 0666 (SQLite's default) come out 0644: readable by everyone. The
// umask is process-wide, so these tests are not parallel.
func withUmask022(t *testing.T) {
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })
}

// appendSome writes events of a new session through s, so the WAL and its
// index exist and have been written to.
func appendSome(t *testing.T, s *sqlite.Store, session string) {
	t.Helper()
	var evs []store.Event
	for i := range 20 {
		evs = append(evs, store.Event{SessionID: session, InteractionID: "i1", EventID: fmt.Sprintf("%s-e%d", session, i), Seq: int64(i + 1),
			EventType: "assistant", EventData: json.RawMessage(`{"type":"assistant"}`), Timestamp: time.Now(), Source: "agent"})
	}
	if _, err := s.Append(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
}

func checkPrivate(t *testing.T, path string) {
	t.Helper()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if got := fi.Mode().Perm(); got != 0o600 {
			t.Errorf("%s has mode %#o, want 0600", filepath.Base(p), got)
		}
	}
}

// TestFilesArePrivate: the database, its WAL and its shared-memory file are
// 0600 after real writes, wherever the database is and whatever the
// umask lets through.
func TestFilesArePrivate(t *testing.T) {
	withUmask022(t)
	// A directory that protects nothing (--db sqlite:/elsewhere).
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "relay.db")
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	appendSome(t, s, "s1")
	checkPrivate(t, path)
}

// TestOpenTightensAnOldDatabase: a database an older release left 0644,
// with its WAL and index, is 0600 after Open and writes.
func TestOpenTightensAnOldDatabase(t *testing.T) {
	withUmask022(t)
	path := filepath.Join(t.TempDir(), "relay.db")
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	appendSome(t, s, "s1")
	// Loosen everything as before, while the files are open, then reopen
	// beside the first store (a second process).
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(p, 0o644); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	s2, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	appendSome(t, s2, "s2")
	checkPrivate(t, path)
	_ = s2.Close()
	_ = s.Close()
	// A database whose WAL is gone (a clean close) gets a 0600 one anew.
	s3, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	appendSome(t, s3, "s3")
	checkPrivate(t, path)
}

// TestLooseDir: a directory others may read or write is reported with its
// mode; a private one is not.
func TestLooseDir(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		mode  fs.FileMode
		loose bool
	}{{0o700, false}, {0o711, false}, {0o750, true}, {0o755, true}, {0o733, true}} {
		if err := os.Chmod(dir, tc.mode); err != nil {
			t.Fatal(err)
		}
		if mode, loose := sqlite.LooseDir(dir); loose != tc.loose || mode != tc.mode {
			t.Errorf("%#o: LooseDir = %#o, %v; want %v", tc.mode, mode, loose, tc.loose)
		}
	}
	if _, loose := sqlite.LooseDir(filepath.Join(dir, "missing")); loose {
		t.Error("a missing directory is reported")
	}
}
