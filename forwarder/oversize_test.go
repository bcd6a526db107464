package forwarder

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/server/backend"
	"github.com/claude-relay/claude-relay/internal/server/backend/memstore"
	"github.com/claude-relay/claude-relay/internal/server/store"
)

const realToken = "forwarder-test-token"

// realBackend is the reference backend (package backend over its in-memory
// store) with opts' limits, counting the statuses it answered by path.
type realBackend struct {
	store  *memstore.Store
	url    string
	mu     sync.Mutex
	status map[string][]int // "single" or "batch" -> statuses in order
}

func newRealBackend(t *testing.T, opts backend.Options) *realBackend {
	t.Helper()
	rb := &realBackend{store: memstore.New(), status: map[string][]int{}}
	opts.Store = rb.store
	opts.Tokens = func() []config.Secret { return []config.Secret{realToken} }
	srv := backend.New(opts)
	h := srv.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		kind := "single"
		if strings.HasSuffix(r.URL.Path, "/batch") {
			kind = "batch"
		}
		rb.mu.Lock()
		rb.status[kind] = append(rb.status[kind], rec.status)
		rb.mu.Unlock()
	}))
	rb.url = ts.URL
	t.Cleanup(func() {
		ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = rb.store.Close()
	})
	return rb
}

func (rb *realBackend) statuses(kind string) []int {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	return append([]int(nil), rb.status[kind]...)
}

