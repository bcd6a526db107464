//go:build linux

package relay

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/proc"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// deadHelper is a helper that is gone: our pid with another start time, as
// a pid reused after the helper died looks.
func deadHelper(t *testing.T) proc.Proc {
	t.Helper()
	self, err := proc.Lookup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return proc.Proc{PID: self.PID, StartTime: self.StartTime + 1}
}

// envelopes is a backend that keeps what it is posted.
type envelopes struct {
	mu  sync.Mutex
	got []wire.Envelope
}

func (e *envelopes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/batch") {
		http.NotFound(w, r) // single posts keep this simple
		return
	}
	var env wire.Envelope
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &env); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	e.mu.Lock()
	e.got = append(e.got, env)
	e.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, `{}`)
}

func (e *envelopes) all() []wire.Envelope {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]wire.Envelope(nil), e.got...)
}

// A helper died with a run live; two helpers start at once on the same spool
// and registry. Exactly one posts relay.run_failed, and its seq continues
// the interaction's numbering, after the dead helper's events.
func TestEndDeadRunsTwoHelpersStartAtOnce(t *testing.T) {
	backend := &envelopes{}
	srv := httptest.NewServer(backend)
	defer srv.Close()
	spoolDir, reg := t.TempDir(), proc.Registry{Dir: t.TempDir()}
	opts := forwarder.Options{Dir: spoolDir, BackendURL: srv.URL, MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}

	// The dead helper spooled two events of its run, then died.
	dead, err := forwarder.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{wire.TypeRunStarted, "assistant"} {
		if _, err := dead.Enqueue(forwarder.Event{SessionID: "s1", InteractionID: "i1", Type: typ, Data: []byte(`{"run_id":"r1"}`), Source: wire.SourceRelay}); err != nil {
			t.Fatal(err)
		}
	}
	if err := dead.Stop(context.Background()); err == nil {
		t.Fatal("nothing left in the spool: the test proves nothing")
	}
	helper := deadHelper(t)
	if err := reg.Register(proc.Record{RunID: "r1", Helper: helper, Started: time.Now().Add(-time.Minute),
		Spool: proc.SpoolKey{SessionID: "s1", InteractionID: "i1"}}); err != nil {
		t.Fatal(err)
	}

	// Two helpers start: one holds the session's spool, the other cannot.
	var fwds [2]*forwarder.Forwarder
	for i := range fwds {
		if fwds[i], err = forwarder.Open(opts); err != nil {
			t.Fatal(err)
		}
	}
	var posted [2]int
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, f := range fwds {
		wg.Go(func() {
			<-start
			n, err := EndDeadRuns(context.Background(), reg, f, 10*time.Millisecond)
			if err != nil {
				t.Error(err)
			}
			posted[i] = n
		})
	}
	close(start)
	wg.Wait()
	if posted[0]+posted[1] != 1 {
		t.Errorf("posted %v, want exactly one run ended between both helpers", posted)
	}
	for _, f := range fwds {
		f.Start()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, f := range fwds {
		if err := f.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}

	var failed []wire.Envelope
	var seqs []int64
	for _, env := range backend.all() {
		seqs = append(seqs, env.Seq)
		if env.EventType == wire.TypeRunFailed {
			failed = append(failed, env)
		}
	}
	if len(failed) != 1 {
		t.Fatalf("backend got %d relay.run_failed, want 1 (all: %+v)", len(failed), backend.all())
	}
	f := failed[0]
	if f.SessionID != "s1" || f.InteractionID != "i1" || f.Seq != 3 || f.Source != wire.SourceRelay {
		t.Errorf("run_failed envelope = %+v, want s1/i1 seq 3 from the relay (seqs posted: %v)", f, seqs)
	}
	var end wire.RunEnded
	if err := json.Unmarshal(f.EventData, &end); err != nil {
		t.Fatal(err)
	}
	if end.RunID != "r1" || end.Status != "failed" || end.Reason != wire.ReasonHelperExited || end.Result.ExitCode != 1 ||
		!strings.Contains(end.Result.Stderr, "the helper (pid "+strconv.Itoa(helper.PID)+") exited while this run was live") {
		t.Errorf("run_failed data = %+v", end)
	}
	if end.Result.DurationMS < time.Minute.Milliseconds() {
		t.Errorf("duration %dms, want at least the minute the run had been live", end.Result.DurationMS)
	}
	if entries, _ := os.ReadDir(reg.Dir); len(entries) != 0 {
		t.Errorf("registry still holds %d files", len(entries))
	}
}

// countingSpool holds every spool (Numbered says yes) and counts the ends it
// takes.
type countingSpool struct {
	fakeSpool
}

func (*countingSpool) Numbered(string, string) bool { return true }

// Two cleanups at once, both able to post (in one process they share a
// claimer identity, which must not make them both post): one run_failed.
func TestEndDeadRunsConcurrentOnce(t *testing.T) {
	for range 5 {
		reg := proc.Registry{Dir: t.TempDir()}
		if err := reg.Register(proc.Record{RunID: "r1", Helper: deadHelper(t), Spool: proc.SpoolKey{SessionID: "s1", InteractionID: "i1"}}); err != nil {
			t.Fatal(err)
		}
		spool := &countingSpool{}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 2 {
			wg.Go(func() {
				<-start
				if _, err := EndDeadRuns(context.Background(), reg, spool, time.Millisecond); err != nil {
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
		if got := spool.types(); len(got) != 1 || got[0] != wire.TypeRunFailed {
			t.Fatalf("spooled %v, want one %s", got, wire.TypeRunFailed)
		}
		if entries, _ := os.ReadDir(reg.Dir); len(entries) != 0 {
			t.Fatalf("registry still holds %d files", len(entries))
		}
	}
}

// A post that fails keeps the claim: nothing is lost, the next start (once
// this process is gone) takes it over.
func TestEndDeadRunsKeepsClaimWhenSpoolRefuses(t *testing.T) {
	reg := proc.Registry{Dir: t.TempDir()}
	if err := reg.Register(proc.Record{RunID: "r1", Helper: deadHelper(t), Spool: proc.SpoolKey{SessionID: "s1", InteractionID: "i1"}}); err != nil {
		t.Fatal(err)
	}
	spool := &countingSpool{fakeSpool{fail: forwarder.ErrSpoolFull}}
	n, err := EndDeadRuns(context.Background(), reg, spool, time.Millisecond)
	if n != 0 || err == nil || !strings.Contains(err.Error(), `run "r1"`) {
		t.Errorf("EndDeadRuns = %d, %v; want 0 and an error naming the run", n, err)
	}
	claims, _ := filepath.Glob(filepath.Join(reg.Dir, "r1.json.*.claimed"))
	if len(claims) != 1 {
		t.Errorf("claim files %v, want the one this process holds", claims)
	}
}
