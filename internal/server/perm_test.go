package server

import (
	"bytes"
	"github.com/claude-relay/claude-relay/internal/localbackend"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWarnLooseDirs: a data dir or database directory that other users may
// read or write is named in a warning; private ones are not.
func TestWarnLooseDirs(t *testing.T) {
	data, dbDir := t.TempDir(), t.TempDir()
	for _, d := range []string{data, dbDir} {
		if err := os.Chmod(d, 0o700); err != nil { // TempDir makes them 0777 less the umask
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	o := localbackend.Options{DataDir: data, DB: "sqlite:" + filepath.Join(dbDir, "relay.db"), Logger: slog.New(slog.NewTextHandler(&buf, nil))}
	warnLooseDirs(o)
	if buf.Len() != 0 {
		t.Fatalf("private directories warned about:\n%s", buf.String())
	}
	for _, d := range []string{data, dbDir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	warnLooseDirs(o)
	out := buf.String()
	if strings.Count(out, "open to other users") != 2 || !strings.Contains(out, "dir="+data) || !strings.Contains(out, "dir="+dbDir) ||
		!strings.Contains(out, "mode=0755") {
		t.Errorf("want a warning naming each directory and its mode:\n%s", out)
	}
}
