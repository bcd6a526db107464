package backend

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

// Page sizes of the read API.
const (
	defaultEventsLimit   = 100
	maxEventsLimit       = 1000
	defaultSessionsLimit = 100
	// maxSessionsLimit stays below the stores' own cap of 1000 rows per
	// call, because a page asks for one session more than it returns to
	// know whether a next page exists.
	maxSessionsLimit = 500
	// maxQueryLen bounds ?q=: a search box, not a document.
	maxQueryLen = 200
)

type sessionsResponse struct {
	Sessions []store.Session `json:"sessions"`
	// Next is the opaque ?after= of the following page; empty on the last.
	Next string `json:"next"`
}

type eventsResponse struct {
	Events []store.Event `json:"events"`
	Next   int64         `json:"next"` // pass as ?after= for the following page
}

// statuses are the values ?status= accepts: the statuses, and stale
// (running, but no event for store.StaleAfter; running then lists the rest).
var statuses = []string{store.StatusRunning, store.StatusStale, store.StatusCompleted, store.StatusFailed, store.StatusCancelled, store.StatusInterrupted, store.StatusUnknown}

// paramError is a query parameter the API cannot use: its name, the value
// sent and what is allowed. It becomes a 400 with that sentence.
type paramError struct {
	Name, Value, Allowed string
}

func (e *paramError) Error() string {
	return e.Name + " must be " + e.Allowed + ", got " + strconv.Quote(clip(e.Value))
}

// handleSessions is GET /api/sessions?q=&status=&project=&from=&to=&limit=&after=,
// newest first: {"sessions":[...],"next":"<cursor or empty>"}. The store
// call's duration goes out as Server-Timing "db", so the dashboard (and the
// benchmark) can tell the server's share of a slow search.
func (s *Server) handleSessions(w http.ResponseWriter, r *http.Request) {
	opts, err := listOptions(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	limit := opts.Limit
	opts.Limit++ // one more than the page: is there a next one?
	start := time.Now()
	opts.Now = start // the filter and the stale marks judge at one instant
	list, err := s.store.Sessions(r.Context(), opts)
	setServerTiming(w, time.Since(start))
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	for i := range list {
		store.MarkStale(opts.Now, &list[i])
	}
	resp := sessionsResponse{Sessions: list}
	if len(list) > limit {
		resp.Sessions = list[:limit]
		last := resp.Sessions[limit-1]
		resp.Next = encodeListCursor(store.ListCursor{UpdatedAt: last.UpdatedAt, ID: last.ID})
	}
	if resp.Sessions == nil {
		resp.Sessions = []store.Session{} // "[]", not null
	}
	writeJSON(w, http.StatusOK, resp)
}

// listOptions reads the session list's query parameters. Every bad value is
// a *paramError.
func listOptions(q url.Values) (store.ListOptions, error) {
	var opts store.ListOptions
	limit, err := intValue(q, "limit", defaultSessionsLimit, 1, maxSessionsLimit)
	if err != nil {
		return opts, err
	}
	opts.Limit = limit
	opts.Query = strings.TrimSpace(q.Get("q"))
	if utf8.RuneCountInString(opts.Query) > maxQueryLen {
		return opts, &paramError{"q", opts.Query, "at most " + strconv.Itoa(maxQueryLen) + " characters"}
	}
	if !utf8.ValidString(opts.Query) {
		return opts, &paramError{"q", opts.Query, "UTF-8 text"}
	}
	if v := q.Get("status"); v != "" {
		if !slices.Contains(statuses, v) {
			return opts, &paramError{"status", v, "one of " + strings.Join(statuses, ", ")}
		}
		opts.Status = v
	}
	opts.Project = q.Get("project")
	if opts.From, opts.To, err = timeRange(q); err != nil {
		return opts, err
	}
	if v := q.Get("after"); v != "" {
		c, err := decodeListCursor(v)
		if err != nil {
			return opts, &paramError{"after", v, "the \"next\" value of a previous page (start again without after)"}
		}
		opts.After = &c
	}
	return opts, nil
}

// timeRange reads ?from= and ?to=, each RFC 3339 or a YYYY-MM-DD date (a
// UTC day). A date in to includes that whole day, as a person picking
// "from Monday to Friday" means; an instant in to is exclusive.
func timeRange(q url.Values) (from, to time.Time, err error) {
	if from, err = timeValue(q, "from", false); err != nil {
		return
	}
	if to, err = timeValue(q, "to", true); err != nil {
		return
	}
	if !from.IsZero() && !to.IsZero() && !from.Before(to) {
		return from, to, &paramError{"to", q.Get("to"), "after from (" + q.Get("from") + ")"}
	}
	return from, to, nil
}

func timeValue(q url.Values, name string, endOfDay bool) (time.Time, error) {
	v := q.Get(name)
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.DateOnly, v)
	if err != nil {
		return time.Time{}, &paramError{name, v, "an RFC 3339 time (2026-11-21T22:14:26Z) or a date (2026-11-21)"}
	}
	if endOfDay {
		t = t.AddDate(0, 0, 1)
	}
	return t, nil
}

// The session list's cursor is base64url("<UpdatedAt unix nanos>:<id>"):
// opaque to clients, exact (nanoseconds survive), and an ID may hold
// colons since only the first one splits.
func encodeListCursor(c store.ListCursor) string {
	raw := strconv.FormatInt(c.UpdatedAt.UnixNano(), 10) + ":" + c.ID
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

var errBadCursor = errors.New("not a session list cursor")

func decodeListCursor(s string) (store.ListCursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return store.ListCursor{}, fmt.Errorf("%w: %w", errBadCursor, err)
	}
	nanos, id, ok := strings.Cut(string(raw), ":")
	if !ok || id == "" {
		return store.ListCursor{}, errBadCursor
	}
	n, err := strconv.ParseInt(nanos, 10, 64)
	if err != nil || n <= 0 {
		return store.ListCursor{}, errBadCursor
	}
	return store.ListCursor{UpdatedAt: time.Unix(0, n).UTC(), ID: id}, nil
}

// setServerTiming reports the store's share of a request (W3C Server
// Timing), in milliseconds.
func setServerTiming(w http.ResponseWriter, d time.Duration) {
	w.Header().Set("Server-Timing", "db;dur="+strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 3, 64))
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
	store.MarkStale(time.Now(), &sess)
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
	n, err := intValue(r.URL.Query(), name, def, lo, hi)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return 0, false
	}
	return n, true
}

// intValue is intParam's reading: a *paramError when the value is bad.
func intValue(q url.Values, name string, def, lo, hi int) (int, error) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo {
		return 0, &paramError{name, v, "an integer >= " + strconv.Itoa(lo)}
	}
	if hi >= 0 && n > hi {
		n = hi
	}
	return n, nil
}

// sessionExists tells the dashboard whether a session page has a session
// behind it (dashboard.Pages).
func (s *Server) sessionExists(r *http.Request, id string) (bool, error) {
	_, err := s.store.Session(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
