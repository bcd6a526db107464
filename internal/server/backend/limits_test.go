package backend

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/server/backend/memstore"
	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
)

// repeatReader yields n bytes of c without allocating: a huge body that
// costs the client nothing, so what a test measures is the server's.
type repeatReader struct {
	c byte
	n int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.n)]
	for i := range p {
		p[i] = r.c
	}
	r.n -= int64(len(p))
	return len(p), nil
}

// hugeEvent is an envelope whose event_data text is n bytes, as a reader,
// and its length.
func hugeEvent(session string, n int64) (io.Reader, int64) {
	head := `{"session_id":"` + session + `","interaction_id":"i1","event_id":"huge-1","seq":1,"event_type":"assistant",` +
		`"timestamp":"2026-11-21T22:14:26Z","source":"agent","event_data":{"type":"assistant","text":"`
	tail := `"}}`
	return io.MultiReader(strings.NewReader(head), &repeatReader{'a', n}, strings.NewReader(tail)),
		int64(len(head)) + n + int64(len(tail))
}

// allocated runs fn and returns the bytes the process allocated meanwhile
// (runtime.MemStats.TotalAlloc, which a GC cannot hide).
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// postReader posts body; size < 0 sends it chunked (no Content-Length).
func (e *env) postReader(path string, body io.Reader, size int64) (int, errorBody) {
	e.t.Helper()
	req, err := http.NewRequest("POST", e.ts.URL+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	req.ContentLength = size
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	var out errorBody
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// TestEventOverTheLimitIsNotRead: a 120 MiB event gets 413 from its
// declared size without the server reading it (its allocations stay far
// below one event), and without a declared size once 8 MiB have arrived;
// the answer states the limit.
func TestEventOverTheLimitIsNotRead(t *testing.T) {
	e := newEnv(t)
	const size = 120 << 20
	for _, tt := range []struct {
		name    string
		chunked bool
		bound   uint64
	}{
		{"declared size", false, 2 << 20},
		{"chunked", true, 3 * DefaultMaxEvent},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var status int
			var out errorBody
			start := time.Now()
			alloc := allocated(func() {
				body, n := hugeEvent("s1", size)
				if tt.chunked {
					n = -1
				}
				status, out = e.postReader("/api/sessions/s1/events", body, n)
			})
			t.Logf("120 MiB event, %s: %d in %s, %.1f MiB allocated", tt.name, status, time.Since(start), float64(alloc)/(1<<20))
			if status != http.StatusRequestEntityTooLarge || out.Limit != DefaultMaxEvent ||
				!strings.Contains(out.Error, keyMaxEvent) {
				t.Fatalf("answer %d %+v; want 413 with limit %d naming %s", status, out, DefaultMaxEvent, keyMaxEvent)
			}
			if alloc > tt.bound {
				t.Errorf("the refusal allocated %d bytes; want at most %d", alloc, tt.bound)
			}
		})
	}
	if e.store.Stored != 0 {
		t.Errorf("%d events stored", e.store.Stored)
	}
}

// TestBatchEventOverTheLimitIsNotRead: inside a chunked batch (nothing to
// refuse up front), an event over the per-event limit fails the batch as
// soon as the decoder has read a little past the limit, not once it has
// the whole event; nothing of the batch is stored.
func TestBatchEventOverTheLimitIsNotRead(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxEventBytes, o.MaxBatchBytes = 64<<10, 256<<20 })
	small := envelope("s1", 1, "x", map[string]any{}).json()
	var status int
	var out errorBody
	alloc := allocated(func() {
		big, _ := hugeEvent("s1", 100<<20)
		body := io.MultiReader(strings.NewReader(`{"events":[`+string(small)+`,`), big, strings.NewReader(`]}`))
		status, out = e.postReader("/api/sessions/s1/events/batch", body, -1)
	})
	t.Logf("100 MiB event in a batch: %d, %.1f MiB allocated", status, float64(alloc)/(1<<20))
	if status != http.StatusRequestEntityTooLarge || out.Limit != 64<<10 || !strings.Contains(out.Error, "event 1 of the batch") {
		t.Fatalf("answer %d %+v; want 413 naming event 1 and the limit", status, out)
	}
	if alloc > 4<<20 {
		t.Errorf("the refusal allocated %d bytes; want at most 4 MiB", alloc)
	}
	if e.store.Stored != 0 {
		t.Errorf("%d events stored; want none of the batch", e.store.Stored)
	}
}

