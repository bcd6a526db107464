//go:build unix

package pgtest

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// owner is the OS user the server runs as; nil means the current one.
type owner = syscall.Credential

// credential returns nil unless we are root, whom initdb refuses: then the
// "postgres" user.
func credential() (*owner, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root needs a \"postgres\" OS user to run the server as: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("pgtest: uid of postgres: %w", err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("pgtest: gid of postgres: %w", err)
	}
	return &owner{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func chown(dir string, cred *owner) error {
	if cred == nil {
		return nil
	}
	if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
		return fmt.Errorf("pgtest: hand %s to the postgres user: %w", dir, err)
	}
	return nil
}

// killGroup SIGKILLs the process group p leads.
func killGroup(p *os.Process) {
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
}
