// Package discovery finds the Claude Code CLI binary the relay should run.
//
// Find looks in a fixed order of places (an explicitly configured path, then
// PATH, nvm, Homebrew, ~/.local/bin, the global npm package, ~/.claude/local,
// every version `make deps` installed in the claude-relay cache and any extra
// directories), asks every distinct install for its version concurrently,
// and picks the highest semantic version. Earlier places win ties, so the
// install a user's shell would run is preferred when versions match.
//
// The package never reads the environment itself: callers pass HOME, PATH
// and the cache directory (CacheDir computes it) in Options, which keeps
// discovery deterministic and testable.
package discovery