// serveReal runs s on a real listener with backend.Serve (the http.Server
// settings under test) until the test ends.
func serveReal(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, s) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// TestSlowBodyIsCutOff: an authenticated body trickled a byte at a time
// (slowloris) loses its connection once its read deadline passes (here
// shortened to 1 s), with a 408, instead of holding the handler for as
// long as the client likes.
func TestSlowBodyIsCutOff(t *testing.T) {
	st := memstore.New()
	defer st.Close()
	s := New(Options{Store: st, Tokens: func() []config.Secret { return []config.Secret{testToken} }, bodyFloor: time.Second})
	addr := serveReal(t, s)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const size = 100000 // at a byte per 100 ms, nearly three hours
	fmt.Fprintf(conn, "POST /api/sessions/s1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n{", testToken, size)
	start := time.Now()
	stop := make(chan struct{})
	trickled := make(chan struct{})
	go func() { // owned: stopped by the deferred close, ends on a write error
		defer close(trickled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := conn.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	defer func() { close(stop); <-trickled }()
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // the test's own bound, far above the server's
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to the slow body: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("status %d, want 408", resp.StatusCode)
	}
	// The server closes the connection: a read ends, well before our bound.
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Error("the connection is still open after the 408")
	}
	t.Logf("slow body cut off after %s (deadline 1s)", time.Since(start).Round(10*time.Millisecond))
}

// slowStore delays Append past the body deadline, as a busy database can.
type slowStore struct {
	store.Store
	delay time.Duration
}

func (s slowStore) Append(ctx context.Context, events []store.Event) ([]store.AppendResult, error) {
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.Store.Append(ctx, events)
}

// TestBodyDeadlineEndsWithTheBody: once a body is in, its deadline no
// longer applies, so a store slower than the deadline does not cancel the
// request.
func TestBodyDeadlineEndsWithTheBody(t *testing.T) {
	st := memstore.New()
	defer st.Close()
	s := New(Options{Store: slowStore{st, 800 * time.Millisecond}, bodyFloor: 200 * time.Millisecond,
		Tokens: func() []config.Secret { return []config.Secret{testToken} }})
	addr := serveReal(t, s)
	for _, path := range []string{"/api/sessions/s1/events", "/api/sessions/s1/events/batch"} {
		ev := envelope("s1", 1, "x", map[string]any{}).json()
		want := http.StatusCreated
		if strings.HasSuffix(path, "batch") {
			ev, want = []byte(`{"events":[`+string(envelope("s1", 2, "x", map[string]any{}).json())+`]}`), http.StatusOK
		}
		req, _ := http.NewRequest("POST", "http://"+addr+path, strings.NewReader(string(ev)))
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s with a slow store: %d %s, want %d", path, resp.StatusCode, body, want)
		}
	}
	http.DefaultClient.CloseIdleConnections()
}

