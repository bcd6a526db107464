// Package streamjson models the Claude Code CLI's stream-json protocol: the
// NDJSON lines the CLI writes on stdout when run with
// --output-format stream-json, and the lines we write to its stdin with
// --input-format stream-json.
//
// # Reading
//
// Decode turns one line into a Message. A Message always keeps the line's
// bytes in Raw, untouched, because the relay forwards every line verbatim: the
// typed views (System, Assistant, User, Result, StreamEvent, ControlRequest,
// ControlResponse, ControlCancelRequest) exist for the relay's own decisions,
// never for re-encoding. A line of a type we do not know, or with no type at
// all, decodes to a Message with only Raw, Type and Subtype set: it is never
// dropped.
//
// Decoding is deliberately lenient. The CLI changes between releases, so
// unknown fields are ignored and a field with an unexpected shape (a number
// where a string was expected, say) is left at its zero value instead of
// failing the whole line. Only a line that is not a JSON object is an error
// (*DecodeError).
//
// Decoding is a single json.Unmarshal into a struct holding the union of all
// top-level fields; bulky or rarely needed parts (message content, stream
// events, model usage, tool inputs) stay json.RawMessage and are decoded on
// demand, for example by APIMessage.Blocks or ParseToolResultContent.
//
// # Writing
//
// UserMessage, ControlRequest (with InitializeRequest, SetPermissionModeRequest
// and InterruptRequest), ControlResponseSuccess and ControlResponseError
// produce the lines we send. Encoders return one JSON object without the
// trailing newline; the writer adds it. A can_use_tool request is answered with
// ControlResponseSuccess(id, PermissionAllow(input)) or
// ControlResponseSuccess(id, PermissionDeny(msg, false)).
//
// The shapes follow seed 000 §3.3–3.6 and §12.1 and what CLAUDE_CLI_NOTES.md
// records of the real CLI 2.1.330.
package streamjson
