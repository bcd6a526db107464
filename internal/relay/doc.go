// Package relay is the run core every front end shares: the extension
// protocol server, `claude-relay run`, and next the ACP agent. A Core starts
// background runs with the executor, brokers their approvals, cancels them,
// and remembers each workspace's last conversation.
//
// Its one rule: every event a run produces is written to the spool (the
// forwarder) before any front end sees it. Run.Event is the single place
// where that happens; a front end only ever receives events through its Sink,
// after the spool took them, so it can never show an event the backend could
// miss.
package relay
