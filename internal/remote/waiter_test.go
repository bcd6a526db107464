package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/claude-relay/claude-relay/internal/relay"
	"github.com/claude-relay/claude-relay/internal/testkit/syncbuf"
	"github.com/claude-relay/claude-relay/internal/wire"
)

func TestMain(m *testing.M) {
	// Close must leave no goroutine: the loop, the poll's watcher, idle
	// connections.
	goleak.VerifyTestMain(m)
}

// within bounds every wait in these tests; nothing here is timed.
const within = 10 * time.Second

// fakeCore is a run core with approvals the test sets; Answer takes a
// decision (and the approval stops pending) unless answerErr is set.
type fakeCore struct {
	mu        sync.Mutex
	pending   []relay.PendingApproval
	changed   chan struct{}
	answers   []answerCall
	answerErr error
	asked     chan int // len(pending) at each Pending call
	answered  chan struct{}
}

type answerCall struct {
	runID, approvalID string
	rep               relay.Reply
}

func newFakeCore(pending ...relay.PendingApproval) *fakeCore {
	return &fakeCore{pending: pending, changed: make(chan struct{}), asked: make(chan int, 1000), answered: make(chan struct{}, 100)}
}

func (c *fakeCore) Pending() ([]relay.PendingApproval, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case c.asked <- len(c.pending):
	default:
	}
	return slices.Clone(c.pending), c.changed
}

func (c *fakeCore) set(pending ...relay.PendingApproval) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending = pending
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *fakeCore) Answer(runID, approvalID string, rep relay.Reply) error {
	c.mu.Lock()
	defer func() { c.answered <- struct{}{} }()
	defer c.mu.Unlock()
	c.answers = append(c.answers, answerCall{runID, approvalID, rep})
	if c.answerErr != nil {
		return c.answerErr
	}
	c.pending = slices.DeleteFunc(c.pending, func(p relay.PendingApproval) bool { return p.ApprovalID == approvalID })
	close(c.changed)
	c.changed = make(chan struct{})
	return nil
}

func (c *fakeCore) calls() []answerCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.answers)
}

// waitIdle waits until the waiter reads an empty pending list.
func (c *fakeCore) waitIdle(t *testing.T) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case n := <-c.asked:
			if n == 0 {
				return
			}
		case <-deadline:
			t.Fatal("the waiter never read an empty pending list")
		}
	}
}

func (c *fakeCore) waitAnswer(t *testing.T) {
	t.Helper()
	receive(t, c.answered, "the core to be answered")
}

// receive takes a value from ch, failing t when none comes within within.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(within):
		t.Fatalf("waited %v for %s", within, what)
		var zero T
		return zero
	}
}

// poll is one request the fake backend got.
type poll struct {
	n         int
	ids, wait string
	auth      string
	reply     chan func(http.ResponseWriter) // the test answers with one; nil: hold until cancelled
	cancelled chan struct{}                  // closed when the client gave up on it
}

// fakeBackend serves GET /api/approvals/decisions: each request goes to
// the test, which answers it, or holds it like a long-poll.
type fakeBackend struct {
	srv      *httptest.Server
	requests chan *poll
	mu       sync.Mutex
	n        int
	stop     chan struct{}
}

func newFakeBackend(t *testing.T) *fakeBackend {
	b := &fakeBackend{requests: make(chan *poll, 100), stop: make(chan struct{})}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/api/approvals/decisions" {
			t.Errorf("%s %s", r.Method, r.URL)
			http.NotFound(w, r)
			return
		}
		b.mu.Lock()
		b.n++
		p := &poll{n: b.n, ids: r.URL.Query().Get("ids"), wait: r.URL.Query().Get("wait"), auth: r.Header.Get("Authorization"),
			reply: make(chan func(http.ResponseWriter), 1), cancelled: make(chan struct{})}
		b.mu.Unlock()
		b.requests <- p
		select {
		case f := <-p.reply:
			f(w)
		case <-r.Context().Done():
			close(p.cancelled)
		case <-b.stop:
		}
	}))
	t.Cleanup(func() {
		close(b.stop)
		b.srv.Close()
	})
	return b
}

func (b *fakeBackend) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

func (b *fakeBackend) next(t *testing.T) *poll {
	t.Helper()
	return receive(t, b.requests, "a poll to reach the backend")
}

