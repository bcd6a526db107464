// Package runview is `claude-relay run`'s terminal front end: the view of a
// run's events (a live view with a spinner on a terminal, plain lines
// elsewhere, or the extension protocol's events with --json), the questions
// it asks on the terminal for approvals, plans and the model's questions,
// and the reader of -i's follow-up messages. internal/cli wires it to a
// host; it knows nothing of flags or configuration.
package runview
