//go:build windows

package proc

import "syscall"

// SysProcAttr returns the attributes for starting a run's CLI: a process
// group of its own, so console interrupts meant for us do not reach it.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}
