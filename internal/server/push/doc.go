// Package push tells a phone that something waits (CONTRACT §10): with
// serve.notify_url set, the backend sends each new pending approval here as
// one short message, posted ntfy-style, so a phone can say "Claude is
// waiting for you". What a push says is the caller's; this package sends it.
//
// The request is ntfy's header form: the body is the message as
// text/plain, Title and Click (the approval's page) are headers, Tags: lock
// shows a 🔒, and X-Priority: high raises the notification above the
// default. Priority goes in X-Priority, which ntfy reads before Priority,
// because proxies such as Cloudflare set the HTTP "Priority" header
// (RFC 9218) on what they forward, and ntfy then ignores it.
// The URL may carry credentials (https://user:pass@host/topic, or
// ?auth=…), and the topic itself is a password on public servers, so logs
// name only the scheme and host (url.go).
//
// Delivery is best effort and never blocks the caller: Send queues, one
// worker posts, retrying network errors, 408, 429 (honouring Retry-After)
// and 5xx with capped, jittered exponential backoff for a bounded number of
// attempts (retry.go). A full queue drops the push with a warning: a push
// is a nudge, and the approval itself stays pending on the dashboard.
//
// Log lines and errors keep the "backend:" prefix they had before this
// package was split out of the backend: to the person reading them, the
// pushes are the backend's (claude-relay serve).
package push
