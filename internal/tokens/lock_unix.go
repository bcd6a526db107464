//go:build unix

package tokens

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive flock(2) on path (created 0600), so two
// `token create` runs never lose one another's token.
func lockFile(path string) (unlock func(), err error) {
	fh, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(int(fh.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		fh.Close()
		return nil, err
	}
	// Closing the descriptor releases the lock.
	return func() { fh.Close() }, nil
}
