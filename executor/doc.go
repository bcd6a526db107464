// Package executor runs the Claude Code CLI in the background: it builds the
// command line, starts the CLI in its own process group, speaks the
// stream-json control protocol (initialize, set_permission_mode, the user
// message, can_use_tool, hook_callback, interrupt), reports every stdout line
// in order to an Observer, asks an Approver about tools, aggregates the
// result as seed 002 defines it, and stops the whole process tree, tools in
// sessions of their own included, when a run is cancelled or ends.
//
// It knows nothing of the extension protocol or HTTP, but for one thing:
// RunOptions are the contract's prompt options (CONTRACT §7), JSON names
// included, so every front end declares and validates them in one place.
package executor
