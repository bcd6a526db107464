package forwarder

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/testkit/poll"
)

// heapBound is the most HeapInuse the whole test process may reach while a
// backlog of any size waits or drains. The spool keeps nothing per event in
// memory: events are on disk and each session's delivery holds one batch
// (at most 200 events, 4 MiB), so the heap is buffers plus GC headroom. 64
// MiB leaves room for the test's own backend and the race detector's
// bookkeeping; a per-event leak over a million events would exceed it.
const heapBound = 64 << 20

// raceEnabled reports whether the test binary was built with -race.
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// heapPeak samples HeapInuse every 10 ms until the returned func is called,
// which reports the highest sample.
func heapPeak() func() uint64 {
	runtime.GC()
	var peak uint64
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-stopped
		return peak
	}
}

// TestHeapStaysBoundedWithLargeBacklog enqueues 1 GiB of 1 KiB events over
// 4 sessions with the backend down, then restarts with a healthy backend
// and drains one session's 256 MiB; the heap stays under heapBound
// throughout. The race detector makes each event ~10x dearer, so under
// -race the backlog is 128 MiB (32 MiB drained); with -short, 64 MiB, all
// drained. The full size runs without -race (about 11 s on 2 cores).
func TestHeapStaysBoundedWithLargeBacklog(t *testing.T) {
	const sessions = 4
	backlog, drainSessions := int64(1<<30), 1
	switch {
	case testing.Short():
		backlog, drainSessions = 64<<20, sessions
	case raceEnabled():
		backlog = 128 << 20
	}
	dir := t.TempDir()
	sk := newFastSink(nil)
	defer sk.close()
	sk.status.Store(http.StatusServiceUnavailable)
	opts := Options{Dir: dir, BackendURL: sk.srv.URL, MaxBytes: 4 << 30,
		MinBackoff: time.Millisecond, MaxBackoff: 50 * time.Millisecond}

	f, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	f.Start()
	perSession := int(backlog / sessions / 1024)
	stop := heapPeak()
	start := time.Now()
	var wg sync.WaitGroup
	for s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ev := kibEvent(fmt.Sprintf("s%d", s))
			for range perSession {
				if _, err := f.Enqueue(ev); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	peak := stop()
	t.Logf("backend down: %d MiB of events enqueued in %v, %d MiB spooled, peak HeapInuse %.1f MiB",
		backlog>>20, time.Since(start).Round(time.Millisecond), f.Stats().SpoolBytes>>20, float64(peak)/(1<<20))
	if peak >= heapBound {
		t.Errorf("peak HeapInuse %d MiB with the backend down, bound %d MiB", peak>>20, heapBound>>20)
	}
	if err := f.Stop(ctxTimeout(t, 100*time.Millisecond)); !errors.Is(err, ErrUndelivered) {
		t.Fatalf("stop with the backend down: %v", err)
	}
	if t.Failed() {
		return
	}

	// Keep drainSessions of the spool: the others wait outside it.
	aside := t.TempDir()
	for s := drainSessions; s < sessions; s++ {
		name := escapeID(fmt.Sprintf("s%d", s))
		if err := os.Rename(filepath.Join(dir, "sessions", name), filepath.Join(aside, name)); err != nil {
			t.Fatal(err)
		}
	}
	sk.status.Store(0)
	stop = heapPeak()
	start = time.Now()
	f, err = Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	f.Start()
	want := int64(drainSessions * perSession)
	poll.Until(t, 60*time.Second, "every event at the sink", func() bool { return sk.events.Load() >= want })
	if err := f.Stop(ctxTimeout(t, 10*time.Second)); err != nil {
		t.Error(err)
	}
	peak = stop()
	t.Logf("restart, backend up: %d MiB (%d events) delivered in %v, peak HeapInuse %.1f MiB",
		want>>10, want, time.Since(start).Round(time.Millisecond), float64(peak)/(1<<20))
	if peak >= heapBound {
		t.Errorf("peak HeapInuse %d MiB draining the backlog, bound %d MiB", peak>>20, heapBound>>20)
	}
	// This sink counts deliveries without de-duplicating by event_id, so a
	// batch re-sent after a transport error counts twice; exactly-once is
	// the de-duplicating sinks' business (fault and crash tests). Here:
	// nothing may be missing.
	if got := sk.events.Load(); got < want {
		t.Errorf("backend took %d events, want %d", got, want)
	} else if got > want {
		t.Logf("%d events re-sent after retries (de-duplicated by a real backend)", got-want)
	}
}
