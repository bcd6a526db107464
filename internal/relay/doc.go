// Package relay is the run core every front end shares: the extension
// protocol server, `claude-relay run`, and the ACP agent. A Core starts
// background runs with the executor, brokers their approvals, cancels them,
// and remembers each workspace's last conversation.
//
// Its one rule: every event a run produces is written to the spool (the
// forwarder) before any front end sees it. Run.Event is the single place
// where that happens; a front end only ever receives events through its Sink,
// after the spool took them, so it can never show an event the backend could
// miss.
//
// An approval is answered once: the first answer wins, whether it comes
// from the front end (Answer), from the backend's dashboard (Answer again,
// by internal/remote, which waits on Pending), or from the timeout. The
// outcome is settled in the same step as it is taken, so every later reply
// gets a DecidedError naming the winner, and a front end whose question was
// answered elsewhere gets KindApprovalCancelled saying by whom.
//
// A helper that dies mid-run spools no end for its runs. EndDeadRuns, which
// every start calls once its spool is open, spools it in its stead:
// relay.run_failed with reason helper_exited, in the run's interaction,
// numbered after the run's own events.
package relay
