package backend

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/claude-relay/claude-relay/internal/store"
)

// Page sizes of the read API.
const (
	defaultEventsLimit   = 100
	maxEventsLimit       = 1000
	defaultSessionsLimit = 100
	maxSessionsLimit     = 1000
)

type sessionsResponse struct {
	Sessions []store.Session `json:"sessions"`
}

type eventsResponse struct {
	Events []store.Event `json:"events"`
	Next   int64         `json:"next"` // pass as ?after= for the following page
}

// handleSessions is GET /api/sessions?limit=N, newest first.
func (s *Server) handleSessions(w http.ResponseWriter, r *http.Request) {
	limit, ok := intParam(w, r, "limit", defaultSessionsLimit, 1, maxSessionsLimit)
	if !ok {
		return
	}
	list, err := s.store.Sessions(r.Context(), store.ListOptions{Limit: limit})
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	if list == nil {
		list = []store.Session{} // "[]", not null
	}
	writeJSON(w, http.StatusOK, sessionsResponse{Sessions: list})
}

// handleSession is GET /api/sessions/{id}.
func (s *Server) handleSession(w http.ResponseWriter, r *http.Request) {
	sess, err := s.store.Session(r.Context(), r.PathValue("id"))
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, "no session "+strconv.Quote(clip(r.PathValue("id"))))
		return
	}
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sess)
}

// handleEvents is GET /api/sessions/{id}/events?after=CURSOR&limit=N. An
// unknown session has no events yet; that is an empty page, not a 404, so a
// viewer can poll a session before its first event.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	after, ok := intParam(w, r, "after", 0, 0, -1)
	if !ok {
		return
	}
	limit, ok := intParam(w, r, "limit", defaultEventsLimit, 1, maxEventsLimit)
	if !ok {
		return
	}
	evs, err := s.store.Events(r.Context(), r.PathValue("id"), int64(after), limit)
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	next := int64(after)
	if len(evs) > 0 {
		next = evs[len(evs)-1].Cursor
	} else {
		evs = []store.Event{}
	}
	writeJSON(w, http.StatusOK, eventsResponse{Events: evs, Next: next})
}

// intParam reads query parameter name: def when absent, 400 when not an
// integer >= lo, clamped to hi (hi < 0: no upper bound).
func intParam(w http.ResponseWriter, r *http.Request, name string, def, lo, hi int) (int, bool) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo {
		writeError(w, http.StatusBadRequest, name+" must be an integer >= "+strconv.Itoa(lo)+", got "+strconv.Quote(clip(v)))
		return 0, false
	}
	if hi >= 0 && n > hi {
		n = hi
	}
	return n, true
}
