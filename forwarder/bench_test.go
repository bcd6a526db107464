package forwarder

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fastSink is a minimal backend for benchmarks and the memory test: it
// answers at once (or after delay, or never while hung) and only counts, so
// that what is measured is the forwarder and not a backend.
type fastSink struct {
	srv      *httptest.Server
	status   atomic.Int32  // 0: 201 per event; else this status for every request
	delay    time.Duration // before answering
	hang     chan struct{} // if set, answer only once it is closed
	events   atomic.Int64  // events answered 201
	onCommit func(ids []string, at time.Time)
}

var (
	eventIDKey = []byte(`"event_id":"`)
	sinkBufs   = sync.Pool{New: func() any { return new(bytes.Buffer) }}
)

func newFastSink(configure func(*fastSink)) *fastSink {
	s := &fastSink{}
	if configure != nil {
		configure(s)
	}
	s.srv = httptest.NewServer(s)
	return s
}

func (s *fastSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	buf := sinkBufs.Get().(*bytes.Buffer)
	defer sinkBufs.Put(buf)
	buf.Reset()
	if _, err := buf.ReadFrom(r.Body); err != nil {
		return
	}
	if s.hang != nil {
		select {
		case <-s.hang:
		case <-r.Context().Done():
			return
		}
	}
	if s.delay > 0 {
		select {
		case <-time.After(s.delay):
		case <-r.Context().Done():
			return
		}
	}
	if c := s.status.Load(); c != 0 {
		w.WriteHeader(int(c))
		return
	}
	// The bodies are ours: counting the event_id keys counts the events.
	body := buf.Bytes()
	ids := eventIDs(body)
	n := len(ids)
	if s.onCommit != nil {
		s.onCommit(ids, time.Now())
	}
	s.events.Add(int64(n))
	if !strings.HasSuffix(r.URL.Path, "/batch") {
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{}`))
		return
	}
	// Results name their events, as the reference backend's do: only
	// such a result acknowledges an event.
	out := make([]byte, 0, 16+64*n)
	out = append(out, `{"results":[`...)
	for i, id := range ids {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"event_id":"`...)
		out = append(out, id...)
		out = append(out, `","status":201}`...)
	}
	_, _ = w.Write(append(out, "]}"...))
}

func (s *fastSink) close() {
	if s.hang != nil {
		select {
		case <-s.hang:
		default:
			close(s.hang)
		}
	}
	s.srv.Close()
}

func eventIDs(body []byte) []string {
	var ids []string
	for {
		i := bytes.Index(body, eventIDKey)
		if i < 0 || len(body) < i+len(eventIDKey)+36 {
			return ids
		}
		body = body[i+len(eventIDKey):]
		ids = append(ids, string(body[:36]))
	}
}

// kibEvent is an event whose event_data is exactly 1 KiB.
func kibEvent(session string) Event {
	const head, tail = `{"type":"assistant","pad":"`, `"}`
	data := head + strings.Repeat("p", 1024-len(head)-len(tail)) + tail
	return Event{SessionID: session, InteractionID: "i", Type: "assistant", Source: "agent", Data: []byte(data)}
}

// percentiles reports p50, p99 and p99.9 of ds (sorted in place) in unit.
func percentiles(b *testing.B, ds []time.Duration, unit time.Duration, suffix string) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	at := func(p float64) float64 { return float64(ds[min(int(p*float64(len(ds))), len(ds)-1)]) / float64(unit) }
	b.ReportMetric(at(0.50), "p50-"+suffix)
	b.ReportMetric(at(0.99), "p99-"+suffix)
	b.ReportMetric(at(0.999), "p99.9-"+suffix)
}

// drain reads a response to the end, so that its connection is reused.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

func stopBench(b *testing.B, f *Forwarder, d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := f.Stop(ctx); err != nil && !errors.Is(err, ErrUndelivered) {
		b.Fatal(err)
	}
}

