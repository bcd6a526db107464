//go:build unix && !linux

package pgtest

import "syscall"

// sysProcAttr puts the server in a process group of its own and runs it as
// cred.
func sysProcAttr(cred *owner) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred}
}
