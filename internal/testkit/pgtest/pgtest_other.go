//go:build !unix

package pgtest

import (
	"os"
	"syscall"
)

type owner struct{}

// credential: pgtest starts servers on unix systems only.
func credential() (*owner, error) { return nil, ErrNoPostgres }

func chown(string, *owner) error { return nil }

func killGroup(p *os.Process) { _ = p.Kill() }

func sysProcAttr(*owner) *syscall.SysProcAttr { return nil }
