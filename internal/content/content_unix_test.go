//go:build unix

package content

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
)

// A FIFO would block the open forever; it must be refused from its stat.
func TestBuildRefusesFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	_, err := Build("", []Block{{Type: "file", Path: "pipe"}}, dir, Limits{})
	want := `content[0].path "pipe": not a regular file (p---------); name a file`
	if err == nil || err.Error() != want || !errors.Is(err, ErrNotFile) {
		t.Fatalf("Build error %v, want %q wrapping ErrNotFile", err, want)
	}
}
