// Package tokens holds what `serve` knows about who may do what: the scopes
// a backend token carries, and the token file in the data dir where
// `claude-relay token create` keeps the tokens it issued (CONTRACT §10).
//
// # Scopes
//
// ingest posts events; read reads the API, the live streams and the
// dashboard; approve decides approvals and implies read (a phone must see
// what it approves); admin is everything. A plain serve.tokens entry, the
// data dir's generated token and backend.token carry ingest and read, so
// the token the helper posts with can never approve.
//
// # The token file
//
// $data_dir/tokens.json (0600) lists issued tokens by id, name, scopes and
// creation time, and holds only digests of each token: SHA-256 of the
// token (what a Bearer header is checked against) and SHA-256 of the
// dashboard cookie derived from it (CookieMAC). Neither can be turned back
// into something that authenticates, so a copy of the file (a backup, a
// screen share) lets nobody in. A fast hash is enough because the tokens
// are 256-bit random values, not passwords: a slow hash (bcrypt, argon2)
// defends low-entropy secrets against guessing, and there is nothing to
// guess here, while every API request would pay for it.
//
// Create and Revoke hold an flock on tokens.json.lock and replace the file
// atomically; Entries stats the file on every call and re-reads it when it
// changed, so `serve` honours a create or a revoke from another process at
// its next request, without a restart.
package tokens
