// Package terminal runs the interactive Claude Code CLI in the user's
// terminal (seed 002's TerminalExecutor) and still forwards everything it
// does: a --settings file adds hooks for every hook event, pointing at a
// loopback callback server with a per-run secret (HTTP hooks, or a command
// hook that calls `claude-relay hook-post` where the CLI does not honour
// HTTP), and the session transcript named by the first hook is tailed with
// fsnotify. Hook inputs become hook.<Event> events, transcript lines
// transcript.<type> events; the run is framed by relay.run_started and an
// end event carrying the CLI's exit status: relay.run_completed when it
// exits 0, relay.run_failed otherwise (or when it cannot start), and
// relay.run_cancelled when Run's context ends and we stop it.
package terminal
