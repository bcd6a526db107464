//go:build unix && !linux

package proc

import "syscall"

// SysProcAttr returns the attributes for starting a run's CLI: a process
// group of its own, so the group can be signalled without hitting us. There
// is no parent-death signal outside Linux.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
