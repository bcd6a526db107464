package forwarder

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/backend"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
)

// foreign is a server that is not a claude-relay backend: it answers every
// request with answer, and counts them.
type foreign struct {
	srv  *httptest.Server
	hits atomic.Int64
}

func newForeign(t *testing.T, answer http.HandlerFunc) *foreign {
	fs := &foreign{}
	fs.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fs.hits.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		answer(w, r)
	}))
	t.Cleanup(fs.srv.Close)
	return fs
}

// nginx answers as a web server's default site does, to everything.
func nginx(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html")
	_, _ = io.WriteString(w, "<html><head><title>Welcome to nginx!</title></head><body><h1>Welcome to nginx!</h1></body></html>\n")
}

// foreignAnswers are answers that acknowledge nothing: what a wrong
// backend.url behind a proxy gets, and replies that do not match the event.
var foreignAnswers = map[string]http.HandlerFunc{
	"nginx 200 page": nginx,
	"200 JSON that is no duplicate": func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"ok":true}`)
	},
	"200 duplicate of another event": func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"duplicate":true,"event_id":"00000000-0000-0000-0000-000000000000"}`)
	},
	"201 for another event": func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/batch") {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"event_id":"00000000-0000-0000-0000-000000000000","cursor":1}`)
	},
	"404 page": func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) },
	"redirect to a page": func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/index.html", http.StatusFound)
	},
	"batch results for other events": func(w http.ResponseWriter, r *http.Request) {
		var b struct{ Events []Envelope }
		_ = json.NewDecoder(r.Body).Decode(&b)
		res := make([]map[string]any, len(b.Events))
		for i := range res {
			res[i] = map[string]any{"event_id": fmt.Sprintf("other-%d", i), "status": 201}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"results": res})
	},
}

// TestForeignAnswersAcknowledgeNothing: against a server that answers
// something other than the backend's word (nginx's welcome page to
// everything, above all), every event stays in the spool, the error
// handler hears what answers and what to do, and the events reach a real
// backend later, each exactly once.
func TestForeignAnswersAcknowledgeNothing(t *testing.T) {
	for name, answer := range foreignAnswers {
		for _, batch := range []string{"auto", "never"} {
			t.Run(name+"/batch="+batch, func(t *testing.T) {
				fs := newForeign(t, answer)
				dir := t.TempDir()
				var log errorLog
				opts := fastOpts(dir, fs.srv.URL)
				opts.Batch, opts.OnError = batch, log.add
				f, err := Open(opts)
				if err != nil {
					t.Fatal(err)
				}
				f.Start()
				const n = 5
				for i := range n {
					if _, err := f.Enqueue(event("s", "i", i)); err != nil {
						t.Fatal(err)
					}
				}
				// A positive barrier: the server answered many times and the
				// forwarder reported it.
				poll.Until(t, 10*time.Second, "five answers and one not-a-backend report", func() bool {
					return fs.hits.Load() >= 5 && len(log.sessions(CodeNotBackend)) == 1
				})
				if err := f.Stop(ctxTimeout(t, 50*time.Millisecond)); !errors.Is(err, ErrUndelivered) {
					t.Fatalf("Stop = %v; want ErrUndelivered: nothing was acknowledged", err)
				}
				if st := f.Stats(); st.Delivered != 0 || st.DeadLettered != 0 {
					t.Errorf("stats %+v; want nothing delivered or dead-lettered", st)
				}
				log.mu.Lock()
				var msg string
				for _, e := range log.errs {
					if e.Code == CodeNotBackend {
						msg = e.Message
					}
				}
				log.mu.Unlock()
				for _, want := range []string{fs.srv.URL + " answers like a web server, not a claude-relay backend", "/api/sessions/s/events got HTTP ", "check backend.url"} {
					if !strings.Contains(msg, want) {
						t.Errorf("report %q lacks %q", msg, want)
					}
				}
				st, err := Inspect(dir)
				if err != nil || len(st) != 1 || st[0].Pending != n || !strings.Contains(st[0].LastError, "answers like a web server") {
					t.Fatalf("Inspect = %+v, %v; want %d events pending and the reason", st, err, n)
				}

				// The real backend, later: everything arrives, once.
				rb := newRealBackend(t, backend.Options{})
				opts = fastOpts(dir, rb.url)
				opts.Token = func() string { return realToken }
				f2, err := Open(opts)
				if err != nil {
					t.Fatal(err)
				}
				f2.Start()
				if err := f2.Stop(ctxTimeout(t, 20*time.Second)); err != nil {
					t.Fatal(err)
				}
				evs := rb.events(t, "s")
				if len(evs) != n {
					t.Fatalf("the backend has %d events, want %d", len(evs), n)
				}
				for i, ev := range evs {
					if ev.Seq != int64(i+1) {
						t.Errorf("event %d has seq %d", i, ev.Seq)
					}
				}
			})
		}
	}
}

