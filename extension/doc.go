// Package extension is the NDJSON protocol an editor extension speaks with
// `claude-relay extension` (CONTRACT §4): commands on stdin, events on
// stdout, one JSON object per line each way. protocol.schema.json in this
// directory describes both for extension authors; a test keeps it in step
// with the Go types here.
//
// The Server reads commands, runs several runs at once through the run core
// (relay.Core), writes events through one writer so lines never interleave,
// and answers every bad line with an error event while it keeps serving.
package extension
