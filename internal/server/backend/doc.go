// Package backend is the HTTP side of the reference backend (`claude-relay
// serve`, CONTRACT §6): event ingestion with idempotency on event_id, the
// read API, Server-Sent Event streams for live views, token auth, Prometheus
// metrics, and the dashboard pages from package dashboard.
//
// Storage is a store.Store; the server keeps no event state of its own. Live
// streams are driven by store.Subscribe notifications, but every stream reads
// what it sends from Store.Events(after), so a lost or coalesced
// notification delays an event and never drops it.
//
// Auth: every route but /healthz needs an accepted token, sent as
// "Authorization: Bearer <token>", or, for GET requests, the HttpOnly
// cookie that /login sets (so the dashboard's fetch and EventSource calls
// work without the page ever seeing the token). With no token configured the
// server refuses everything except /healthz rather than run open. Tokens
// come from Options.ServeTokens (serve.tokens, with names and scopes),
// Options.Tokens (ingest and read) and Options.Issued (the data dir's
// tokens.json, hashes only), all read on every request.
//
// Scopes (package tokens, CONTRACT §10): posting events needs ingest,
// deciding an approval needs approve, every other route read (approve
// implies it; admin is everything); GET /api/whoami only a valid token. A
// valid token without the scope gets 403 saying which scope and how to
// create a token with it. The cookie names the token it came from and is
// signed with its issue time (login.go), so the login's scopes apply, and
// revoking or rotating the token, 30 days, or logging out (the cookie's ID
// goes on a logout list in the data dir) end the login. It may also POST a
// decision, only with the header X-Claude-Relay: 1 and a same-origin
// Origin / Sec-Fetch-Site, which a cross-site form or fetch cannot produce;
// the login and logout forms need the same origin too. Failed logins lock
// an address out for a doubling time; a Host header that is not one of the
// server's names is refused (hosts.go, against DNS rebinding).
//
// Approvals (approvals.go, decisions.go): the list and one approval as the
// store folds them from relay.approval_* events; a decision is checked
// against the approval like the helper checks a reply, stored once
// (idempotent on decision_id), and reaches the helper through its
// long-poll, GET /api/approvals/decisions, which the store's notifications
// wake (every replica's, on PostgreSQL) with a periodic recheck behind
// them. A decision sent over a loopback connection by a process that a
// claude-relay run started is refused (selfapproval.go). A new pending
// approval is pushed to serve.notify_url once across replicas
// (push.go, Store.ClaimNotify; package push posts it): the tool and the
// project, the command only with serve.notify_include_input, and then
// redacted (package redact).
//
// Wiring, as `claude-relay serve` and the embedded default backend do it:
//
//	st, err := sqlite.Open(ctx, path) // --db sqlite:PATH (or postgres)
//	defer st.Close()                  // after the server has stopped
//	srv := backend.New(backend.Options{
//		Store:       st,
//		ServeTokens: func() []config.ServeToken { return current().Serve.Tokens }, // reloadable
//		Issued:      tokens.Open(tokens.Path(dataDir)),                            // `token create`
//		StateDir:    dataDir,                                                      // login key, logouts
//		Logger:      log,
//	})
//	ln, err := net.Listen("tcp", addr) // or "127.0.0.1:0" for an ephemeral port
//	err = backend.Serve(ctx, ln, srv)  // until ctx ends; graceful
package backend
