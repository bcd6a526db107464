//go:build unix

package discovery

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
)

// killGroupOnCancel starts the child in its own process group and makes
// context cancellation kill the whole group: a shell wrapper around the CLI
// would otherwise leave its children running, holding our pipes open.
func killGroupOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// SIGKILL directly: --version and npm root have no state to save.
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
}

func isExecutable(fi fs.FileInfo) bool {
	return fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

func exeNames(base string) []string { return []string{base} }
