package mockapi

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Server is a running scripted Messages API. It is safe for concurrent use.
type Server struct {
	t      testing.TB
	script Script
	srv    *httptest.Server
	// done is closed by Close so that slow streams stop at once instead of
	// holding Close (which waits for every handler) for their whole delay.
	done      chan struct{}
	closeOnce sync.Once

	mu       sync.Mutex
	requests []Request
	failed   map[int]int // failures served so far, per script turn
}

// New starts a server for script on 127.0.0.1 and closes it when the test
// ends.
func New(t testing.TB, script Script) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("mockapi: listen on loopback: %v", err)
	}
	s := &Server{
		t:      t,
		script: script,
		done:   make(chan struct{}),
		failed: make(map[int]int),
	}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.handle))
	s.srv.Listener = ln
	s.srv.Start()
	t.Cleanup(s.Close)
	return s
}

// URL is the base URL for ANTHROPIC_BASE_URL, without a trailing slash.
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server, cutting any stream in progress. It is idempotent.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.done)
		s.srv.Close()
	})
}

// Requests returns every request received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// MainRequests returns the main-conversation requests received so far.
func (s *Server) MainRequests() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Main {
			out = append(out, r)
		}
	}
	return out
}

// LastMainRequest returns the latest main-conversation request, if any.
func (s *Server) LastMainRequest() (Request, bool) {
	main := s.MainRequests()
	if len(main) == 0 {
		return Request{}, false
	}
	return main[len(main)-1], true
}

// ToolResults returns the tool_result blocks sent in main-conversation
// requests, in order of first appearance. Every request repeats the whole
// history, so results are deduplicated by ToolUseID.
func (s *Server) ToolResults() []ToolResult {
	seen := make(map[string]bool)
	var out []ToolResult
	for _, r := range s.MainRequests() {
		for _, tr := range r.ToolResults() {
			if seen[tr.ToolUseID] {
				continue
			}
			seen[tr.ToolUseID] = true
			out = append(out, tr)
		}
	}
	return out
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r)
	s.mu.Unlock()
	s.t.Logf("mockapi: %s %s main=%v turn=%d status=%d", r.Method, r.Path, r.Main, r.Turn, r.Status)
}

func (s *Server) handle(w http.ResponseWriter, hr *http.Request) {
	body, err := io.ReadAll(hr.Body)
	r := Request{
		Method: hr.Method,
		Path:   hr.URL.Path,
		Query:  hr.URL.RawQuery,
		Header: hr.Header.Clone(),
		Body:   body,
		Turn:   -1,
		Time:   time.Now(),
	}
	if err != nil {
		r.Status = http.StatusBadRequest
		s.record(r)
		writeError(w, r.Status, "mockapi: read body: "+err.Error(), 0)
		return
	}
	switch {
	case r.Path == "/v1/messages" && r.Method == http.MethodPost:
		s.messages(w, hr, r)
	case r.Path == "/v1/messages/count_tokens" && r.Method == http.MethodPost:
		r.Status = http.StatusOK
		s.record(r)
		writeJSON(w, r.Status, map[string]any{"input_tokens": len(body)/4 + 1})
	case r.Path == "/v1/models" && r.Method == http.MethodGet:
		r.Status = http.StatusOK
		s.record(r)
		writeJSON(w, r.Status, modelList())
	case r.Path == "/api/hello":
		// The CLI's connectivity probe (HEAD) when nonessential traffic
		// is allowed.
		r.Status = http.StatusOK
		s.record(r)
		w.WriteHeader(r.Status)
	default:
		r.Status = http.StatusNotFound
		s.record(r)
		writeError(w, r.Status, "mockapi: no route for "+r.Method+" "+r.Path, 0)
	}
}

// messages answers POST /v1/messages.
func (s *Server) messages(w http.ResponseWriter, hr *http.Request, r Request) {
	b, err := r.parseBody()
	if err != nil {
		r.Status = http.StatusBadRequest
		s.record(r)
		writeError(w, r.Status, "mockapi: "+err.Error(), 0)
		return
	}
	r.Main = isMain(b, r.System)
	var rep reply
	var fail *Failure
	if r.Main {
		r.Turn = r.AssistantMessages()
		rep, fail = s.pick(r.Turn)
	} else {
		rep = sideReply(b)
	}
	if fail != nil {
		r.Status = fail.Status
		s.record(r)
		writeError(w, fail.Status, fail.message(), fail.RetryAfter)
		return
	}
	r.Status = http.StatusOK
	s.record(r)
	model := b.Model
	if model == "" {
		model = "claude-mock"
	}
	if !r.Stream {
		writeJSON(w, http.StatusOK, rep.message(model))
		return
	}
	// Write errors mean the client went away; nothing is left to do.
	_ = rep.stream(w, model, hr.Context().Done(), s.done)
}

// pick returns the reply for turn i, or the failure to serve instead.
func (s *Server) pick(i int) (reply, *Failure) {
	if i >= len(s.script) {
		return textReply("done"), nil
	}
	turn := s.script[i]
	if f := turn.Fail; f != nil {
		s.mu.Lock()
		n := s.failed[i]
		failNow := f.times() < 0 || n < f.times()
		if failNow {
			s.failed[i] = n + 1
		}
		s.mu.Unlock()
		if failNow {
			return reply{}, f
		}
	}
	return turnReply(turn), nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", newID("req_"))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeError writes an error in the Anthropic shape, which is what the
// SDK inside the CLI parses to decide whether and when to retry.
func writeError(w http.ResponseWriter, status int, msg string, retryAfter time.Duration) {
	if retryAfter > 0 {
		secs := (retryAfter + time.Second - 1) / time.Second
		w.Header().Set("Retry-After", strconv.Itoa(int(secs)))
		w.Header().Set("Retry-After-Ms", strconv.FormatInt(retryAfter.Milliseconds(), 10))
	}
	writeJSON(w, status, map[string]any{
		"type":  "error",
		"error": map[string]any{"type": errorType(status), "message": msg},
	})
}

func modelList() map[string]any {
	ids := []string{"claude-opus-5-5", "claude-sonnet-5", "claude-haiku-4-5"}
	data := make([]map[string]any, 0, len(ids))
	for _, id := range ids {
		data = append(data, map[string]any{
			"type": "model", "id": id, "display_name": id, "created_at": "2026-01-01T00:00:00Z",
		})
	}
	return map[string]any{"data": data, "has_more": false, "first_id": ids[0], "last_id": ids[len(ids)-1]}
}