func status(code int, header ...string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		http.Error(w, http.StatusText(code), code)
	}
}

func decisions(ds ...wire.RemoteDecision) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"decisions": ds}) //nolint:errcheck
	}
}

// sleeps records the waits the waiter asks for instead of waiting them
// (the loop goes on at once); from the limit-th on, it waits for Close.
type sleeps struct {
	mu    sync.Mutex
	waits []time.Duration
	limit int
	got   chan time.Duration
}

func newSleeps(limit int) *sleeps { return &sleeps{limit: limit, got: make(chan time.Duration, 1000)} }

func (s *sleeps) sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	if wake != nil {
		return ctx.Err() == nil // MinInterval between polls: not a backoff
	}
	s.mu.Lock()
	s.waits = append(s.waits, d)
	n := len(s.waits)
	s.mu.Unlock()
	s.got <- d
	if s.limit > 0 && n >= s.limit {
		<-ctx.Done()
		return false
	}
	return ctx.Err() == nil
}

func (s *sleeps) wait(t *testing.T, n int) []time.Duration {
	t.Helper()
	var out []time.Duration
	for len(out) < n {
		select {
		case d := <-s.got:
			out = append(out, d)
		case <-time.After(within):
			t.Fatalf("only %d backoffs: %v", len(out), out)
		}
	}
	return out
}

// start runs a waiter on core against url with a recorded log.
func start(t *testing.T, core Core, url string, s *sleeps) (*Waiter, *syncbuf.Buffer) {
	t.Helper()
	logs := &syncbuf.Buffer{}
	w := newWaiter(Options{Core: core, URL: url, Token: func() string { return "helper-token" },
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if s == nil {
		s = newSleeps(0)
	}
	w.sleep = s.sleep
	w.start()
	t.Cleanup(func() {
		w.Close()
		if t.Failed() {
			t.Logf("waiter log:\n%s", logs.String())
		}
	})
	return w, logs
}

// count counts log lines at level that contain msg.
func count(logs *syncbuf.Buffer, level, msg string) int {
	n := 0
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "level="+level) && strings.Contains(l, msg) {
			n++
		}
	}
	return n
}

var a1 = relay.PendingApproval{RunID: "run-1", ApprovalID: "a1"}

// Nothing is asked while nothing is pending; one poll, with the pending
// IDs and the helper's token, while something is; its decision answers the
// core as the dashboard; then nothing again.
func TestOnePollWhilePending(t *testing.T) {
	core, be := newFakeCore(), newFakeBackend(t)
	start(t, core, be.srv.URL+"/", nil)
	core.waitIdle(t)
	if n := be.count(); n != 0 {
		t.Fatalf("%d polls with nothing pending", n)
	}
	core.set(a1)
	p := be.next(t)
	if p.ids != "a1" || p.wait != "25s" || p.auth != "Bearer helper-token" {
		t.Errorf("poll ids=%q wait=%q auth=%q", p.ids, p.wait, p.auth)
	}
	p.reply <- decisions(wire.RemoteDecision{ApprovalID: "a1", DecisionID: "d-1", Decision: "allow", By: "phone", Reason: "fine",
		UpdatedInput: json.RawMessage(`{"command":"ls"}`)})
	core.waitAnswer(t)
	core.waitIdle(t)
	got := core.calls()
	want := relay.Reply{Decision: "allow", Reason: "fine", UpdatedInput: json.RawMessage(`{"command":"ls"}`), By: "dashboard", ByDetail: "phone", DecisionID: "d-1"}
	if len(got) != 1 || got[0].runID != "run-1" || got[0].approvalID != "a1" || fmt.Sprint(got[0].rep) != fmt.Sprint(want) {
		t.Errorf("answers %+v, want run-1/a1 %+v", got, want)
	}
	if n := be.count(); n != 1 {
		t.Errorf("%d polls, want 1", n)
	}
}

// A new approval cancels the poll in flight and asks again with both.
func TestNewApprovalRestartsThePoll(t *testing.T) {
	core, be := newFakeCore(a1), newFakeBackend(t)
	start(t, core, be.srv.URL, nil)
	first := be.next(t)
	if first.ids != "a1" {
		t.Fatalf("first poll ids %q", first.ids)
	}
	core.set(a1, relay.PendingApproval{RunID: "run-2", ApprovalID: "a0"})
	second := be.next(t)
	receive(t, first.cancelled, "the first poll to be cancelled")
	if second.ids != "a0,a1" {
		t.Errorf("second poll ids %q, want a0,a1", second.ids)
	}
	if n := be.count(); n != 2 {
		t.Errorf("%d polls, want 2 (one at a time)", n)
	}
}

