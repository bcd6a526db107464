//go:build unix

package cli

import "golang.org/x/sys/unix"

// fdOpen reports whether fd is an open descriptor of this process.
func fdOpen(fd int) bool {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	return err == nil
}
