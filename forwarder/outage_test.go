package forwarder

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestLongOutageLosesNothing keeps the backend down (503) for thousands of
// attempts (a long outage, compressed by an injected backoff of 0–1 ms)
// while producers keep enqueueing, then lets it recover: every event is
// delivered exactly once, in order, and none is dropped or dead-lettered.
func TestLongOutageLosesNothing(t *testing.T) {
	const outage = 3000 // failed attempts before the backend recovers
	sk := newSink(t)
	sk.fault = func(n int64, w http.ResponseWriter, _ *http.Request) (bool, bool) {
		if n <= outage {
			w.WriteHeader(http.StatusServiceUnavailable)
			return true, false
		}
		return false, false
	}
	opts := fastOpts(t.TempDir(), sk.srv.URL)
	opts.MaxBatch = 16
	opts.Backoff = func(_, _ time.Duration, _ int, _ *http.Response) time.Duration {
		return time.Duration(rand.N(1000)) * time.Microsecond
	}
	f, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	f.Start()
	const sessions = 4
	var counts [sessions]int64
	var wg sync.WaitGroup
	for s := range sessions {
		id := fmt.Sprintf("s%d", s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Enqueue through the outage, not only before it.
			for i := 0; sk.attempts.Load() < outage*3/4 || i < 20; i++ {
				if _, err := f.Enqueue(event(id, "i", i)); err != nil {
					t.Error(err)
					return
				}
				counts[s]++
				time.Sleep(time.Millisecond)
			}
		}()
	}
	wg.Wait()
	want := map[string]int64{}
	for s, n := range counts {
		want[fmt.Sprintf("s%d", s)] = n
	}
	if st := f.Stats(); st.Delivered != 0 || st.DeadLettered != 0 {
		t.Fatalf("events left the spool during the outage: %+v", st)
	}
	if err := f.Stop(ctxTimeout(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	sk.assertExactlyOnce(t, want)
	total := int64(0)
	for _, n := range want {
		total += n
	}
	st := f.Stats()
	if st.Delivered != total || st.DeadLettered != 0 || st.SpoolBytes != 0 || st.Pending != 0 {
		t.Errorf("stats after recovery: %+v, want %d delivered", st, total)
	}
	if st.Retried < outage-sessions {
		t.Errorf("%d retries for an outage of %d attempts", st.Retried, outage)
	}
	t.Logf("%d events through %d failed attempts (%d retries)", total, outage, st.Retried)
}
