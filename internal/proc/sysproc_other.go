//go:build !unix && !windows

package proc

import "syscall"

// SysProcAttr returns the default attributes: this platform has no process
// groups.
func SysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
