package pgtest

import "syscall"

// sysProcAttr puts the server in a process group of its own, runs it as
// cred, and has the kernel stop it (SIGINT: fast shutdown) if the test
// binary dies without calling Stop.
func sysProcAttr(cred *owner) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred, Pdeathsig: syscall.SIGINT}
}
