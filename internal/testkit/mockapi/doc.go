// Package mockapi is a scripted Anthropic Messages API server for tests.
//
// It lets the real Claude Code CLI run whole agentic turns offline: point
// ANTHROPIC_BASE_URL at [Server.URL] and the CLI's requests to
// POST /v1/messages get Server-Sent-Events streams (or JSON bodies when the
// request has "stream": false) built from a [Script].
//
// The reply to a main-conversation request is chosen from that request's own
// conversation state, not from a global counter: turn i of the script answers
// a request whose messages already hold i assistant messages. A retried
// request, a denied tool or a resumed session therefore gets the same,
// predictable reply, and once the script is exhausted every further request
// gets a short final text ("done") with stop_reason end_turn, so the CLI can
// never loop on a tool call.
//
// Requests that are not the main conversation (session-title generation,
// the auto-mode safety classifier, subagents, and other side tasks) are
// answered with a plausible text and never select a script turn or consume
// a scripted failure. A request is the main conversation when it carries tool
// definitions, asks for no structured output or stop sequences, and is not
// marked as a subagent's; see [Request.Main].
//
// Every request is recorded for assertions ([Server.Requests],
// [Server.LastMainRequest], [Server.ToolResults]).
package mockapi
