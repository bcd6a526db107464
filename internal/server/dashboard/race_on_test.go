//go:build race

package dashboard_test

// raceEnabled: the race detector slows SQLite (pure Go) tenfold, so the
// large list test seeds the in-memory store instead.
const raceEnabled = true
