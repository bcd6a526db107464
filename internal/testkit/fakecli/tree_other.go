//go:build !unix

package fakecli

import (
	"errors"
	"os/exec"
)

var errNoTree = errors.New("ModeGrandchild needs setsid, which only unix has")

func startTree() (*exec.Cmd, int, error) { return nil, 0, errNoTree }

func runTreeChild() int { return 1 }

func runTreeLeaf() int { return 1 }
