package forwarder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/claude-relay/claude-relay/internal/testkit/poll"
)

func TestMain(m *testing.M) {
	if os.Getenv(producerEnv) != "" {
		runProducer()
		return
	}
	goleak.VerifyTestMain(m)
}

// fastOpts are quick options for url. Their destination stands for the
// data dir's own backend, which a new port does not change: tests that stop
// a backend and start another on a new port deliver what the first left.
func fastOpts(dir, url string) Options {
	return Options{Dir: dir, BackendURL: url, AttemptTimeout: 300 * time.Millisecond, Destination: testDest,
		MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond, SyncInterval: 5 * time.Millisecond}
}

// testDest is fastOpts' destination.
const testDest = "local:/test/data-dir"

func event(session, interaction string, i int) Event {
	return Event{SessionID: session, InteractionID: interaction, Type: "assistant", Source: "agent",
		Data: json.RawMessage(fmt.Sprintf(`{"type":"assistant","n":%d,"pad":"%0200d"}`, i, i))}
}

func TestFaultsDeliverEveryEventExactlyOnceInOrder(t *testing.T) {
	faults := map[string]func(n int64, w http.ResponseWriter, r *http.Request) (bool, bool){
		"commit then drop the connection": func(n int64, w http.ResponseWriter, _ *http.Request) (bool, bool) {
			if n < 0 {
				hj, _ := w.(http.Hijacker)
				c, _, _ := hj.Hijack()
				c.Close()
				return true, true
			}
			return n%3 == 0, n%3 == 0
		},
		"502 after commit": func(n int64, w http.ResponseWriter, _ *http.Request) (bool, bool) {
			if n < 0 {
				w.WriteHeader(http.StatusBadGateway)
				return true, true
			}
			return n%4 == 0, n%4 == 0
		},
		"stall past the attempt timeout": func(n int64, _ http.ResponseWriter, r *http.Request) (bool, bool) {
			if n%5 == 0 {
				select {
				case <-time.After(time.Second):
				case <-r.Context().Done():
				}
				return true, false
			}
			return false, false
		},
		"429 with Retry-After": func(n int64, w http.ResponseWriter, _ *http.Request) (bool, bool) {
			if n%3 == 0 {
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(http.StatusTooManyRequests)
				return true, false
			}
			return false, false
		},
		"503 bursts": func(n int64, w http.ResponseWriter, _ *http.Request) (bool, bool) {
			if (n/10)%2 == 0 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return true, false
			}
			return false, false
		},
	}
	for name, fault := range faults {
		for _, batch := range []string{"never", "auto"} {
			t.Run(name+"/batch="+batch, func(t *testing.T) {
				sk := newSink(t)
				sk.fault = fault
				opts := fastOpts(t.TempDir(), sk.srv.URL)
				opts.Batch, opts.MaxBatch = batch, 7
				f, err := Open(opts)
				if err != nil {
					t.Fatal(err)
				}
				f.Start()
				const sessions, perSession = 4, 60
				var wg sync.WaitGroup
				for s := range sessions {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := range perSession {
							if _, err := f.Enqueue(event(fmt.Sprintf("s%d", s), "i1", i)); err != nil {
								t.Error(err)
							}
						}
					}()
				}
				wg.Wait()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if err := f.Stop(ctx); err != nil {
					t.Fatal(err)
				}
				want := map[string]int64{}
				total := int64(0)
				for s := range sessions {
					want[fmt.Sprintf("s%d", s)] = perSession
					total += perSession
				}
				sk.assertExactlyOnce(t, want)
				if sk.attempts.Load() <= total/int64(opts.MaxBatch) {
					t.Errorf("faults never fired? attempts %d", sk.attempts.Load())
				}
				st := f.Stats()
				if st.Delivered != total || st.SpoolBytes != 0 || st.Retried == 0 {
					t.Errorf("stats %+v", st)
				}
			})
		}
	}
}

