//go:build linux

package proc

import "syscall"

// SysProcAttr returns the attributes for starting a run's CLI: a process
// group of its own, so the group can be signalled without hitting us, and
// SIGTERM when the helper dies, which makes the CLI stop its running tool
// even if the helper was SIGKILLed.
//
// Pdeathsig fires when the OS thread that forked the child exits, not when
// the process does. The Go runtime only ends threads whose goroutine exits
// while locked with runtime.LockOSThread, so do not start the CLI from a
// LockOSThread'd goroutine.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
