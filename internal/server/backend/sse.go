package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

const (
	streamSession  = "session"
	streamSessions = "sessions"
	// ssePage is how many events a stream reads per store call.
	ssePage = 500
	// sseWriteTimeout bounds one write to a stream client, so a client that
	// stopped reading cannot pin a handler (and block shutdown) forever.
	sseWriteTimeout = 30 * time.Second
	// sseRetry tells EventSource how soon to reconnect, in milliseconds.
	sseRetry = 2000
)

// sseWriter buffers SSE frames and flushes them in one write.
type sseWriter struct {
	rc  *http.ResponseController
	w   http.ResponseWriter
	buf bytes.Buffer
}

// startSSE writes the stream's headers and first frame.
func startSSE(w http.ResponseWriter) (*sseWriter, error) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	sw := &sseWriter{rc: http.NewResponseController(w), w: w}
	sw.buf.WriteString("retry: " + strconv.Itoa(sseRetry) + "\n\n")
	return sw, sw.flush()
}

// event adds one frame. data is JSON from encoding/json, which has no raw
// newlines; splitting on them anyway keeps the framing right whatever it is.
func (sw *sseWriter) event(id int64, name string, data []byte) {
	if id > 0 {
		sw.buf.WriteString("id: ")
		sw.buf.WriteString(strconv.FormatInt(id, 10))
		sw.buf.WriteByte('\n')
	}
	sw.buf.WriteString("event: ")
	sw.buf.WriteString(name)
	sw.buf.WriteByte('\n')
	for line := range bytes.SplitSeq(bytes.TrimRight(data, "\n"), []byte("\n")) {
		sw.buf.WriteString("data: ")
		sw.buf.Write(line)
		sw.buf.WriteByte('\n')
	}
	sw.buf.WriteByte('\n')
}

func (sw *sseWriter) comment(text string) {
	sw.buf.WriteString(": " + text + "\n\n")
}

