//go:build !unix && !windows

package proc

import (
	"errors"
	"fmt"
	"syscall"
)

// This platform can neither look up nor signal processes.

// Lookup is not supported on this platform.
func Lookup(pid int) (Proc, error) {
	return Proc{}, fmt.Errorf("proc: look up pid %d: %w", pid, errors.ErrUnsupported)
}

// Alive always reports false on this platform.
func Alive(Proc) bool { return false }

// FindMarked is not supported on this platform.
func FindMarked(runID string) ([]Proc, error) {
	return nil, fmt.Errorf("proc: find processes of run %q: %w", runID, errors.ErrUnsupported)
}

// Descendants finds nothing on this platform.
func Descendants(int) []Proc { return nil }

func members(Tree) []Proc { return nil }

func pgrpOf(Proc) (int, bool) { return 0, false }

func signalProc(Proc, syscall.Signal) error { return errors.ErrUnsupported }

func signalGroup(int, syscall.Signal) error { return errors.ErrUnsupported }
