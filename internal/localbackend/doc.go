// Package localbackend owns the reference backend that runs on this machine
// for one data dir, and how commands find it.
//
// A data dir has at most one `serve`. It holds an exclusive flock on
// serve.lock (with its pid written inside) and advertises where it listens
// in serve.json (Acquire, Lock.Advertise). Commands that need a backend and
// have none configured look for that serve (Find) and, finding none, start
// the embedded default (StartChild, or package server's StartEmbedded). Both
// accept the data dir's two generated tokens besides the configured serve
// tokens: serve.token (Token), named "default", with the scopes ingest and
// read, which people log in to the dashboard with; and helper.token
// (HelperToken), named "helper", with ingest and decisions only, which
// helpers post and poll with: it reads no session and decides nothing.
// Neither can approve. Both are 0600 files of the user the agent runs as,
// so they keep nothing from the agent (SECURITY.md); they keep other users
// out, and narrow what a token copied elsewhere can do.
//
// Only the lock is trusted: the kernel drops it when its process dies, while
// a SIGKILLed serve leaves its serve.json behind. serve.json counts only
// when it names the pid the lock holder wrote into serve.lock.
//
// The embedded default takes no part in the lock and never advertises:
// several helpers (an editor's, a shell's `run`) may each run one at once,
// and a `serve` started meanwhile must not be refused because an editor is
// open, nor hijacked by it. It and a serve started later share the store
// (SQLite takes several processes, and ingest is idempotent by event_id), so
// nothing is lost; only serve's live views miss what the embedded default
// stores until they are reloaded, and helpers started after serve use serve.
//
// # Two executables
//
// The backend's code (the store, the dashboard with its Markdown renderer
// and sanitiser, /metrics) lives in package server, which only
// claude-relay-server (ServerName) links: Go runs the package init of all
// an executable links, and those libraries would cost every helper and
// every hook process the CLI starts. This package stays light, so
// claude-relay links it to reach the server:
//
//   - `claude-relay serve` becomes claude-relay-server's serve by exec(2),
//     before the command line is parsed further: same pid, streams,
//     signals and environment (the token descriptor included).
//   - the embedded default of a claude-relay helper is claude-relay-server
//     ChildCommand, its child (StartChild). It reads its options, secrets
//     included, as JSON lines on its stdin (none in its environment or
//     argv), says where it listens on its stdout, and lives as long as its
//     stdin: the helper's Close, or its death however it dies, ends it (on
//     Linux Pdeathsig as well). Its process group is its own, so a Ctrl-C
//     stops the helper's run, not the backend the helper drains into
//     afterwards. A configuration reload is handed on as another line.
//
// claude-relay-server is looked for beside claude-relay only (ServerPath),
// so a helper never runs another version's server found on PATH.
//
// The package takes plain values (a data dir, Options); reading the
// configuration is the caller's job.
package localbackend