// TestInFlightCap: while bodies hold the whole in-flight budget, another
// request waits briefly and then gets 503 with Retry-After (which the
// forwarder retries); once the budget is back, it goes through.
func TestInFlightCap(t *testing.T) {
	const budget = 64 << 10
	e := newEnv(t, func(o *Options) { o.maxInFlight, o.budgetWait = budget, 100*time.Millisecond })
	pr, pw := io.Pipe()
	held := make(chan int, 1)
	go func() { // owned: ends when the pipe is closed below
		req, _ := http.NewRequest("POST", e.ts.URL+"/api/sessions/s1/events", pr)
		req.ContentLength = budget
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := e.client.Do(req)
		if err != nil {
			held <- 0
			return
		}
		resp.Body.Close()
		held <- resp.StatusCode
	}()
	free := func() int64 {
		e.srv.lim.inFlight.mu.Lock()
		defer e.srv.lim.inFlight.mu.Unlock()
		return e.srv.lim.inFlight.free
	}
	poll.Until(t, 10*time.Second, "the first body to take the budget", func() bool { return free() == 0 })

	resp := e.do("POST", "/api/sessions/s1/events", envelope("s1", 1, "x", map[string]any{}).json(), nil)
	var out errorBody
	_ = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(out.Error, "retry") {
		t.Errorf("with the budget taken: %d (Retry-After %q) %q; want 503 with Retry-After", resp.StatusCode,
			resp.Header.Get("Retry-After"), out.Error)
	}
	_ = pw.CloseWithError(io.ErrUnexpectedEOF) // the first client gives up
	<-held
	poll.Until(t, 10*time.Second, "the budget to come back", func() bool { return free() == budget })
	e.post("s1", envelope("s1", 1, "x", map[string]any{}))
}

// TestStreamsPerCredential: one token may hold DefaultMaxStreams live
// streams; the next gets 429 saying why, another token is not affected,
// and closing a stream makes room again.
func TestStreamsPerCredential(t *testing.T) {
	e := newEnv(t)
	e.setTokens(testToken, "second-token-0123456789")
	streams := make([]*sseReader, 0, DefaultMaxStreams)
	for i := range DefaultMaxStreams {
		path := "/api/sessions/s" + strconv.Itoa(i) + "/stream"
		if i%2 == 1 {
			path = "/api/stream" // the list's feed counts too
		}
		streams = append(streams, e.openStream(path, nil))
	}
	resp := e.do("GET", "/api/sessions/s1/stream", nil, nil)
	var out errorBody
	_ = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(out.Error, keyMaxStreams) ||
		!strings.Contains(out.Error, strconv.Itoa(DefaultMaxStreams)) {
		t.Fatalf("stream %d: %d %q; want 429 naming the limit", DefaultMaxStreams+1, resp.StatusCode, out.Error)
	}
	other := e.openStream("/api/sessions/s1/stream", map[string]string{"Authorization": "Bearer second-token-0123456789"})
	other.close()

	streams[0].close()
	poll.Until(t, 10*time.Second, "a closed stream to free its place", func() bool {
		resp := e.do("GET", "/api/sessions/s1/stream", nil, nil)
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// TestEventIDPerSessionOverHTTP: an event_id another session used is a
// new event in this one (201, not a duplicate), on the fake and on real
// SQLite, single and in a batch; a repeat in the same session stays a
// duplicate.
func TestEventIDPerSessionOverHTTP(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) store.Store{
		"memstore": func(*testing.T) store.Store { return memstore.New() },
		"sqlite":   func(t *testing.T) store.Store { return openSQLite(t) },
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnvWith(t, open(t))
			a := envelope("s1", 1, "x", map[string]any{"n": "a"})
			e.post("s1", a)
			b := a.with("session_id", "s2").with("event_data", map[string]any{"n": "b"})
			if got := e.post("s2", b); got.Duplicate || got.Cursor != 1 {
				t.Errorf("s1's event_id in s2: %+v; want stored at cursor 1", got)
			}
			c := a.with("session_id", "s3")
			var out batchResponse
			body, _ := json.Marshal(map[string]any{"events": []json.RawMessage{c.json(), c.json()}})
			if code := e.call("POST", "/api/sessions/s3/events/batch", body, nil, &out); code != 200 ||
				len(out.Results) != 2 || out.Results[0].Status != 201 || out.Results[1].Status != 200 {
				t.Errorf("batch in s3: %d %+v; want 201 then 200", code, out.Results)
			}
			var dup ingestResponse
			if code := e.call("POST", "/api/sessions/s2/events", b.json(), nil, &dup); code != 200 || !dup.Duplicate {
				t.Errorf("repeat in s2: %d %+v; want 200 duplicate", code, dup)
			}
		})
	}
}
