//go:build unix

package forwarder

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// tryLock takes f's exclusive lock without waiting. The lock belongs to the
// open file and goes with it when the process dies, so a killed helper
// never leaves a session locked.
func tryLock(f *os.File) (busy bool, err error) {
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("flock %s: %w", f.Name(), err)
	}
	return false, nil
}

// lockedElsewhere reports whether another open file holds f's exclusive
// lock, leaving it as it was.
func lockedElsewhere(f *os.File) bool {
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return true
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN) //nolint:errcheck
	return false
}
