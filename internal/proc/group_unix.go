//go:build unix

package proc

import "syscall"

func signalGroup(pgid int, sig syscall.Signal) error {
	if !groupSignallable(pgid) {
		return errNotSignallable
	}
	return syscall.Kill(-pgid, sig)
}

// groupSignallable guards kill(-pgid): 0 and 1 would hit our own group or
// every process we may signal, and our own group would include us.
func groupSignallable(pgid int) bool {
	return pgid > 1 && pgid != syscall.Getpgrp()
}
