// Package acp is the Agent Client Protocol front end (CONTRACT §8):
// `claude-relay acp` speaks ACP (JSON-RPC 2.0 over stdio) to Zed and every
// ACP client, and runs each ACP session as one live run of the run core
// (package relay), so every event is spooled and forwarded like a
// background run's.
//
// The codec and the protocol types are github.com/coder/acp-go-sdk's: they
// are generated from ACP's own schema, and the connection handles
// cancellation and ordering of notifications, which a hand-written codec
// would have to get right again.
package acp
