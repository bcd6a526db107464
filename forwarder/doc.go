// Package forwarder delivers events to the backend durably, in order and
// exactly once, without ever making the producer wait on the network.
//
// Enqueue assigns an event ID and a per-(session, interaction) seq and
// appends one CRC-framed record to the session's spool segment with a single
// write(2); a timer fsyncs (or every event, if configured). Each session has
// its own spool directory and one delivery goroutine, so one request is in
// flight per session (order) while sessions proceed in parallel. Delivery is
// strictly in order within a session, so what the backend acknowledged is a
// single position (segment, offset), persisted like a consumer offset; a
// restart seeks there and reads only the tail it needs. Segments are deleted
// only when fully acknowledged. Records carry a magic number and a CRC32-C:
// a torn or corrupt tail is detected, reported and skipped, never a crash
// loop, and records before it (and valid ones after it) are delivered.
//
// Only the backend's word acknowledges an event: 201, or 200 whose JSON
// says {"duplicate":true} for that event_id; in a batch, a per-event result
// naming the event's event_id (answer.go). Anything else that answers (a
// web server's 200 page at a wrong backend.url, a redirect, a 404 for the
// event endpoint) acknowledges nothing: the event stays, the error handler
// hears it once (CodeNotBackend), and delivery goes on trying.
//
// Retries go on for ever while running: transport errors, 408, 425, 429 and
// 5xx back off with full jitter, honouring Retry-After. Other 4xx move the
// event to a dead-letter file; 401 and 403 are reported loudly and the
// events stay, so a fixed token delivers them. The backend de-duplicates on
// event_id, which makes at-least-once delivery exactly-once. One exception
// to "for ever": a poison event, refused with a 5xx other than 503
// Options.PoisonAfter times in a row (20) while the backend is seen
// storing another session's events in between, is dead-lettered so that
// its session goes on. A backend down for everyone stores nothing, so an
// outage dead-letters nothing (retry.go).
//
// Each session spool records the backend its events were spooled for
// (destination.go): a base URL, or "local:<data dir>" for a data dir's own
// backend, whose port changes every run. A forwarder delivers only its own
// destination's spools; others wait for their backend, or for Options.Move
// (`spool flush --to`). Spools from before destinations were recorded go
// to the first forwarder that opens them.
//
// Size: the helper takes CLI lines larger than a backend may (128 MiB
// against the reference backend's 8 MiB per event). Batches carry at most
// 4 MiB and a larger record goes alone; a batch the backend refuses with
// 413 is split in halves, never dead-lettered. An event refused with 413
// alone is kept whole in dead/<session>~oversize.jsonl and a stand-in with
// the same event_id and seq takes its place at the backend: its type, size,
// SHA-256 and first 2 KiB (oversize.go). The session's record has no gap,
// nothing overtakes the event, nothing is lost here, and the error handler
// hears of it once (CodeDeadLetter).
//
// Open builds the whole forwarder, adopting the spools earlier processes
// left, and starts no goroutine; Start then hands what Open found to the
// error handler and begins delivery (as promtail and litestream separate
// building from running), so the caller can wire the handler to something
// that needs the forwarder first. Stop drains and closes.
//
// A session's spool is kept by one process at a time with flock(2), so the
// package, and claude-relay with it, builds on Unix systems only.
package forwarder
