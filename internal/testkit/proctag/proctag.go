// Package proctag finds and kills the processes an end-to-end test started,
// however they were started (a tmux pane, a shell, a browser): the test puts
// Env=<tag> in their environment, which every child inherits, and reads it
// back from /proc (Linux; elsewhere nothing is found).
package proctag

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Env is the variable that carries a test's tag.
const Env = "CLAUDE_RELAY_E2E_TAG"

// Entry is the "NAME=value" environment entry for tag.
func Entry(tag string) string { return Env + "=" + tag }

// Find lists the live processes whose environment carries tag.
func Find(tag string) []int {
	entry := []byte(Entry(tag) + "\x00")
	dirs, _ := os.ReadDir("/proc")
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", d.Name(), "environ"))
		if err != nil || !bytes.Contains(env, entry) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && bytes.HasPrefix(st[i+1:], []byte(" Z")) {
				continue // a zombie is dead
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// Kill kills what is left of tag's processes and fails t if some survive.
func Kill(t testing.TB, tag string) {
	t.Helper()
	for range 50 {
		pids := Find(tag)
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL) // it may be gone already
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("processes of %s survive SIGKILL: %v", tag, Find(tag))
}
