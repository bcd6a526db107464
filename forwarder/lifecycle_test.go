package forwarder

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
)

// hangLimit only turns a hang (a deadlock) into a failure with a message
// instead of the test binary's timeout; nothing here measures time.
const hangLimit = 30 * time.Second

// writeSpool leaves a session spool on disk as a stopped forwarder whose
// backend was down leaves it: n events with seqs 1..n, none acknowledged.
// It returns the path of the segment holding them.
func writeSpool(t *testing.T, dir, id string, n int) string {
	t.Helper()
	root := filepath.Join(dir, "sessions")
	s, err := openSessionDir(root, escapeID(id), id, destPolicy{}, false) // records no backend, as older spools
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		ev := event(id, "i", i)
		ev.Time = time.Now()
		s.mu.Lock()
		_, err := s.appendLocked(encodeEnvelope(nil, ev, uuid.NewString(), int64(i+1)))
		s.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
	}
	s.close()
	return filepath.Join(root, escapeID(id), segName(1))
}

// errorLog collects what a forwarder reports.
type errorLog struct {
	mu   sync.Mutex
	errs []Error
}

func (l *errorLog) add(e Error) { l.mu.Lock(); l.errs = append(l.errs, e); l.mu.Unlock() }

// sessions returns the sessions reported with code.
func (l *errorLog) sessions(code ErrorCode) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.errs {
		if e.Code == code && !slices.Contains(out, e.SessionID) {
			out = append(out, e.SessionID)
		}
	}
	slices.Sort(out)
	return out
}

