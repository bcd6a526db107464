//go:build unix

package fsutil

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Lock takes a flock(2) on path (created 0600 if missing), shared or
// exclusive, waiting for it. Closing the returned unlock releases it. Lock
// a file that is never replaced, so every process locks the same inode.
func Lock(path string, exclusive bool) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	for {
		err = unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	// Closing the descriptor releases the lock.
	return func() { f.Close() }, nil
}
