//go:build windows

package proc

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// On Windows a process is known by its pid alone, nothing but SIGKILL can be
// sent, and there are neither groups nor a way to find marked processes.

const stillActive = 259 // STILL_ACTIVE exit code

// Lookup returns the identity of the process with the pid.
func Lookup(pid int) (Proc, error) {
	if !Alive(Proc{PID: pid}) {
		return Proc{}, fmt.Errorf("%w: pid %d", ErrNotFound, pid)
	}
	return Proc{PID: pid}, nil
}

// Alive reports whether a running process has p's pid.
func Alive(p Proc) bool {
	if p.PID <= 0 {
		return false
	}
	h, err := syscall.OpenProcess(syscall.PROCESS_QUERY_INFORMATION, false, uint32(p.PID))
	if err != nil {
		return false
	}
	defer syscall.CloseHandle(h)
	var code uint32
	return syscall.GetExitCodeProcess(h, &code) == nil && code == stillActive
}

// FindMarked is not supported on Windows.
func FindMarked(runID string) ([]Proc, error) {
	return nil, fmt.Errorf("proc: find processes of run %q: %w", runID, errors.ErrUnsupported)
}

// Descendants finds nothing on Windows.
func Descendants(root int) []Proc { return nil }

func members(t Tree) []Proc {
	if t.Root.PID != os.Getpid() && Alive(t.Root) {
		return []Proc{t.Root}
	}
	return nil
}

func pgrpOf(Proc) (int, bool) { return 0, false }

func signalProc(p Proc, sig syscall.Signal) error {
	if p.PID <= 0 || p.PID == os.Getpid() {
		return errNotSignallable
	}
	if sig != syscall.SIGKILL {
		return fmt.Errorf("proc: send %v to pid %d: %w", sig, p.PID, errors.ErrUnsupported)
	}
	pr, err := os.FindProcess(p.PID)
	if err != nil {
		return fmt.Errorf("proc: find pid %d: %w", p.PID, err)
	}
	defer pr.Release()
	return pr.Kill()
}

func signalGroup(int, syscall.Signal) error { return errors.ErrUnsupported }