// 5xx backs off with full jitter over a capped exponential, honouring
// Retry-After; the problem is logged once, and so is the recovery.
func TestBackoffOnServerErrors(t *testing.T) {
	core, be := newFakeCore(a1), newFakeBackend(t)
	s := newSleeps(0)
	_, logs := start(t, core, be.srv.URL, s)
	be.next(t).reply <- status(http.StatusInternalServerError)
	be.next(t).reply <- status(http.StatusServiceUnavailable, "Retry-After", "7")
	be.next(t).reply <- status(http.StatusBadGateway)
	be.next(t).reply <- decisions(wire.RemoteDecision{ApprovalID: "a1", DecisionID: "d-1", Decision: "deny", By: "phone"})
	core.waitAnswer(t)
	waits := s.wait(t, 3)
	lo := 500 * time.Millisecond
	if waits[0] != lo || waits[1] != 7*time.Second || waits[2] < lo || waits[2] >= 4*lo {
		t.Errorf("backoffs %v: want 500ms, then Retry-After's 7s, then in [500ms, 2s)", waits)
	}
	if n := count(logs, "WARN", "cannot ask the backend for decisions"); n != 1 {
		t.Errorf("the outage was logged at warn %d times, want once", n)
	}
	if n := count(logs, "INFO", "answers the decisions poll again"); n != 1 {
		t.Errorf("the recovery was logged %d times, want once", n)
	}
}

// Connection refused backs off too, growing, capped.
func TestBackoffWhenUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	s := newSleeps(8)
	_, logs := start(t, newFakeCore(a1), url, s)
	waits := s.wait(t, 8)
	lo, hi := 500*time.Millisecond, 30*time.Second
	for i, d := range waits {
		if ceiling := min(lo<<i, hi); d < lo || d > ceiling {
			t.Errorf("backoff %d: %s, want in [%s, %s]", i+1, d, lo, ceiling)
		}
	}
	if n := count(logs, "WARN", "cannot ask the backend for decisions"); n != 1 {
		t.Errorf("logged at warn %d times, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "connection refused") {
		t.Errorf("the log does not say why:\n%s", logs.String())
	}
}

// An older backend without the decisions API is asked again only after
// minutes, and that is said once, at info; a refused token is said once,
// at warn, with what to set.
func TestOldBackendAndRefusedToken(t *testing.T) {
	for _, tc := range []struct {
		code  int
		level string
		msg   string
		wait  time.Duration
	}{
		{http.StatusNotFound, "INFO", "the backend has no decisions API (HTTP 404)", 5 * time.Minute},
		{http.StatusNotImplemented, "INFO", "the backend has no decisions API (HTTP 501)", 5 * time.Minute},
		{http.StatusUnauthorized, "WARN", "set backend.token to a token the backend accepts", 30 * time.Second},
		{http.StatusForbidden, "WARN", "refused this helper's token for dashboard decisions (HTTP 403)", 30 * time.Second},
	} {
		t.Run(fmt.Sprint(tc.code), func(t *testing.T) {
			core, be := newFakeCore(a1), newFakeBackend(t)
			s := newSleeps(3)
			_, logs := start(t, core, be.srv.URL, s)
			for range 3 {
				be.next(t).reply <- status(tc.code)
			}
			for i, d := range s.wait(t, 3) {
				if d != tc.wait {
					t.Errorf("wait %d: %s, want %s", i+1, d, tc.wait)
				}
			}
			if n := count(logs, tc.level, tc.msg); n != 1 {
				t.Errorf("%q at %s: %d times, want once:\n%s", tc.msg, tc.level, n, logs.String())
			}
			if tc.level == "INFO" && count(logs, "WARN", "") != 0 {
				t.Errorf("an old backend is no warning:\n%s", logs.String())
			}
		})
	}
}

