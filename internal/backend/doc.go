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
// Auth: every route but /healthz needs a configured token, sent as
// "Authorization: Bearer <token>", or, for GET requests only, the HttpOnly
// cookie that /login sets (so the dashboard's fetch and EventSource calls
// work without the page ever seeing the token). With no token configured the
// server refuses everything except /healthz rather than run open.
//
// Wiring, as `claude-relay serve` and the embedded default backend do it:
//
//	st, err := sqlite.Open(ctx, path) // --db sqlite:PATH (or postgres)
//	defer st.Close()                  // after the server has stopped
//	srv := backend.New(backend.Options{
//		Store:  st,
//		Tokens: func() []config.Secret { return current().Serve.Tokens }, // reloadable
//		Logger: log,
//	})
//	ln, err := net.Listen("tcp", addr) // or "127.0.0.1:0" for an ephemeral port
//	err = backend.Serve(ctx, ln, srv)  // until ctx ends; graceful
package backend