// TestTornSpoolTakenOverLaterDoesNotDeadlock: a spool with a torn tail that
// another process held while this forwarder opened (a killed `terminal`
// run) is opened on first Enqueue; its corruption is reported without
// taking the forwarder's lock twice, so Enqueue, Stats and Stop go on.
func TestTornSpoolTakenOverLaterDoesNotDeadlock(t *testing.T) {
	dir := t.TempDir()
	seg := writeSpool(t, dir, "s", 5)
	fr := segmentFrames(t, seg)
	if err := os.Truncate(seg, fr[4].end-5); err != nil {
		t.Fatal(err)
	}
	held, err := os.OpenFile(filepath.Join(dir, "sessions", "s", lockFile), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}

	up := newSink(t)
	var log errorLog
	opts := fastOpts(dir, up.srv.URL)
	opts.OnError = log.add
	f, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	f.Start()
	if n := f.Stats().Sessions; n != 0 {
		t.Fatalf("%d sessions adopted, want none: the only one is held by another process", n)
	}
	held.Close() // that process exits

	type result struct {
		acc   Accepted
		err   error
		stats Stats
	}
	done := make(chan result, 1)
	go func() {
		acc, err := f.Enqueue(event("s", "i", 5))
		done <- result{acc, err, f.Stats()}
	}()
	var res result
	select {
	case res = <-done:
	case <-time.After(hangLimit):
		t.Fatal("Enqueue to a torn spool opened after start never returned: the forwarder deadlocked")
	}
	if res.err != nil || res.acc.Seq != 5 || res.stats.Sessions != 1 {
		t.Fatalf("enqueue: %+v %v; stats %+v (want seq 5: the torn record is lost, the stream stays gap-free)", res.acc, res.err, res.stats)
	}
	if err := f.Stop(ctxTimeout(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := up.committed()["s"]; !slices.Equal(got, []int64{1, 2, 3, 4, 5}) {
		t.Errorf("committed %v, want 1..5", got)
	}
	if got := log.sessions(CodeCorruptSpool); !slices.Equal(got, []string{"s"}) {
		t.Errorf("corrupt_spool reported for %v, want [s]", got)
	}
}

// TestManyCorruptSpoolsAtStart adopts a few hundred spools, each with a
// corrupt record, while delivery reports their corruption: nothing races
// (go test -race), every intact record is delivered, and each session's
// corruption is reported.
func TestManyCorruptSpoolsAtStart(t *testing.T) {
	const spools = 300
	dir := t.TempDir()
	var ids []string
	for i := range spools {
		id := fmt.Sprintf("s%03d", i)
		ids = append(ids, id)
		seg := writeSpool(t, dir, id, 3)
		mid := segmentFrames(t, seg)[1]
		flipByte(t, seg, (mid.start+headerSize+mid.end)/2)
	}
	up := newSink(t)
	var log errorLog
	opts := fastOpts(dir, up.srv.URL)
	opts.OnError = log.add
	f, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	f.Start()
	if err := f.Stop(ctxTimeout(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	got := up.committed()
	for _, id := range ids {
		if !slices.Equal(got[id], []int64{1, 3}) {
			t.Errorf("session %s: committed %v, want [1 3] (seq 2 is the corrupt one)", id, got[id])
		}
	}
	if got := log.sessions(CodeCorruptSpool); !slices.Equal(got, ids) {
		t.Errorf("corrupt_spool reported for %d sessions, want all %d", len(got), len(ids))
	}
}

// TestErrorsFromOpenReachTheHandlerSetBeforeStart: problems found while
// adopting spools in Open are held until Start and given to the handler set
// in between (the extension server exists only after Open), not dropped.
func TestErrorsFromOpenReachTheHandlerSetBeforeStart(t *testing.T) {
	dir := t.TempDir()
	seg := writeSpool(t, dir, "torn", 3)
	fr := segmentFrames(t, seg)
	if err := os.Truncate(seg, fr[2].end-5); err != nil {
		t.Fatal(err)
	}
	// A spool that cannot be opened at all: its ack file is a directory.
	writeSpool(t, dir, "broken", 1)
	ack := filepath.Join(dir, "sessions", "broken", ackFile)
	if err := os.Remove(ack); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(ack, 0o700); err != nil {
		t.Fatal(err)
	}

	f, err := Open(fastOpts(dir, newSink(t).srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	var log errorLog
	f.OnError(log.add)
	f.Start()
	// Start hands over what Open found before it returns: no waiting.
	if got := log.sessions(CodeCorruptSpool); !slices.Equal(got, []string{"broken", "torn"}) {
		t.Errorf("corrupt_spool reported for %v by the time Start returned, want [broken torn]", got)
	}
	if st := f.Stats(); st.LastError == "" {
		t.Errorf("stats carry no last error: %+v", st)
	}
	if err := f.Stop(ctxTimeout(t, 10*time.Second)); err != nil && !errors.Is(err, ErrUndelivered) {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "sessions", "broken", lastErrorFile)); err != nil {
		t.Errorf("the unopenable spool's last_error: %v", err)
	} else if want := string(CodeCorruptSpool) + ": "; !strings.Contains(string(b), want) {
		t.Errorf("the unopenable spool's last_error %q, want it to say %q", b, want)
	}
}

// TestDeliveryBeginsAtStart: Open adopts spools and Enqueue spools events,
// but nothing is sent before Start; a forwarder stopped without Start keeps
// everything for later.
func TestDeliveryBeginsAtStart(t *testing.T) {
	dir := t.TempDir()
	writeSpool(t, dir, "old", 3)
	sk := newSink(t)
	f, err := Open(fastOpts(dir, sk.srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Enqueue(event("new", "i", 0)); err != nil {
		t.Fatal(err)
	}
	if err := f.Stop(ctxTimeout(t, 10*time.Second)); !errors.Is(err, ErrUndelivered) {
		t.Fatalf("stop before start: %v, want ErrUndelivered", err)
	}
	if n := sk.attempts.Load(); n != 0 {
		t.Fatalf("%d requests before Start", n)
	}

	f, err = Open(fastOpts(dir, sk.srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Enqueue(event("new", "i", 1)); err != nil {
		t.Fatal(err)
	}
	f.Start()
	f.Start() // idempotent
	if err := f.Stop(ctxTimeout(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	sk.assertExactlyOnce(t, map[string]int64{"old": 3, "new": 2})
}
