//go:build !unix

package localbackend

import "errors"

// claude-relay runs on Unix systems only (see the forwarder's lock_other.go):
// one serve per data dir relies on flock(2). On Windows, use WSL.
const _ = claude_relay_builds_only_on_unix__on_windows_use_WSL

const lockEx, lockSh, lockNb, lockUn = 0, 0, 0, 0

var errWouldBlock = errors.New("unreachable")

func flock(int, int) error { panic("unreachable") }
