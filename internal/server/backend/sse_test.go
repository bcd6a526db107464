package backend

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/server/backend/memstore"
	"github.com/claude-relay/claude-relay/internal/server/store"
)

const wait = 10 * time.Second

func TestSessionStreamResume(t *testing.T) {
	e := newEnv(t)
	for i := int64(1); i <= 3; i++ {
		e.post("s1", envelope("s1", i, "assistant", map[string]any{"n": i}))
	}
	e.post("other", envelope("other", 1, "x", map[string]any{}))

	// A reconnecting EventSource sends the last id it saw.
	s := e.openStream("/api/sessions/s1/stream", map[string]string{"Last-Event-ID": "1"})
	for _, want := range []int64{2, 3} {
		f := s.next(t, wait)
		if f.Event != "event" {
			t.Fatalf("frame %+v, want event: event", f)
		}
		if ev := f.event(t); ev.Cursor != want || ev.SessionID != "s1" {
			t.Fatalf("got cursor %d session %q, want %d s1", ev.Cursor, ev.SessionID, want)
		}
	}
	// Live: a new event arrives without reconnecting; other sessions' do not.
	e.post("other", envelope("other", 2, "x", map[string]any{}))
	posted := e.post("s1", envelope("s1", 4, "result", map[string]any{"ok": true}))
	f := s.next(t, wait)
	ev := f.event(t)
	if ev.Cursor != posted.Cursor || ev.EventType != "result" || string(ev.EventData) != `{"ok":true}` {
		t.Fatalf("live event %+v", ev)
	}

	// ?after= works when there is no Last-Event-ID; the header wins.
	s2 := e.openStream("/api/sessions/s1/stream?after=3", nil)
	if ev := s2.next(t, wait).event(t); ev.Cursor != 4 {
		t.Fatalf("?after=3 starts at %d", ev.Cursor)
	}
	s3 := e.openStream("/api/sessions/s1/stream?after=0", map[string]string{"Last-Event-ID": "3"})
	if ev := s3.next(t, wait).event(t); ev.Cursor != 4 {
		t.Fatalf("Last-Event-ID 3 with ?after=0 starts at %d", ev.Cursor)
	}
	resp := e.do("GET", "/api/sessions/s1/stream", nil, map[string]string{"Last-Event-ID": "x"})
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("bad Last-Event-ID: %d, want 400", resp.StatusCode)
	}
}

// A stream opened before its session exists picks up the first event.
func TestSessionStreamBeforeFirstEvent(t *testing.T) {
	e := newEnv(t)
	s := e.openStream("/api/sessions/new/stream", nil)
	e.post("new", envelope("new", 1, "x", map[string]any{}))
	if ev := s.next(t, wait).event(t); ev.Cursor != 1 {
		t.Fatalf("cursor %d", ev.Cursor)
	}
}

// Many events in a burst all arrive, in order, none twice, even though the
// notifications coalesce.
func TestSessionStreamBurst(t *testing.T) {
	e := newEnv(t)
	s := e.openStream("/api/sessions/b/stream", nil)
	const n = 1200 // more than one store page
	batch := make([]json.RawMessage, 0, 100)
	for i := 1; i <= n; i++ {
		batch = append(batch, envelope("b", int64(i), "x", map[string]any{"i": i}).json())
		if len(batch) == 100 {
			body, _ := json.Marshal(map[string]any{"events": batch})
			if code := e.call("POST", "/api/sessions/b/events/batch", body, nil, nil); code != 200 {
				t.Fatalf("batch: %d", code)
			}
			batch = batch[:0]
		}
	}
	for want := int64(1); want <= n; want++ {
		if ev := s.next(t, wait).event(t); ev.Cursor != want {
			t.Fatalf("cursor %d, want %d", ev.Cursor, want)
		}
	}
}

func TestSessionStreamHeartbeat(t *testing.T) {
	e := newEnv(t)
	e.srv.heartbeat = 20 * time.Millisecond
	s := e.openStream("/api/sessions/s1/stream", nil)
	deadline := time.After(wait)
	for {
		select {
		case f, ok := <-s.frames:
			if !ok {
				t.Fatal("stream ended")
			}
			if f.Comment == "ping" {
				return
			}
		case <-deadline:
			t.Fatal("no ping")
		}
	}
}

func TestSessionsStream(t *testing.T) {
	e := newEnv(t)
	e.srv.sseFlushInterval = time.Millisecond
	e.post("old", envelope("old", 1, "x", map[string]any{}))
	s := e.openStream("/api/stream", nil)
	f := s.next(t, wait)
	var sess store.Session
	if err := json.Unmarshal([]byte(f.Data), &sess); f.Event != "session" || err != nil || sess.ID != "old" {
		t.Fatalf("first frame %+v (%v), want the existing session", f, err)
	}
	if f := s.next(t, wait); f.Event != "snapshot" {
		t.Fatalf("frame %+v, want snapshot", f)
	}
	e.post("fresh", envelope("fresh", 1, "result", map[string]any{"type": "result", "total_cost_usd": 0.25}))
	for {
		f := s.next(t, wait)
		if f.Event != "session" {
			continue // a resync snapshot may come first
		}
		if err := json.Unmarshal([]byte(f.Data), &sess); err != nil {
			t.Fatal(err)
		}
		if sess.ID == "fresh" {
			if sess.EventCount != 1 || sess.CostUSD != 0.25 {
				t.Errorf("session %+v", sess)
			}
			return
		}
	}
}

// Serve stops on ctx: open streams end, in-flight requests finish, and the
// server's goroutines are gone (TestMain checks leaks).
func TestServeGracefulShutdown(t *testing.T) {
	st := memstore.New()
	defer st.Close()
	srv := New(Options{Store: st, Tokens: func() []config.Secret { return []config.Secret{testToken} }})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, ln, srv) }()

	base := "http://" + ln.Addr().String()
	client := &http.Client{}
	defer client.CloseIdleConnections()
	req, _ := http.NewRequest("GET", base+"/api/sessions/s1/stream", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	streamDone := make(chan error, 1)
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := resp.Body.Read(buf); err != nil {
				streamDone <- err
				return
			}
		}
	}()

	start := time.Now()
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(wait):
		t.Fatal("Serve did not return after ctx ended")
	}
	if d := time.Since(start); d > ShutdownGrace/2 {
		t.Errorf("shutdown took %v: the stream held it up", d)
	}
	select {
	case err := <-streamDone:
		if !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "closed") {
			t.Logf("stream ended with %v", err)
		}
	case <-time.After(wait):
		t.Fatal("the stream did not end")
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Error("server still answering after Serve returned")
	}
}

// A listener that fails makes Serve return at once, without waiting for
// ctx, with an error that names the address.
func TestServeFailedListener(t *testing.T) {
	srv := New(Options{Store: memstore.New()})
	defer srv.Shutdown(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	err = Serve(context.Background(), ln, srv)
	if err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("err %v, want one naming %s", err, addr)
	}
}