// TestReferenceBackendAnswersAcknowledge: the reference backend's own
// answers (201 with its event_id, 200 {"duplicate":true}, batch results
// naming each event) acknowledge, singly and in batches, and re-sending
// everything is acknowledged as duplicates.
func TestReferenceBackendAnswersAcknowledge(t *testing.T) {
	for _, batch := range []string{"always", "never"} {
		t.Run("batch="+batch, func(t *testing.T) {
			rb := newRealBackend(t, backend.Options{})
			dir := t.TempDir()
			for round := range 2 {
				opts := fastOpts(dir, rb.url)
				opts.Batch, opts.Token = batch, func() string { return realToken }
				f, err := Open(opts)
				if err != nil {
					t.Fatal(err)
				}
				f.Start()
				for i := range 10 {
					if _, err := f.Enqueue(event("s", fmt.Sprint("i", round), i)); err != nil {
						t.Fatal(err)
					}
				}
				if err := f.Stop(ctxTimeout(t, 20*time.Second)); err != nil {
					t.Fatal(err)
				}
				if st := f.Stats(); st.Delivered != 10 {
					t.Errorf("round %d: %+v", round, st)
				}
			}
			if n := len(rb.events(t, "s")); n != 20 {
				t.Errorf("the backend has %d events, want 20", n)
			}
		})
	}
}

// TestJudge pins the acknowledgement rule for one posted event.
func TestJudge(t *testing.T) {
	const id = "7d9c2c1e-1111-2222-3333-444455556666"
	cases := []struct {
		status int
		body   string
		want   verdict
	}{
		{201, `{"event_id":"` + id + `","cursor":3}`, verdictStored},
		{201, ``, verdictStored},
		{201, `{"event_id":"another"}`, verdictForeign},
		{200, `{"duplicate":true,"event_id":"` + id + `"}`, verdictStored},
		{200, `{"duplicate":true}`, verdictStored},
		{200, `{"duplicate":true,"event_id":"another"}`, verdictForeign},
		{200, `{"duplicate":false}`, verdictForeign},
		{200, `<html>Welcome to nginx!</html>`, verdictForeign},
		{200, ``, verdictForeign},
		{204, ``, verdictForeign},
		{302, ``, verdictForeign},
		{404, `<html>404</html>`, verdictForeign},
		{405, ``, verdictForeign},
		{400, `{"error":"bad"}`, verdictRefused},
		{422, ``, verdictRefused},
		{401, ``, verdictAuth},
		{403, ``, verdictAuth},
		{413, `{"limit":10}`, verdictTooLarge},
		{429, ``, verdictRetry},
		{500, ``, verdictRetry},
		{503, ``, verdictRetry},
	}
	for _, c := range cases {
		if got := judge(response{status: c.status, body: []byte(c.body)}, id); got != c.want {
			t.Errorf("judge(%d %s) = %d, want %d", c.status, c.body, got, c.want)
		}
	}
}

// FuzzJudge: whatever a server answers, only 201, or 200 whose JSON says
// duplicate (for this event, when it names one), acknowledges the event.
func FuzzJudge(f *testing.F) {
	f.Add(201, []byte(`{"event_id":"e","cursor":1}`))
	f.Add(200, []byte(`{"duplicate":true,"event_id":"e"}`))
	f.Add(200, []byte(`<html>Welcome to nginx!</html>`))
	f.Add(200, []byte(`{"duplicate":"true"}`))
	f.Add(302, []byte(``))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		v := judge(response{status: status, body: body}, "e")
		if v != verdictStored {
			return
		}
		var d struct {
			Duplicate bool `json:"duplicate"`
		}
		if status != 201 && !(status == 200 && json.Unmarshal(body, &d) == nil && d.Duplicate) {
			t.Fatalf("HTTP %d %q acknowledged the event", status, body)
		}
	})
}