func TestUnauthorizedKeepsEventsUntilTokenFixed(t *testing.T) {
	sk := newSink(t)
	sk.setToken("good")
	tok := "bad"
	var mu sync.Mutex
	var errs []Error
	opts := fastOpts(t.TempDir(), sk.srv.URL)
	opts.Token = func() string { mu.Lock(); defer mu.Unlock(); return tok }
	opts.OnError = func(e Error) { mu.Lock(); errs = append(errs, e); mu.Unlock() }
	f, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	f.Start()
	for i := range 5 {
		if _, err := f.Enqueue(event("s", "i", i)); err != nil {
			t.Fatal(err)
		}
	}
	poll.Until(t, 5*time.Second, "a 401 reported as CodeAuth", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(errs) > 0 && errs[0].Code == CodeAuth && errs[0].Status == 401
	})
	if f.Stats().DeadLettered != 0 || len(sk.committed()["s"]) != 0 {
		t.Fatal("a 401 must not dead-letter or lose events")
	}
	mu.Lock()
	tok = "good"
	mu.Unlock()
	if err := f.Stop(ctxTimeout(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	sk.assertExactlyOnce(t, map[string]int64{"s": 5})
}

func TestPermanentRejectionIsDeadLettered(t *testing.T) {
	sk := newSink(t)
	dir := t.TempDir()
	var mu sync.Mutex
	var dead []Error
	opts := fastOpts(dir, sk.srv.URL)
	opts.OnError = func(e Error) {
		if e.Code == CodeDeadLetter {
			mu.Lock()
			dead = append(dead, e)
			mu.Unlock()
		}
	}
	f, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	f.Start()
	for i := range 6 {
		ev := event("s", "i", i)
		if i == 2 {
			ev.Data = json.RawMessage(`{"type":"x","reject-me":true}`)
		}
		if _, err := f.Enqueue(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Stop(ctxTimeout(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := sk.committed()["s"]; len(got) != 5 {
		t.Errorf("commits %v", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(dead) != 1 || dead[0].Status != 400 {
		t.Errorf("dead letters reported: %+v", dead)
	}
	b, err := os.ReadFile(filepath.Join(dir, "dead", "s.jsonl"))
	if err != nil || !json.Valid(b[:len(b)-1]) {
		t.Fatalf("dead-letter file: %v %q", err, b)
	}
}

func TestRestartResumesDeliveryAndNumbering(t *testing.T) {
	dir := t.TempDir()
	down := newSink(t)
	down.fault = func(int64, http.ResponseWriter, *http.Request) (bool, bool) { return true, false } // hangs up: 200 with no body? no:
	down.fault = func(_ int64, w http.ResponseWriter, _ *http.Request) (bool, bool) {
		w.WriteHeader(http.StatusServiceUnavailable)
		return true, false
	}
	f, err := Open(fastOpts(dir, down.srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	f.Start()
	for i := range 10 {
		if _, err := f.Enqueue(event("s", "i", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Stop(ctxTimeout(t, 100*time.Millisecond)); !errors.Is(err, ErrUndelivered) {
		t.Fatalf("stop with the backend down: %v", err)
	}
	up := newSink(t)
	f2, err := Open(fastOpts(dir, up.srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	f2.Start()
	acc, err := f2.Enqueue(event("s", "i", 10))
	if err != nil || acc.Seq != 11 {
		t.Fatalf("numbering must continue across restarts: %+v %v", acc, err)
	}
	if err := f2.Stop(ctxTimeout(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	up.assertExactlyOnce(t, map[string]int64{"s": 11})
}

func TestSpoolFullFailsFast(t *testing.T) {
	sk := newSink(t)
	sk.fault = func(_ int64, w http.ResponseWriter, _ *http.Request) (bool, bool) {
		w.WriteHeader(http.StatusServiceUnavailable)
		return true, false
	}
	opts := fastOpts(t.TempDir(), sk.srv.URL)
	opts.MaxBytes = 4 << 10
	f, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	f.Start()
	defer f.Stop(ctxTimeout(t, 50*time.Millisecond)) //nolint:errcheck
	var full error
	for i := range 100 {
		if _, err := f.Enqueue(event("s", "i", i)); err != nil {
			full = err
			break
		}
	}
	if !errors.Is(full, ErrSpoolFull) {
		t.Fatalf("want ErrSpoolFull, got %v", full)
	}
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestTwoProcessesShareASession(t *testing.T) {
	sk := newSink(t)
	dir := t.TempDir()
	a, err := Open(fastOpts(dir, sk.srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	a.Start()
	b, err := Open(fastOpts(dir, sk.srv.URL)) // stands for a second process: flock is per open file
	if err != nil {
		t.Fatal(err)
	}
	b.Start()
	for i := range 5 {
		if _, err := a.Enqueue(event("s", "background", i)); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Enqueue(event("s", "terminal", i)); err != nil {
			t.Fatalf("the second writer of a session must get a sibling spool: %v", err)
		}
	}
	for _, f := range []*Forwarder{a, b} {
		if err := f.Stop(ctxTimeout(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(sk.committed()["s"]); got != 10 {
		t.Errorf("commits %d, want 10", got)
	}
}

func TestRequeueDeadLetters(t *testing.T) {
	var refuse atomic.Bool
	refuse.Store(true)
	var mu sync.Mutex
	stored := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/batch") {
			http.NotFound(w, r)
			return
		}
		if refuse.Load() {
			http.Error(w, `{"error":"schema"}`, http.StatusBadRequest)
			return
		}
		mu.Lock()
		stored[r.Header.Get("Idempotency-Key")]++
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	dir := t.TempDir()
	f, err := Open(fastOpts(dir, srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	f.Start()
	var ids []string
	for i := range 3 {
		acc, err := f.Enqueue(event("s", "i", i))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, acc.EventID)
	}
	poll.Until(t, 5*time.Second, "three events dead-lettered", func() bool { return f.Stats().DeadLettered == 3 })
	refuse.Store(false)
	n, err := f.RequeueDeadLetters()
	if err != nil || n != 3 {
		t.Fatalf("requeued %d: %v", n, err)
	}
	if err := f.Stop(ctxTimeout(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		if stored[id] != 1 {
			t.Errorf("event %s stored %d times, want once with its original ID", id, stored[id])
		}
	}
	if left, _ := os.ReadDir(filepath.Join(dir, "dead")); len(left) != 0 {
		t.Errorf("dead-letter files left: %v", left)
	}
}