// flush sends what is buffered. Deadlines are best effort: a writer that
// does not support them (httptest's recorder) just has none.
func (sw *sseWriter) flush() error {
	if sw.buf.Len() == 0 {
		return nil
	}
	_ = sw.rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
	_, err := sw.w.Write(sw.buf.Bytes())
	sw.buf.Reset()
	if err != nil {
		return err
	}
	if err := sw.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// streamContext ends with the request or when the server shuts down.
func (s *Server) streamContext(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// openStream counts the stream against its credential's limit, subscribes
// to one session's notifications ("" for all), starts the SSE response and
// counts the client. sw is nil when the stream could not start (the
// response is then written); done releases it all.
func (s *Server) openStream(w http.ResponseWriter, r *http.Request, session, label string) (*subscriber, context.Context, *sseWriter, func()) {
	release, ok := s.takeStream(w, r)
	if !ok {
		return nil, nil, nil, nil
	}
	sub := s.hub.subscribe(session)
	if sub == nil {
		release()
		writeError(w, http.StatusServiceUnavailable, "server is shutting down")
		return nil, nil, nil, nil
	}
	ctx, cancel := s.streamContext(r)
	gauge := s.metrics.sseClients.WithLabelValues(label)
	gauge.Inc()
	done := func() {
		gauge.Dec()
		cancel()
		s.hub.unsubscribe(sub)
		release()
	}
	sw, err := startSSE(w)
	if err != nil {
		done()
		return nil, nil, nil, nil
	}
	return sub, ctx, sw, done
}

// takeStream counts one more live stream of the request's credential; at
// the limit it answers 429 and ok is false. Each stream costs goroutines
// and a store reader for as long as it is open, so one token (or a leaked
// one) cannot open them without bound.
func (s *Server) takeStream(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	var id, name string
	if p := principalOf(r); p != nil {
		id, name = p.id, p.name
	}
	release, ok = s.lim.streams.take(id)
	if !ok {
		w.Header().Set("Retry-After", "10")
		writeError(w, http.StatusTooManyRequests, fmt.Sprintf(
			"token %q has %d live streams open, the limit (%s); close dashboard tabs it has open, or raise the limit",
			name, s.lim.streams.max, keyMaxStreams))
	}
	return release, ok
}

// handleSessionStream is GET /api/sessions/{id}/stream: every event after
// the cursor in Last-Event-ID (a reconnecting EventSource sends it) or
// ?after=, then each new event as it is stored. Frames: "id: <cursor>",
// "event: event", "data: <event JSON>"; ": ping" when idle.
func (s *Server) handleSessionStream(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	after, ok := resumeCursor(w, r)
	if !ok {
		return
	}
	// Subscribe before the first read: an event stored in between then
	// wakes us, and the read after the wake-up finds it.
	sub, ctx, sw, done := s.openStream(w, r, id, streamSession)
	if sw == nil {
		return
	}
	defer done()
	tick := time.NewTicker(s.heartbeat)
	defer tick.Stop()
	var err error
	for {
		after, err = s.sendEvents(ctx, sw, id, after)
		if err != nil {
			if ctx.Err() == nil && !isWriteError(err) {
				s.log.Warn("backend: session stream ended", "session", id, "err", err)
			}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-sub.wake:
		case <-tick.C:
			// Re-reading on every ping too makes a lost notification cost
			// at most one heartbeat of latency.
			sw.comment("ping")
		}
	}
}

// writeError marks a failed write to the client, as opposed to a store error.
type writeErr struct{ err error }

func (e writeErr) Error() string { return "writing to the client: " + e.err.Error() }
func (e writeErr) Unwrap() error { return e.err }

func isWriteError(err error) bool {
	var we writeErr
	return errors.As(err, &we)
}

// sendEvents writes every event of session id after the cursor and returns
// the new cursor.
func (s *Server) sendEvents(ctx context.Context, sw *sseWriter, id string, after int64) (int64, error) {
	for {
		evs, err := s.store.Events(ctx, id, after, ssePage)
		if err != nil {
			return after, err
		}
		for _, ev := range evs {
			data, err := json.Marshal(ev)
			if err != nil {
				return after, err
			}
			sw.event(ev.Cursor, "event", data)
			after = ev.Cursor
		}
		if err := sw.flush(); err != nil {
			return after, writeErr{err}
		}
		if len(evs) < ssePage {
			return after, nil
		}
	}
}

// resumeCursor is the cursor a stream starts after: Last-Event-ID, else
// ?after=, else 0.
func resumeCursor(w http.ResponseWriter, r *http.Request) (int64, bool) {
	v, name := r.Header.Get("Last-Event-ID"), "Last-Event-ID"
	if v == "" {
		v, name = r.URL.Query().Get("after"), "after"
	}
	if v == "" {
		return 0, true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		writeError(w, http.StatusBadRequest, name+" must be a cursor (an integer >= 0), got "+strconv.Quote(clip(v)))
		return 0, false
	}
	return n, true
}

// handleSessionsStream is GET /api/stream, the dashboard list's feed: on
// connect an "event: session" frame per session (newest 100) and one
// "event: snapshot", then a "session" frame whenever a session changes.
// Updates are coalesced per client to at most one round per
// sseFlushInterval, so a busy session cannot flood the list.
func (s *Server) handleSessionsStream(w http.ResponseWriter, r *http.Request) {
	sub, ctx, sw, done := s.openStream(w, r, "", streamSessions)
	if sw == nil {
		return
	}
	defer done()
	if err := s.sendSnapshot(ctx, sw); err != nil {
		return
	}
	tick := time.NewTicker(s.heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			sw.comment("ping")
			if sw.flush() != nil {
				return
			}
			continue
		case <-sub.wake:
		}
		ids, resync := sub.take()
		var err error
		if resync {
			err = s.sendSnapshot(ctx, sw)
		} else {
			err = s.sendSessions(ctx, sw, ids)
		}
		if err != nil {
			return
		}
		t := time.NewTimer(s.sseFlushInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

func (s *Server) sendSnapshot(ctx context.Context, sw *sseWriter) error {
	list, err := s.store.Sessions(ctx, store.ListOptions{Limit: defaultSessionsLimit})
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("backend: session list stream: listing sessions", "err", err)
		}
		return err
	}
	now := time.Now()
	for i := range list {
		store.MarkStale(now, &list[i])
		data, err := json.Marshal(&list[i])
		if err != nil {
			return err
		}
		sw.event(0, "session", data)
	}
	sw.event(0, "snapshot", []byte(`{"count":`+strconv.Itoa(len(list))+`}`))
	return sw.flush()
}

func (s *Server) sendSessions(ctx context.Context, sw *sseWriter, ids []string) error {
	for _, id := range ids {
		sess, err := s.store.Session(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("backend: session list stream: reading session", "session", id, "err", err)
			}
			return err
		}
		store.MarkStale(time.Now(), &sess)
		data, err := json.Marshal(&sess)
		if err != nil {
			return err
		}
		sw.event(0, "session", data)
	}
	return sw.flush()
}
