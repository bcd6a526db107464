// Package launch builds how the Claude Code CLI is started, the same way for
// background runs (executor) and visible-terminal runs (terminal): which
// program runs (the discovered CLI, or a base-command override split like a
// shell would), the flags a session asks for (model, resume, fork, continue,
// max turns, appended system prompt, the typed prompt options such as
// allowed tools, add dirs, MCP servers or setting sources, extra
// arguments), and the environment
// (the helper's own, then claude.env, then the run's; filtered so that no
// entry can corrupt the process's environment block, and marked with the
// run's proc.MarkerEnv).
//
// Each mode adds only its own flags: executor the stream-json protocol
// flags, terminal --settings and the positional prompt. Keeping the shared
// part here is what keeps the two modes from drifting apart, as they did
// when the terminal path passed claude.env through unfiltered.
package launch
