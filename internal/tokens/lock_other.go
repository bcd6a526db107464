//go:build !unix

package tokens

// claude-relay runs on Unix systems only (see the forwarder's lock_other.go):
// the token file's lock is flock(2). On Windows, use WSL.
const _ = claude_relay_builds_only_on_unix__on_windows_use_WSL

func lockFile(string) (func(), error) { panic("unreachable") }
