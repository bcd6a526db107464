// Package remote brings decisions made in the backend's dashboard to the
// helper that asked (CONTRACT §10).
//
// While the run core has approvals pending, a Waiter keeps exactly one
// long-poll open to the backend:
//
//	GET {backend}/api/approvals/decisions?ids=<pending approval IDs>&wait=25s
//
// and answers the core with each decision it gets, as the dashboard (the
// decision's `by` and ID go with it into relay.approval_resolved). The core
// decides who wins: the first answer, from the extension, the terminal, the
// dashboard or the timeout; a decision that comes too late is dropped
// quietly. When the set of pending approvals changes, the poll in flight is
// cancelled and a new one asks about the new set; with nothing pending there
// is no request at all.
//
// Failures back off the way the forwarder's deliveries do (full jitter over
// a capped exponential, honouring Retry-After) and are logged once per
// streak, never per attempt: a backend without the decisions API (404, 405,
// 501: an older serve) is asked again only every few minutes, and a token it
// refuses (401, 403) is reported once with what to fix. A decision the core
// refuses (not one of the approval's options, say) is logged and that
// approval is not asked about again, so it cannot loop; it can still be
// answered in the editor or on the terminal.
package remote
