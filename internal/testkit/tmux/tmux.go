// Package tmux drives a terminal program in a detached tmux server of its
// own, for tests of what a person sees: send keys, read the screen.
package tmux

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Require skips the test when tmux is missing, or fails it under CI=true,
// where the TTY tests must run.
func Require(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("tmux not found (%v): the terminal tests need it on CI", err)
		}
		t.Skipf("tmux not found: %v", err)
	}
}

// Session is one tmux server (its own socket, removed with the test)
// running one command in a 200x50 window.
type Session struct {
	t       testing.TB
	sock    string
	screens []string // the last distinct screens, for failure reports
}

var count atomic.Int64

// Start runs command (a shell command line) in a new detached session.
func Start(t testing.TB, command string) *Session {
	t.Helper()
	Require(t)
	// A unix socket path has room for about 100 bytes: t.TempDir can be longer.
	dir, err := os.MkdirTemp("/tmp", "tmux")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := &Session{t: t, sock: filepath.Join(dir, fmt.Sprintf("s%d", count.Add(1)))}
	if out, err := s.run("-f", "/dev/null", "new-session", "-d", "-x", "200", "-y", "50", "-s", "t", command); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() { s.run("kill-server") }) //nolint:errcheck // it may have ended with its command
	return s
}

func (s *Session) run(args ...string) ([]byte, error) {
	cmd := exec.Command("tmux", append([]string{"-S", s.sock}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TMUX=") && !strings.HasPrefix(kv, "TMUX_PANE=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	return cmd.CombinedOutput()
}

// Screen is what the window shows now.
func (s *Session) Screen() string {
	out, err := s.run("capture-pane", "-p", "-J", "-t", "t")
	if err != nil {
		return ""
	}
	scr := string(out)
	if n := len(s.screens); n == 0 || s.screens[n-1] != scr {
		s.screens = append(s.screens, scr)
		if len(s.screens) > 8 {
			s.screens = s.screens[1:]
		}
	}
	return scr
}

// Keys types keys (tmux send-keys syntax; "-l" first for literal text).
func (s *Session) Keys(keys ...string) {
	s.t.Helper()
	if out, err := s.run(append([]string{"send-keys", "-t", "t"}, keys...)...); err != nil {
		s.t.Logf("tmux send-keys %q: %v: %s", keys, err, out)
	}
}

// WaitFor polls the screen until ok accepts it or d passes, and reports
// whether it did.
func (s *Session) WaitFor(d time.Duration, ok func(screen string) bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if ok(s.Screen()) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// Fail logs the last screens and fails the test.
func (s *Session) Fail(format string, args ...any) {
	s.t.Helper()
	s.Screen()
	for i, scr := range s.screens {
		s.t.Logf("screen %d of the last %d:\n%s", i+1, len(s.screens), scr)
	}
	s.t.Fatalf(format, args...)
}

// Quote quotes s for a POSIX shell.
func Quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
