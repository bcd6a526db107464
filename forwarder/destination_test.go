package forwarder

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestURLDestination(t *testing.T) {
	cases := map[string]string{
		"http://127.0.0.1:8787":              "http://127.0.0.1:8787",
		"http://127.0.0.1:8787/":             "http://127.0.0.1:8787",
		"HTTPS://Relay.Example.COM:443/":     "https://relay.example.com",
		"http://relay.example.com:80/x/":     "http://relay.example.com/x",
		"https://user:secret@relay.example":  "https://relay.example",
		"https://relay.example/?token=abc#f": "https://relay.example",
		"not a url/":                         "not a url",
	}
	for in, want := range cases {
		if got := URLDestination(in); got != want {
			t.Errorf("URLDestination(%q) = %q, want %q", in, got, want)
		}
	}
	if got := LocalDestination("/data/../data/relay/"); got != "local:/data/relay" {
		t.Errorf("LocalDestination = %q", got)
	}
	if dir, ok := IsLocalDestination("local:/data/relay"); !ok || dir != "/data/relay" {
		t.Errorf("IsLocalDestination = %q, %v", dir, ok)
	}
}

// spoolFor leaves n undelivered events of session in dir, spooled for
// dest while its backend was down.
func spoolFor(t *testing.T, dir, dest, session string, n int) {
	t.Helper()
	opts := fastOpts(dir, downSink(t).srv.URL)
	opts.Destination = dest
	f, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	f.Start()
	for i := range n {
		if _, err := f.Enqueue(event(session, "i-"+dest, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Stop(ctxTimeout(t, 20*time.Millisecond)); !errors.Is(err, ErrUndelivered) {
		t.Fatalf("Stop = %v", err)
	}
}

// TestEventsGoOnlyWhereTheyWereMeantToGo: events spooled for backend A are
// not delivered to backend B by a forwarder for B, which names them
// (Elsewhere) and delivers its own beside them; Move takes them over for
// B, re-recording them, and B gets them once; a forwarder for A again
// then finds nothing of A's.
func TestEventsGoOnlyWhereTheyWereMeantToGo(t *testing.T) {
	const destA = "https://a.example"
	dir := t.TempDir()
	spoolFor(t, dir, destA, "s", 7)

	b := newSink(t)
	optsB := fastOpts(dir, b.srv.URL)
	optsB.Destination = URLDestination(b.srv.URL)
	f, err := Open(optsB)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Elsewhere(); got[destA] != 1 || len(got) != 1 {
		t.Errorf("Elsewhere = %v; want one session for %s", got, destA)
	}
	f.Start()
	// B's own events of the same session go to a sibling spool.
	for i := range 2 {
		if _, err := f.Enqueue(event("s", "i-b", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Stop(ctxTimeout(t, 10*time.Second)); err != nil {
		t.Fatalf("Stop = %v: B's own events should all be delivered", err)
	}
	if got := len(b.committed()["s"]); got != 2 {
		t.Fatalf("B stored %d events of s; want only its own 2", got)
	}
	st, err := Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	var forA int64
	for _, s := range st {
		if s.Backend == destA {
			forA += s.Pending
		}
	}
	if forA != 7 {
		t.Fatalf("Inspect = %+v; want 7 events waiting for %s", st, destA)
	}

	// Told to, B takes them over.
	optsB.Move = func(from string) bool { return from == destA }
	f, err = Open(optsB)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Moved(); got[destA] != 1 {
		t.Errorf("Moved = %v", got)
	}
	f.Start()
	if err := f.Stop(ctxTimeout(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := len(b.committed()["s"]); got != 9 {
		t.Errorf("B stored %d events of s after the move; want 9", got)
	}
	if got := readDest(filepath.Join(dir, "sessions", "s")); got != optsB.Destination {
		t.Errorf("the moved spool records %q", got)
	}
	if st, _ := Inspect(dir); len(st) != 0 {
		t.Errorf("after the move: %+v", st)
	}
}

// TestOldSpoolDeliveredOnceToTheConfiguredBackend: a spool from before
// destinations were recorded is delivered by whoever opens it first, and
// from then on records that backend.
func TestOldSpoolDeliveredOnceToTheConfiguredBackend(t *testing.T) {
	dir := t.TempDir()
	writeSpool(t, dir, "old", 4)
	sdir := filepath.Join(dir, "sessions", "old")
	if got := readDest(sdir); got != "" {
		t.Fatalf("an old spool records %q", got)
	}
	if st, _ := Inspect(dir); len(st) != 1 || st[0].Backend != "" || st[0].Pending != 4 {
		t.Fatalf("Inspect = %+v; want 4 pending, no backend", st)
	}
	up := newSink(t)
	opts := fastOpts(dir, up.srv.URL)
	opts.Destination = URLDestination(up.srv.URL)
	f, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := readDest(sdir); got != opts.Destination {
		t.Errorf("the old spool now records %q, want %q", got, opts.Destination)
	}
	f.Start()
	if err := f.Stop(ctxTimeout(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	up.assertExactlyOnce(t, map[string]int64{"old": 4})
}

// TestEmptySpoolOfAnotherBackendIsReused: a session's spool with nothing
// waiting belongs to whoever opens it, so sessions do not grow a sibling
// per backend.
func TestEmptySpoolOfAnotherBackendIsReused(t *testing.T) {
	dir := t.TempDir()
	a := newSink(t)
	optsA := fastOpts(dir, a.srv.URL)
	optsA.Destination = "https://a.example"
	f, err := Open(optsA)
	if err != nil {
		t.Fatal(err)
	}
	f.Start()
	if _, err := f.Enqueue(event("s", "i", 0)); err != nil {
		t.Fatal(err)
	}
	if err := f.Stop(ctxTimeout(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	optsB := fastOpts(dir, a.srv.URL)
	optsB.Destination = "https://b.example"
	f, err = Open(optsB)
	if err != nil {
		t.Fatal(err)
	}
	f.Start()
	if _, err := f.Enqueue(event("s", "i2", 0)); err != nil {
		t.Fatal(err)
	}
	if err := f.Stop(ctxTimeout(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "sessions"))
	if len(entries) != 1 || readDest(filepath.Join(dir, "sessions", "s")) != "https://b.example" {
		t.Errorf("spools %v; want the one, now for b", entries)
	}
}

// TestDeadLettersRequeuedOnlyForTheirBackend: `spool flush --dead-letters`
// re-queues the dead letters of its own backend (and those of old
// spools), leaves another backend's, and takes them when moving.
func TestDeadLettersRequeuedOnlyForTheirBackend(t *testing.T) {
	dir := t.TempDir()
	env := func(id string) json.RawMessage {
		return json.RawMessage(`{"session_id":"s","interaction_id":"i","event_id":"` + id + `","seq":1,"event_type":"x","event_data":{},"timestamp":"2026-01-01T00:00:00Z","source":"agent"}`)
	}
	line := func(backend, id string) []byte {
		b, _ := json.Marshal(map[string]any{"status": 400, "reason": "r", "backend": backend, "envelope": env(id)})
		return b
	}
	path := filepath.Join(dir, "dead", "s.jsonl")
	for _, l := range [][]byte{line("https://a.example", "e-a"), line("https://b.example", "e-b"), line("", "e-old")} {
		if err := appendLine(path, l); err != nil {
			t.Fatal(err)
		}
	}
	sk := newSink(t)
	opts := fastOpts(dir, sk.srv.URL)
	opts.Destination = "https://b.example"
	f, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	n, err := f.RequeueDeadLetters()
	if err != nil || n != 2 {
		t.Fatalf("RequeueDeadLetters = %d, %v; want b's and the old one", n, err)
	}
	_ = f.Stop(ctxTimeout(t, 10*time.Millisecond))
	if left := deadLetterLines(t, dir, "s"); len(left) != 1 || left[0]["backend"] != "https://a.example" {
		t.Fatalf("dead letters left %v; want a's", left)
	}
	opts.Move = func(string) bool { return true }
	f, err = Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	n, err = f.RequeueDeadLetters()
	_ = f.Stop(ctxTimeout(t, 10*time.Millisecond))
	if err != nil || n != 1 || len(deadLetterLines(t, dir, "s")) != 0 {
		t.Errorf("moving: RequeueDeadLetters = %d, %v", n, err)
	}
}