func (rb *realBackend) events(t *testing.T, session string) []store.Event {
	t.Helper()
	evs, err := rb.store.Events(context.Background(), session, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// openReal starts a forwarder on the real backend, collecting the errors
// it reports.
func openReal(t *testing.T, rb *realBackend, batch string) (*Forwarder, string, *errorLog) {
	t.Helper()
	dir := t.TempDir()
	opts := fastOpts(dir, rb.url)
	opts.AttemptTimeout = 20 * time.Second // a 12 MiB upload under -race
	opts.Token = func() string { return realToken }
	opts.Batch = batch
	errs := &errorLog{}
	opts.OnError = errs.add
	f, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	return f, dir, errs
}

// bigEvent is an assistant line whose text is n bytes.
func bigEvent(session string, n int) Event {
	return Event{SessionID: session, InteractionID: "i1", Type: "assistant", Source: "agent",
		Data: json.RawMessage(`{"type":"assistant","message":{"text":"` + strings.Repeat("é", n/2) + `"}}`)}
}

// TestOversizeEventGetsAStandIn: with the backend's default limits, a 12 MiB
// CLI line between two small ones is refused (413) alone; the forwarder
// keeps it whole on disk and the backend stores a stand-in under the same
// event_id and seq, so the session reads 1, 2, 3 in order with nothing
// missing, and the problem is reported once.
func TestOversizeEventGetsAStandIn(t *testing.T) {
	rb := newRealBackend(t, backend.Options{})
	f, dir, errs := openReal(t, rb, "auto")
	f.Start()
	big := bigEvent("s", 12<<20)
	var ids []string
	for _, ev := range []Event{event("s", "i1", 1), big, event("s", "i1", 3)} {
		acc, err := f.Enqueue(ev)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, acc.EventID)
	}
	if err := f.Stop(ctxTimeout(t, 60*time.Second)); err != nil {
		t.Fatal(err)
	}

	evs := rb.events(t, "s")
	if len(evs) != 3 {
		t.Fatalf("backend has %d events, want 3", len(evs))
	}
	for i, ev := range evs {
		if ev.EventID != ids[i] || ev.Seq != int64(i+1) {
			t.Errorf("event %d: %s seq %d; want %s seq %d (order)", i, ev.EventID, ev.Seq, ids[i], i+1)
		}
	}
	var data struct {
		Type     string       `json:"type"`
		Oversize OversizeInfo `json:"relay_oversize"`
	}
	if err := json.Unmarshal(evs[1].EventData, &data); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(big.Data)
	o := data.Oversize
	if data.Type != "assistant" || evs[1].EventType != "assistant" || o.Bytes != len(big.Data) ||
		o.SHA256 != hex.EncodeToString(sum[:]) || o.Limit != backend.DefaultMaxEvent ||
		len(o.Head) == 0 || !strings.HasPrefix(string(big.Data), o.Head) {
		t.Errorf("stand-in = type %q, event_type %q, %+v (head %d bytes); want the original's type, size, hash, limit and head",
			data.Type, evs[1].EventType, o, len(o.Head))
	}

	kept := readOversize(t, dir, "s")
	if len(kept) != 1 || kept[0].EventID != ids[1] || string(kept[0].Envelope.EventData) != string(big.Data) {
		t.Fatalf("oversize file: %d lines; want the whole original of %s", len(kept), ids[1])
	}
	if got := errs.of(CodeDeadLetter); len(got) != 1 {
		t.Errorf("reported %d dead letters, want 1: %v", len(got), got)
	} else if e := got[0]; e.Status != 413 || !strings.Contains(e.Message, "kept whole") {
		t.Errorf("report %+v; want 413 saying where the original is", e)
	}
	st, err := Inspect(dir)
	if err != nil || len(st) != 1 || st[0].DeadLettered != 1 || st[0].Oversize != 1 || st[0].Pending != 0 {
		t.Errorf("Inspect = %+v, %v; want one kept event, nothing pending", st, err)
	}

	// `spool flush --dead-letters` leaves it: the backend has its stand-in.
	f2, err := Open(fastOpts(dir, rb.url))
	if err != nil {
		t.Fatal(err)
	}
	n, err := f2.RequeueDeadLetters()
	_ = f2.Stop(context.Background())
	if err != nil || n != 0 || len(readOversize(t, dir, "s")) != 1 {
		t.Errorf("RequeueDeadLetters = %d, %v; want the kept event left where it is", n, err)
	}
}

type keptLine struct {
	EventID  string   `json:"event_id"`
	SHA256   string   `json:"sha256"`
	Envelope Envelope `json:"envelope"`
}

func readOversize(t *testing.T, dir, session string) []keptLine {
	t.Helper()
	fh, err := os.Open(oversizePath(dir, session))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []keptLine
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, maxRecord+4096)
	for sc.Scan() {
		var l keptLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

// TestBatchOverTheLimitIsSplit: batches the backend refuses for their size
// are split until they fit, and an event over the per-event limit inside
// one ends up alone with its stand-in; everything arrives once, in order,
// and nothing but that event is dead-lettered.
func TestBatchOverTheLimitIsSplit(t *testing.T) {
	rb := newRealBackend(t, backend.Options{MaxEventBytes: 64 << 10, MaxBatchBytes: 160 << 10})
	f, dir, errs := openReal(t, rb, "always")
	const n = 24
	var ids []string
	for i := range n {
		ev := bigEvent("b", 30<<10) // 8 fit in a batch
		if i == 13 {
			ev = bigEvent("b", 100<<10) // over the per-event limit
		}
		acc, err := f.Enqueue(ev)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, acc.EventID)
	}
	f.Start() // the whole backlog at once: one read of the spool
	if err := f.Stop(ctxTimeout(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	evs := rb.events(t, "b")
	if len(evs) != n {
		t.Fatalf("backend has %d events, want %d", len(evs), n)
	}
	for i, ev := range evs {
		if ev.EventID != ids[i] || ev.Seq != int64(i+1) {
			t.Fatalf("event %d: %s seq %d; want %s seq %d (order)", i, ev.EventID, ev.Seq, ids[i], i+1)
		}
		if standIn := strings.Contains(string(ev.EventData), `"relay_oversize"`); standIn != (i == 13) {
			t.Errorf("event %d: stand-in %v", i, standIn)
		}
	}
	if got := count(rb.statuses("batch"), 413); got == 0 {
		t.Errorf("no batch was refused as too large (%v): the test does not test splitting", rb.statuses("batch"))
	}
	if got := count(rb.statuses("single"), 413); got != 1 {
		t.Errorf("%d single posts refused, want 1 (the event over the limit, once)", got)
	}
	if len(readOversize(t, dir, "b")) != 1 || len(errs.of(CodeDeadLetter)) != 1 {
		t.Errorf("want exactly the one event kept and reported; dead letters: %v", errs.of(CodeDeadLetter))
	}
}

// of returns the errors reported with code.
func (l *errorLog) of(code ErrorCode) []Error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Error
	for _, e := range l.errs {
		if e.Code == code {
			out = append(out, e)
		}
	}
	return out
}

func count(xs []int, x int) int {
	n := 0
	for _, v := range xs {
		if v == x {
			n++
		}
	}
	return n
}

// TestOversizeKeptOnceAcrossRestarts: a forwarder stopped after keeping an
// event but before its stand-in was acknowledged keeps it once, not twice,
// when the next one delivers it.
func TestOversizeKeptOnceAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	r := record{eventID: "e-1", payload: []byte(`{"session_id":"s","event_id":"e-1","seq":1,"event_type":"x","event_data":{"type":"x"},"timestamp":"2026-01-01T00:00:00Z","source":"agent"}`)}
	path := oversizePath(dir, "s")
	for range 2 {
		if err := keepOversize(path, r, OversizeInfo{Bytes: 10}, "too large"); err != nil {
			t.Fatal(err)
		}
	}
	other := r
	other.eventID = "e-2"
	if err := keepOversize(path, other, OversizeInfo{Bytes: 10}, "too large"); err != nil {
		t.Fatal(err)
	}
	if got := readOversize(t, dir, "s"); len(got) != 2 || got[0].EventID != "e-1" || got[1].EventID != "e-2" {
		t.Errorf("oversize file has %+v; want e-1 and e-2 once each", got)
	}
}

func TestStandIn(t *testing.T) {
	env := func(data string) []byte {
		return fmt.Appendf(nil, `{"session_id":"s","interaction_id":"i","event_id":"e","seq":7,"event_type":"transcript.user","event_data":%s,"timestamp":"2026-01-01T00:00:00.5Z","source":"terminal"}`, data)
	}
	tests := []struct {
		name     string
		data     string
		limit    int64
		wantType string
		headLen  int
	}{
		{"type kept", `{"type":"user","text":"` + strings.Repeat("a", 5000) + `"}`, 1 << 20, "user", maxHead},
		{"no type", `{"text":"x"}`, 0, "", -1},
		{"type not a string", `{"type":{"a":1},"t":"` + strings.Repeat("b", 100) + `"}`, 0, "", -1},
		{"small limit, head cut before a split character", `{"t":"` + strings.Repeat("€", 100) + `"}`, 1600, "", 99},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, info, eventType, err := standIn(env(tt.data), tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			var got Envelope
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if got.EventID != "e" || got.Seq != 7 || got.EventType != "transcript.user" || eventType != "transcript.user" ||
				got.Timestamp != "2026-01-01T00:00:00.5Z" || got.Source != "terminal" || got.SessionID != "s" || got.InteractionID != "i" {
				t.Errorf("envelope %+v changed", got)
			}
			var data map[string]json.RawMessage
			_ = json.Unmarshal(got.EventData, &data)
			var typ string
			_ = json.Unmarshal(data["type"], &typ)
			if typ != tt.wantType {
				t.Errorf("type %q, want %q", typ, tt.wantType)
			}
			if tt.headLen < 0 {
				tt.headLen = len(tt.data)
			}
			if len(info.Head) != tt.headLen || !strings.HasPrefix(tt.data, info.Head) || info.Bytes != len(tt.data) {
				t.Errorf("head %d bytes (%q…), bytes %d; want %d and %d", len(info.Head), clip(info.Head), info.Bytes, tt.headLen, len(tt.data))
			}
		})
	}
	if limitOf([]byte(`{"error":"too big","limit":4096}`)) != 4096 || limitOf([]byte(`<html>`)) != 0 {
		t.Error("limitOf")
	}
}

func clip(s string) string { return s[:min(len(s), 20)] }
