//go:build !unix

package forwarder

import "os"

// claude-relay runs on Unix systems only (Linux, macOS, the BSDs): the
// spool relies on flock(2) to keep two processes off one session, which
// Windows does not have. This file exists to say so at build time rather
// than with a list of undefined syscall names; on Windows, build and run
// claude-relay inside WSL.
const _ = claude_relay_builds_only_on_unix__on_windows_use_WSL

func tryLock(*os.File) (bool, error) { panic("unreachable") }
func lockedElsewhere(*os.File) bool  { panic("unreachable") }