// BenchmarkEnqueue measures what a producer waits for: Enqueue with the
// backend hung (requests never answered), against appending the same bytes
// to a file with one write(2). Goal: p99 ≤ 20 µs.
func BenchmarkEnqueue(b *testing.B) {
	ev := kibEvent("s")
	b.Run("baseline", func(b *testing.B) {
		frame := appendFrame(nil, encodeEnvelope(nil, ev, "00000000-0000-0000-0000-000000000000", 1))
		fh, err := os.OpenFile(filepath.Join(b.TempDir(), "seg"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		defer fh.Close()
		ds := make([]time.Duration, 0, 1<<20)
		b.SetBytes(int64(len(frame)))
		for b.Loop() {
			t0 := time.Now()
			if _, err := fh.Write(frame); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(t0))
		}
		percentiles(b, ds, time.Microsecond, "µs")
	})
	b.Run("hung-backend", func(b *testing.B) {
		sk := newFastSink(func(s *fastSink) { s.hang = make(chan struct{}) })
		defer sk.close()
		f, err := Open(Options{Dir: b.TempDir(), BackendURL: sk.srv.URL, AttemptTimeout: time.Hour, MaxBytes: 8 << 30})
		if err != nil {
			b.Fatal(err)
		}
		f.Start()
		defer stopBench(b, f, 10*time.Millisecond)
		if _, err := f.Enqueue(ev); err != nil { // opens the session spool
			b.Fatal(err)
		}
		ds := make([]time.Duration, 0, 1<<20)
		b.SetBytes(int64(len(ev.Data)))
		for b.Loop() {
			t0 := time.Now()
			if _, err := f.Enqueue(ev); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(t0))
		}
		percentiles(b, ds, time.Microsecond, "µs")
	})
}

// BenchmarkDelivery measures sustained delivery of 1 KiB events to a
// loopback backend that answers at once; an op is one event delivered. The
// baseline is one net/http POST of 1 KiB at a time: the loopback ceiling
// for one request in flight.
func BenchmarkDelivery(b *testing.B) {
	b.Run("baseline", func(b *testing.B) {
		sk := newFastSink(nil)
		defer sk.close()
		tr := &http.Transport{MaxIdleConnsPerHost: 1}
		defer tr.CloseIdleConnections()
		c := &http.Client{Transport: tr}
		body := []byte(kibEvent("s").Data)
		u := sk.srv.URL + "/api/sessions/s/events"
		t0 := time.Now()
		for b.Loop() {
			resp, err := c.Post(u, "application/json", bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			drain(resp)
		}
		b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "events/s")
	})
	for _, sessions := range []int{1, 100} {
		for _, batch := range []string{"single", "batch"} {
			b.Run(fmt.Sprintf("%d-session%s-%s", sessions, map[bool]string{true: "s"}[sessions > 1], batch), func(b *testing.B) {
				benchDelivery(b, sessions, map[string]string{"single": "never", "batch": "always"}[batch])
			})
		}
	}
}

