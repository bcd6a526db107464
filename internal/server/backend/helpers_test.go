package backend

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.uber.org/goleak"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/server/backend/memstore"
	"github.com/claude-relay/claude-relay/internal/server/store"
)

func TestMain(m *testing.M) {
	if os.Getenv(envDecideURL) != "" {
		os.Exit(decideAsChild()) // a client process of TestSelfApprovalRealPeer
	}
	goleak.VerifyTestMain(m)
}

const testToken = "test-token-0123456789"

// env is a running test server with its fake store and an authenticated
// client.
type env struct {
	t      *testing.T
	srv    *Server
	store  *memstore.Store
	ts     *httptest.Server
	client *http.Client
	token  atomic.Pointer[[]config.Secret]
}

type envOption func(*Options)

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	ms := memstore.New()
	e := newEnvWith(t, ms, opts...)
	e.store = ms
	return e
}

// newEnvWith runs a server over st; e.store stays nil unless st is the fake.
func newEnvWith(t *testing.T, st store.Store, opts ...envOption) *env {
	t.Helper()
	e := &env{t: t}
	toks := []config.Secret{testToken}
	e.token.Store(&toks)
	o := Options{
		Store:  st,
		Tokens: func() []config.Secret { return *e.token.Load() },
	}
	for _, fn := range opts {
		fn(&o)
	}
	e.srv = New(o)
	e.ts = httptest.NewServer(e.srv.Handler())
	e.client = &http.Client{
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	// Cleanups run last-in first-out: end the streams, then the server.
	t.Cleanup(func() {
		e.client.CloseIdleConnections()
		e.ts.Close()
		_ = st.Close()
	})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return e
}

func (e *env) setTokens(toks ...config.Secret) { e.token.Store(&toks) }

// do sends a request with the test token unless hdr overrides
// Authorization ("" removes it).
func (e *env) do(method, path string, body []byte, hdr map[string]string) *http.Response {
	e.t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, e.ts.URL+path, r)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

// call sends a request and decodes a JSON answer into out (when not nil).
func (e *env) call(method, path string, body []byte, hdr map[string]string, out any) int {
	e.t.Helper()
	resp := e.do(method, path, body, hdr)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			e.t.Fatalf("%s %s: %d answer %q is not JSON: %v", method, path, resp.StatusCode, data, err)
		}
	}
	return resp.StatusCode
}

// wire is an envelope as a client posts it.
type wire map[string]any

func envelope(session string, seq int64, typ string, data any) wire {
	return wire{
		"session_id":     session,
		"interaction_id": "i1",
		"event_id":       uuid.NewString(),
		"seq":            seq,
		"event_type":     typ,
		"event_data":     data,
		"timestamp":      time.Now().UTC().Format(time.RFC3339Nano),
		"source":         "agent",
	}
}

func (w wire) with(k string, v any) wire {
	out := make(wire, len(w))
	for kk, vv := range w {
		out[kk] = vv
	}
	if v == nil {
		delete(out, k)
	} else {
		out[k] = v
	}
	return out
}

func (w wire) json() []byte {
	b, err := json.Marshal(map[string]any(w))
	if err != nil {
		panic(err)
	}
	return b
}

func (e *env) post(session string, w wire) ingestResponse {
	e.t.Helper()
	var out ingestResponse
	if code := e.call("POST", "/api/sessions/"+session+"/events", w.json(), nil, &out); code != http.StatusCreated {
		e.t.Fatalf("post: status %d, want 201", code)
	}
	return out
}

// sseFrame is one parsed Server-Sent Event.
type sseFrame struct {
	ID, Event, Data string
	Comment         string
}

// sseReader reads frames from a stream in a goroutine owned by the test.
type sseReader struct {
	frames chan sseFrame
	resp   *http.Response
	done   chan struct{}
}

func (e *env) openStream(path string, hdr map[string]string) *sseReader {
	e.t.Helper()
	resp := e.do("GET", path, nil, hdr)
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		e.t.Fatalf("GET %s: status %d: %s", path, resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		e.t.Fatalf("GET %s: Content-Type %q", path, ct)
	}
	r := &sseReader{frames: make(chan sseFrame, 1024), resp: resp, done: make(chan struct{})}
	go r.read()
	e.t.Cleanup(r.close)
	return r
}

func (r *sseReader) read() {
	defer close(r.done)
	defer close(r.frames)
	sc := bufio.NewScanner(r.resp.Body)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	var f sseFrame
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if f.Event != "" || f.Comment != "" || len(data) > 0 {
				f.Data = strings.Join(data, "\n")
				r.frames <- f
			}
			f, data = sseFrame{}, nil
		case strings.HasPrefix(line, ":"):
			f.Comment = strings.TrimSpace(line[1:])
		case strings.HasPrefix(line, "id: "):
			f.ID = line[4:]
		case strings.HasPrefix(line, "event: "):
			f.Event = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = append(data, line[6:])
		}
	}
}

func (r *sseReader) close() {
	r.resp.Body.Close()
	<-r.done
}

// next returns the next frame that is not a comment, failing after d.
func (r *sseReader) next(t *testing.T, d time.Duration) sseFrame {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case f, ok := <-r.frames:
			if !ok {
				t.Fatal("stream ended")
			}
			if f.Comment != "" && f.Event == "" {
				continue
			}
			return f
		case <-timer.C:
			t.Fatalf("no SSE frame within %v", d)
		}
	}
}

// event decodes a frame's data as an event.
func (f sseFrame) event(t *testing.T) store.Event {
	t.Helper()
	var ev store.Event
	if err := json.Unmarshal([]byte(f.Data), &ev); err != nil {
		t.Fatalf("frame data %q: %v", f.Data, err)
	}
	if f.ID != fmt.Sprint(ev.Cursor) {
		t.Fatalf("frame id %q, event cursor %d", f.ID, ev.Cursor)
	}
	return ev
}

// syncBuffer is a bytes.Buffer safe for a logger and a test at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
