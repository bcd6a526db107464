//go:build unix

package backend

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockPath takes a flock(2) on path+".lock" (created 0600), shared or
// exclusive. The lock file is never replaced, unlike path itself, so every
// process locks the same inode.
func lockPath(path string, exclusive bool) (unlock func(), err error) {
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
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