func benchDelivery(b *testing.B, sessions int, batch string) {
	sk := newFastSink(nil)
	defer sk.close()
	f, err := Open(Options{Dir: b.TempDir(), BackendURL: sk.srv.URL, Batch: batch, MaxBytes: 8 << 30})
	if err != nil {
		b.Fatal(err)
	}
	f.Start()
	defer stopBench(b, f, 10*time.Second)
	evs := make([]Event, sessions)
	for i := range evs {
		evs[i] = kibEvent(fmt.Sprintf("s%03d", i))
		if _, err := f.Enqueue(evs[i]); err != nil { // creating a spool is not delivery
			b.Fatal(err)
		}
	}
	for sk.events.Load() < int64(sessions) {
		time.Sleep(100 * time.Microsecond)
	}
	sk.events.Store(0)
	b.ResetTimer()
	t0 := time.Now()
	for i := range b.N {
		if _, err := f.Enqueue(evs[i%sessions]); err != nil {
			b.Fatal(err)
		}
	}
	for sk.events.Load() < int64(b.N) {
		time.Sleep(100 * time.Microsecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "events/s")
}

// BenchmarkEnqueueToCommit measures how long a healthy backend waits for an
// event: from Enqueue to the backend holding it, at a steady 2000 events/s
// over 4 sessions. Goal: p99 ≤ 5 ms.
func BenchmarkEnqueueToCommit(b *testing.B) {
	b.Run("healthy", func(b *testing.B) {
		var mu sync.Mutex
		enq := map[string]time.Time{}
		var lat []time.Duration
		sk := newFastSink(func(s *fastSink) {
			s.onCommit = func(ids []string, at time.Time) {
				mu.Lock()
				defer mu.Unlock()
				for _, id := range ids {
					if t0, ok := enq[id]; ok {
						lat = append(lat, at.Sub(t0))
						delete(enq, id)
					}
				}
			}
		})
		defer sk.close()
		f, err := Open(Options{Dir: b.TempDir(), BackendURL: sk.srv.URL})
		if err != nil {
			b.Fatal(err)
		}
		f.Start()
		defer stopBench(b, f, 10*time.Second)
		evs := make([]Event, 4)
		for i := range evs {
			evs[i] = kibEvent(fmt.Sprintf("s%d", i))
		}
		const interval = 500 * time.Microsecond
		b.ResetTimer()
		next := time.Now()
		for i := range b.N {
			for time.Until(next) > 0 {
				time.Sleep(time.Until(next))
			}
			next = next.Add(interval)
			// The enqueue time goes in before the backend can see the event.
			mu.Lock()
			t0 := time.Now()
			acc, err := f.Enqueue(evs[i%len(evs)])
			if err == nil {
				enq[acc.EventID] = t0
			}
			mu.Unlock()
			if err != nil {
				b.Fatal(err)
			}
		}
		for sk.events.Load() < int64(b.N) {
			time.Sleep(100 * time.Microsecond)
		}
		b.StopTimer()
		mu.Lock()
		defer mu.Unlock()
		percentiles(b, lat, time.Millisecond, "ms")
	})
}

// BenchmarkSlowBackend measures how much a backend answering in 100 ms
// slows the producer, per event. The baseline is seed 002's pattern: POST
// each event and await the answer before going on. The forwarder's figure
// is Enqueue alone; delivery goes on in the background (not waited for).
func BenchmarkSlowBackend(b *testing.B) {
	const delay = 100 * time.Millisecond
	ev := kibEvent("s")
	b.Run("baseline", func(b *testing.B) {
		sk := newFastSink(func(s *fastSink) { s.delay = delay })
		defer sk.close()
		c := &http.Client{Transport: &http.Transport{}}
		defer c.CloseIdleConnections()
		u := sk.srv.URL + "/api/sessions/s/events"
		t0 := time.Now()
		for b.Loop() {
			env := encodeEnvelope(nil, ev, "00000000-0000-0000-0000-000000000000", 1)
			resp, err := c.Post(u, "application/json", bytes.NewReader(env))
			if err != nil {
				b.Fatal(err)
			}
			drain(resp)
		}
		b.ReportMetric(float64(time.Since(t0))/float64(time.Millisecond)/float64(b.N), "producer-ms/event")
	})
	b.Run("forwarder", func(b *testing.B) {
		sk := newFastSink(func(s *fastSink) { s.delay = delay })
		defer sk.close()
		f, err := Open(Options{Dir: b.TempDir(), BackendURL: sk.srv.URL, MaxBytes: 8 << 30})
		if err != nil {
			b.Fatal(err)
		}
		f.Start()
		defer stopBench(b, f, 10*time.Millisecond)
		t0 := time.Now()
		for b.Loop() {
			if _, err := f.Enqueue(ev); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(time.Since(t0))/float64(time.Millisecond)/float64(b.N), "producer-ms/event")
	})
}
