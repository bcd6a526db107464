//go:build unix

package localbackend

import "golang.org/x/sys/unix"

// flock(2), the one platform call the data dir's lock needs.
const (
	lockEx = unix.LOCK_EX
	lockSh = unix.LOCK_SH
	lockNb = unix.LOCK_NB
	lockUn = unix.LOCK_UN
)

var errWouldBlock = unix.EWOULDBLOCK

func flock(fd, how int) error { return unix.Flock(fd, how) }