// A decision the core refuses is logged and its approval is not asked
// about again (the backend would answer with the same one at once, for
// ever); other approvals still are.
func TestRefusedDecisionDoesNotLoop(t *testing.T) {
	core, be := newFakeCore(a1), newFakeBackend(t)
	core.answerErr = fmt.Errorf("%w: decision \"maybe\" is not one of this tool approval's options", relay.ErrBadReply)
	_, logs := start(t, core, be.srv.URL, nil)
	be.next(t).reply <- decisions(wire.RemoteDecision{ApprovalID: "a1", DecisionID: "d-bad", Decision: "maybe", By: "phone"})
	core.waitAnswer(t)
	core.mu.Lock()
	core.answerErr = nil
	core.mu.Unlock()
	core.set(a1, relay.PendingApproval{RunID: "run-1", ApprovalID: "a2"})
	p := be.next(t)
	if p.ids != "a2" {
		t.Errorf("after the refusal the poll asks about %q, want only a2", p.ids)
	}
	p.reply <- decisions(wire.RemoteDecision{ApprovalID: "a1", DecisionID: "d-bad", Decision: "maybe"}, wire.RemoteDecision{ApprovalID: "a2", DecisionID: "d-2", Decision: "allow"})
	core.waitAnswer(t)
	var tries int
	for _, c := range core.calls() {
		if c.approvalID == "a1" {
			tries++
		}
	}
	if tries != 1 {
		t.Errorf("the refused decision was tried %d times", tries)
	}
	if n := count(logs, "WARN", "refused a decision made in the dashboard"); n != 1 {
		t.Errorf("the refusal was logged %d times:\n%s", n, logs.String())
	}
}

// A decision that comes after another side answered is quiet.
func TestLateDecisionIsQuiet(t *testing.T) {
	core, be := newFakeCore(a1), newFakeBackend(t)
	core.answerErr = &relay.DecidedError{ApprovalID: "a1", Decided: relay.Decided{By: "extension", Decision: "deny"}}
	_, logs := start(t, core, be.srv.URL, nil)
	be.next(t).reply <- decisions(wire.RemoteDecision{ApprovalID: "a1", DecisionID: "d-1", Decision: "allow"},
		wire.RemoteDecision{ApprovalID: "not-ours", DecisionID: "d-x", Decision: "allow"})
	core.waitAnswer(t)
	core.set()
	core.waitIdle(t)
	if calls := core.calls(); len(calls) != 1 {
		t.Errorf("answers %+v: a decision for an approval not pending here was applied", calls)
	}
	if n := count(logs, "WARN", ""); n != 0 {
		t.Errorf("a late decision was a warning:\n%s", logs.String())
	}
}

// Close cancels the poll in flight and stops; it is idempotent. With no
// backend URL a Waiter does nothing.
func TestClose(t *testing.T) {
	core, be := newFakeCore(a1), newFakeBackend(t)
	w, _ := start(t, core, be.srv.URL, nil)
	p := be.next(t)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	receive(t, p.cancelled, "Close to end the poll in flight")
	w.Close()                          //nolint:errcheck // idempotent
	Start(Options{Core: core}).Close() //nolint:errcheck
	if n := be.count(); n != 1 {
		t.Errorf("%d polls", n)
	}
}

// A body that is not the decisions object is a failure like any other.
func TestBadBody(t *testing.T) {
	core, be := newFakeCore(a1), newFakeBackend(t)
	s := newSleeps(1)
	_, logs := start(t, core, be.srv.URL, s)
	be.next(t).reply <- func(w http.ResponseWriter) { w.Write([]byte("<html>")) } //nolint:errcheck
	s.wait(t, 1)
	if !strings.Contains(logs.String(), `the answer is not {\"decisions\":[…]}`) {
		t.Errorf("log:\n%s", logs.String())
	}
	if len(core.calls()) != 0 {
		t.Error("answered from a bad body")
	}
}

// One poll names at most the backend's bound of approval IDs.
func TestPollNamesAtMostMaxIDs(t *testing.T) {
	var many []relay.PendingApproval
	for i := range maxIDs + 5 {
		many = append(many, relay.PendingApproval{RunID: "run-1", ApprovalID: fmt.Sprintf("a%03d", i)})
	}
	core, be := newFakeCore(many...), newFakeBackend(t)
	start(t, core, be.srv.URL, nil)
	if ids := strings.Split(be.next(t).ids, ","); len(ids) != maxIDs || ids[0] != "a000" {
		t.Errorf("a poll named %d IDs from %s, want %d", len(ids), ids[0], maxIDs)
	}
}
