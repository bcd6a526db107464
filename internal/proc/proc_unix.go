//go:build unix && !linux

package proc

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// Without /proc a process is known by its pid alone: StartTime stays zero, so
// a reused pid cannot be told apart, and zombies count as alive.

// Lookup returns the identity of the process with the pid.
func Lookup(pid int) (Proc, error) {
	if pid <= 0 || !exists(pid) {
		return Proc{}, fmt.Errorf("%w: pid %d", ErrNotFound, pid)
	}
	return Proc{PID: pid}, nil
}

// Alive reports whether a process has p's pid.
func Alive(p Proc) bool { return p.PID > 0 && exists(p.PID) }

func exists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// FindMarked is not supported without /proc.
func FindMarked(runID string) ([]Proc, error) {
	return nil, fmt.Errorf("proc: find processes of run %q: %w", runID, errors.ErrUnsupported)
}

// Descendants finds nothing without /proc.
func Descendants(root int) []Proc { return nil }

func members(t Tree) []Proc {
	if t.Root.PID != os.Getpid() && Alive(t.Root) {
		return []Proc{t.Root}
	}
	return nil
}

func pgrpOf(p Proc) (int, bool) {
	if !Alive(p) {
		return 0, false
	}
	g, err := syscall.Getpgid(p.PID)
	return g, err == nil
}

func signalProc(p Proc, sig syscall.Signal) error {
	if p.PID <= 0 || p.PID == os.Getpid() {
		return errNotSignallable
	}
	return syscall.Kill(p.PID, sig)
}
