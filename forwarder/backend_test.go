package forwarder

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// sink is a fault-injecting backend that stores events idempotently by
// event_id, as the reference backend does, and records what it committed.
type sink struct {
	t        *testing.T
	mu       sync.Mutex
	seen     map[string]bool
	commits  map[string][]int64 // session → seqs in commit order
	attempts atomic.Int64
	fault    func(n int64, w http.ResponseWriter, r *http.Request) (handled, afterCommit bool)
	token    atomic.Pointer[string]
	noBatch  bool
	srv      *httptest.Server
}

func newSink(t *testing.T) *sink {
	s := &sink{t: t, seen: map[string]bool{}, commits: map[string][]int64{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *sink) setToken(tok string) { s.token.Store(&tok) }

func (s *sink) serve(w http.ResponseWriter, r *http.Request) {
	n := s.attempts.Add(1)
	if tok := s.token.Load(); tok != nil && r.Header.Get("Authorization") != "Bearer "+*tok {
		http.Error(w, `{"error":"bad token"}`, http.StatusUnauthorized)
		return
	}
	var after bool
	if s.fault != nil {
		var handled bool
		if handled, after = s.fault(n, w, r); handled && !after {
			return
		}
	}
	body, _ := io.ReadAll(r.Body)
	batch := strings.HasSuffix(r.URL.Path, "/batch")
	if batch && s.noBatch {
		http.NotFound(w, r)
		return
	}
	var envs []Envelope
	if batch {
		var b struct{ Events []Envelope }
		if err := json.Unmarshal(body, &b); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		envs = b.Events
	} else {
		var e Envelope
		if err := json.Unmarshal(body, &e); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		if k := r.Header.Get("Idempotency-Key"); k != e.EventID {
			http.Error(w, "idempotency key mismatch", 400)
			return
		}
		envs = []Envelope{e}
	}
	type result struct {
		EventID   string `json:"event_id"`
		Status    int    `json:"status"`
		Duplicate bool   `json:"duplicate,omitempty"`
		Error     string `json:"error,omitempty"`
	}
	var results []result
	s.mu.Lock()
	for _, e := range envs {
		switch {
		case strings.Contains(string(e.EventData), "reject-me"):
			results = append(results, result{EventID: e.EventID, Status: 400, Error: "rejected by test"})
		case s.seen[e.EventID]:
			results = append(results, result{EventID: e.EventID, Status: 200, Duplicate: true})
		default:
			s.seen[e.EventID] = true
			s.commits[e.SessionID] = append(s.commits[e.SessionID], e.Seq)
			results = append(results, result{EventID: e.EventID, Status: 201})
		}
	}
	s.mu.Unlock()
	if after {
		s.fault(-n, w, r) // the fault fires after the commit
		return
	}
	if batch {
		json.NewEncoder(w).Encode(map[string]any{"results": results})
		return
	}
	// As the reference backend answers a single event.
	w.WriteHeader(results[0].Status)
	json.NewEncoder(w).Encode(results[0])
}

// committed returns a copy of the commits.
func (s *sink) committed() map[string][]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]int64{}
	for k, v := range s.commits {
		out[k] = append([]int64(nil), v...)
	}
	return out
}

// assertExactlyOnce checks every session got seqs 1..want exactly once, in order.
func (s *sink) assertExactlyOnce(t *testing.T, want map[string]int64) {
	t.Helper()
	got := s.committed()
	for sess, n := range want {
		seqs := got[sess]
		if int64(len(seqs)) != n {
			t.Errorf("session %s: %d commits, want %d", sess, len(seqs), n)
			continue
		}
		for i, q := range seqs {
			if q != int64(i+1) {
				t.Errorf("session %s: commit %d has seq %d (order or duplicate broken)", sess, i, q)
				break
			}
		}
	}
}
