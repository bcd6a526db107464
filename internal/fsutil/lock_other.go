//go:build !unix

package fsutil

// claude-relay runs on Unix systems only (see the forwarder's lock_other.go):
// Lock is flock(2). This package sits under the others that need Unix
// (proc, the forwarder, tokens), so a build elsewhere stops here, with this
// name, instead of listing their undefined names. On Windows, use WSL.
const _ = claude_relay_builds_only_on_unix__on_windows_use_WSL
