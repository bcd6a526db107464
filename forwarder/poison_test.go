package forwarder

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/server/backend"
	"github.com/claude-relay/claude-relay/internal/server/backend/memstore"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
)

// guarded is the reference backend behind a front that can refuse: with
// down set, every request gets that status (a backend down for everyone);
// a request whose body holds "poison-me" always gets 500 (an event the
// backend cannot store, failing its whole batch as a store error would).
type guarded struct {
	url     string
	store   *memstore.Store
	down    atomic.Int32
	refused atomic.Int64 // requests carrying the poison, refused
	hits    atomic.Int64
}

func newGuarded(t *testing.T) *guarded {
	t.Helper()
	g := &guarded{store: memstore.New()}
	srv := backend.New(backend.Options{Store: g.store, Tokens: func() []config.Secret { return []config.Secret{realToken} }})
	h := srv.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.hits.Add(1)
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		if c := g.down.Load(); c != 0 {
			http.Error(w, "down for everyone", int(c))
			return
		}
		if bytes.Contains(body, []byte("poison-me")) {
			g.refused.Add(1)
			http.Error(w, `{"error":"store: cannot store this event"}`, http.StatusInternalServerError)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	g.url = ts.URL
	t.Cleanup(func() {
		ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = g.store.Close()
	})
	return g
}

// seqs returns the seqs the backend stored for session, in arrival order.
func (g *guarded) seqs(t *testing.T, session string) []int64 {
	t.Helper()
	evs, err := g.store.Events(context.Background(), session, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}

func poisonEvent(session string) Event {
	return Event{SessionID: session, InteractionID: "i", Type: "assistant", Source: "agent",
		Data: json.RawMessage(`{"type":"assistant","text":"poison-me"}`)}
}

// guardedOpts are fastOpts for g with a small, injected poison bound.
// startGuarded starts a forwarder in front of a guarded backend, with
// batching batch and a poison bound of 5; it returns the spool dir and the
// errors the forwarder reports, which the checks read.
func startGuarded(t *testing.T, batch string) (*Forwarder, *guarded, string, *errorLog) {
	t.Helper()
	g, dir, log := newGuarded(t), t.TempDir(), &errorLog{}
	opts := fastOpts(dir, g.url)
	opts.Token = func() string { return realToken }
	opts.Batch, opts.PoisonAfter, opts.OnError = batch, 5, log.add
	f, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	f.Start()
	return f, g, dir, log
}

func deadLetterLines(t *testing.T, dir, session string) []map[string]any {
	t.Helper()
	fh, err := os.Open(filepath.Join(dir, "dead", escapeID(session)+".jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []map[string]any
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// checkPoisonReported checks that session's poison was reported once as a
// dead letter that says why and what to do, and kept in its file.
func checkPoisonReported(t *testing.T, log *errorLog, dir, session string) {
	t.Helper()
	log.mu.Lock()
	var msgs []string
	for _, e := range log.errs {
		if e.Code == CodeDeadLetter && e.SessionID == session {
			msgs = append(msgs, e.Message)
		}
	}
	log.mu.Unlock()
	if len(msgs) != 1 || !strings.Contains(msgs[0], "times in a row") || !strings.Contains(msgs[0], "spool flush --dead-letters") {
		t.Errorf("dead-letter reports %q; want one naming the refusals and the fix", msgs)
	}
	lines := deadLetterLines(t, dir, session)
	if len(lines) != 1 || lines[0]["poison"] != true || lines[0]["backend"] != testDest ||
		!strings.Contains(string(mustJSON(t, lines[0]["envelope"])), "poison-me") {
		t.Errorf("dead letters %v; want the poison, marked so, with its backend", lines)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPoisonEventDeadLetteredWhileOthersAreStored: an event the backend
// refuses with 500 every time, while it stores other sessions' events, is
// dead-lettered after the bound and reported; everything else arrives.
func TestPoisonEventDeadLetteredWhileOthersAreStored(t *testing.T) {
	for _, batch := range []string{"auto", "never"} {
		t.Run("batch="+batch, func(t *testing.T) {
			f, g, dir, log := startGuarded(t, batch)
			for i := range 3 {
				if _, err := f.Enqueue(event("a", "i", i)); err != nil {
					t.Fatal(err)
				}
			}
			// The poison is the last event of its session,
			// only the other session's deliveries tell a poison from an
			// outage.
			if _, err := f.Enqueue(poisonEvent("a")); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var others atomic.Int64
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					case <-time.After(2 * time.Millisecond):
					}
					if _, err := f.Enqueue(event("b", "i", i)); err != nil {
						t.Error(err)
						return
					}
					others.Add(1)
				}
			})
			poll.Until(t, 20*time.Second, "the poison dead-lettered", func() bool { return f.Stats().DeadLettered == 1 })
			close(stop)
			wg.Wait()
			if err := f.Stop(ctxTimeout(t, 20*time.Second)); err != nil {
				t.Fatal(err)
			}
			if n := g.refused.Load(); n < 5 {
				t.Errorf("the poison was refused %d times, fewer than the bound of 5", n)
			}
			if got := g.seqs(t, "a"); !equalSeqs(got, []int64{1, 2, 3}) {
				t.Errorf("session a stored seqs %v, want [1 2 3]", got)
			}
			if got := int64(len(g.seqs(t, "b"))); got != others.Load() {
				t.Errorf("session b stored %d events, want %d", got, others.Load())
			}
			checkPoisonReported(t, log, dir, "a")
		})
	}
}

// TestPoisonEventWaitsForEvidence: alone on the backend, a session whose
// event is refused for good keeps it, retried, and stores nothing after it
// (a session's events are stored in order or not at all), however many
// refusals; once the backend is seen storing another session's event, the
// poison is dead-lettered and the rest of its session arrives in order.
func TestPoisonEventWaitsForEvidence(t *testing.T) {
	for _, batch := range []string{"auto", "never"} {
		t.Run("batch="+batch, func(t *testing.T) {
			f, g, dir, log := startGuarded(t, batch)
			evs := []Event{event("a", "i", 0), poisonEvent("a")}
			for i := 2; i < 5; i++ {
				evs = append(evs, event("a", "i", i))
			}
			for _, ev := range evs {
				if _, err := f.Enqueue(ev); err != nil {
					t.Fatal(err)
				}
			}
			// Far past the bound with no other session stored: no verdict,
			// and nothing after the poison stored.
			poll.Until(t, 20*time.Second, "15 refusals of the poison", func() bool { return g.refused.Load() >= 15 }) // 3 times the bound
			if st := f.Stats(); st.DeadLettered != 0 {
				t.Fatalf("a poison with no evidence was dead-lettered: %+v", st)
			}
			if got := g.seqs(t, "a"); !equalSeqs(got, []int64{1}) {
				t.Fatalf("while the poison waits, session a stored seqs %v, want [1]", got)
			}
			if _, err := f.Enqueue(event("b", "i", 0)); err != nil {
				t.Fatal(err)
			}
			poll.Until(t, 20*time.Second, "the poison dead-lettered", func() bool { return f.Stats().DeadLettered == 1 })
			if err := f.Stop(ctxTimeout(t, 20*time.Second)); err != nil {
				t.Fatal(err)
			}
			if got := g.seqs(t, "a"); !equalSeqs(got, []int64{1, 3, 4, 5}) {
				t.Errorf("session a stored seqs %v, want [1 3 4 5]", got)
			}
			checkPoisonReported(t, log, dir, "a")
		})
	}
}

// TestOutageDeadLettersNothing: a backend down for everyone (500, a
// proxy's 502, 503, connection refused), for many times the poison bound
// and after other events were stored, dead-letters nothing: every event
// waits and arrives, exactly once, when it is back.
func TestOutageDeadLettersNothing(t *testing.T) {
	for _, status := range []int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			f, g, _, log := startGuarded(t, "auto")
			// Stored before the outage: old evidence proves nothing.
			for i := range 3 {
				if _, err := f.Enqueue(event("b", "i", i)); err != nil {
					t.Fatal(err)
				}
			}
			poll.Until(t, 10*time.Second, "three events delivered", func() bool { return f.Stats().Delivered == 3 })
			g.down.Store(int32(status))
			hits := g.hits.Load()
			for _, s := range []string{"a", "b"} {
				for i := 3; i < 8; i++ {
					if _, err := f.Enqueue(event(s, "i", i)); err != nil {
						t.Fatal(err)
					}
				}
			}
			// Ten times the bound of refusals, per session.
			poll.Until(t, 30*time.Second, "100 refused requests", func() bool { return g.hits.Load()-hits >= 100 })
			if st := f.Stats(); st.DeadLettered != 0 || st.Delivered != 3 {
				t.Fatalf("during the outage: %+v; want nothing dead-lettered", st)
			}
			g.down.Store(0)
			if err := f.Stop(ctxTimeout(t, 20*time.Second)); err != nil {
				t.Fatal(err)
			}
			if st := f.Stats(); st.DeadLettered != 0 || st.Delivered != 13 {
				t.Errorf("after the outage: %+v; want 13 delivered", st)
			}
			if got := log.sessions(CodeDeadLetter); len(got) != 0 {
				t.Errorf("dead letters reported for %v", got)
			}
			if got := g.seqs(t, "a"); !equalSeqs(got, []int64{1, 2, 3, 4, 5}) {
				t.Errorf("session a stored seqs %v", got)
			}
			if got := g.seqs(t, "b"); !equalSeqs(got, []int64{1, 2, 3, 4, 5, 6, 7, 8}) {
				t.Errorf("session b stored seqs %v", got)
			}
		})
	}
	t.Run("connection refused", func(t *testing.T) {
		ln := httptest.NewServer(http.NotFoundHandler())
		url := ln.URL
		ln.Close()
		dir := t.TempDir()
		var log errorLog
		opts := fastOpts(dir, url)
		opts.PoisonAfter, opts.OnError = 1, log.add
		f, err := Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		f.Start()
		for i := range 5 {
			if _, err := f.Enqueue(event("a", "i", i)); err != nil {
				t.Fatal(err)
			}
		}
		poll.Until(t, 20*time.Second, "50 retries", func() bool { return f.Stats().Retried >= 50 })
		if err := f.Stop(ctxTimeout(t, 10*time.Millisecond)); !errors.Is(err, ErrUndelivered) {
			t.Fatalf("Stop = %v", err)
		}
		if st := f.Stats(); st.DeadLettered != 0 {
			t.Errorf("%+v; want nothing dead-lettered", st)
		}
	})
}

func equalSeqs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
