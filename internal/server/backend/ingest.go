package backend

import (
	relaywire "github.com/claude-relay/claude-relay/internal/wire"

	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

const (
	endpointSingle = "single"
	endpointBatch  = "batch"
	// maxBatchEvents bounds one batch's event count (the byte limit alone
	// would allow ~10^6 tiny events in one transaction).
	maxBatchEvents = 10000
)

// ingestResponse is the body of a single-event POST.
type ingestResponse struct {
	Duplicate bool   `json:"duplicate,omitempty"`
	EventID   string `json:"event_id"`
	Cursor    int64  `json:"cursor"`
}

// batchResult is one event's outcome in a batch response, and why it was
// refused (a metric label, not sent).
type batchResult struct {
	relaywire.BatchResult
	reason string
}

type batchResponse struct {
	Results []batchResult `json:"results"`
}

// openIngest checks the path's session ID and admits a body of at most
// limit bytes (key names the setting; see admit); on a problem it has
// answered, and ok is false. The caller calls release when done.
func (s *Server) openIngest(w http.ResponseWriter, r *http.Request, limit int64, key string) (pathID string, release func(), ok bool) {
	pathID = r.PathValue("id")
	if rerr := checkSessionID(pathID); rerr != nil {
		s.refuse(w, http.StatusBadRequest, rerr)
		return "", nil, false
	}
	release, ok = s.admit(w, r, limit, key)
	return pathID, release, ok
}

// handleEvent is POST /api/sessions/{id}/events.
func (s *Server) handleEvent(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	defer s.observe(endpointSingle, start)
	pathID, release, ok := s.openIngest(w, r, s.maxEvent, keyMaxEvent)
	if !ok {
		return
	}
	defer release()
	body, status, rerr := readBody(w, r, s.maxEvent)
	if rerr != nil {
		s.refuse(w, status, rerr)
		return
	}
	ev, rerr := parseEvent(body, pathID)
	if rerr != nil {
		s.refuse(w, http.StatusBadRequest, rerr)
		return
	}
	if key := r.Header.Get("Idempotency-Key"); key != "" && key != ev.EventID {
		s.refuse(w, http.StatusBadRequest, reject(reasonIdempotency,
			"Idempotency-Key %q does not match event_id %q", clip(key), ev.EventID))
		return
	}
	res, err := s.store.Append(r.Context(), []store.Event{ev})
	if err == nil && len(res) != 1 {
		err = fmt.Errorf("store returned %d results for 1 event", len(res))
	}
	if err != nil {
		s.metrics.rejected.WithLabelValues(reasonStoreFailure).Inc()
		s.storeError(w, r, err)
		return
	}
	if res[0].Duplicate {
		s.metrics.duplicates.Inc()
		writeJSON(w, http.StatusOK, ingestResponse{Duplicate: true, EventID: ev.EventID, Cursor: res[0].Cursor})
		return
	}
	s.noteConflicts(r, []store.Event{ev}, res)
	s.queuePushes([]store.Event{ev}, res)
	s.metrics.ingested.Inc()
	writeJSON(w, http.StatusCreated, ingestResponse{EventID: ev.EventID, Cursor: res[0].Cursor})
}

// handleBatch is POST /api/sessions/{id}/events/batch: every valid event is
// stored in one Append (one transaction), invalid ones are reported per
// event and do not fail the others.
func (s *Server) handleBatch(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	defer s.observe(endpointBatch, start)
	pathID, release, ok := s.openIngest(w, r, s.maxBatch, keyMaxBatch)
	if !ok {
		return
	}
	defer release()
	d := s.newBatchDecoder(w, r, pathID)
	if status, rerr := d.decode(); rerr != nil {
		s.refuse(w, status, rerr)
		return
	}
	results, valid, index := d.results, d.valid, d.index
	for _, r := range results {
		if r.reason != "" {
			s.metrics.rejected.WithLabelValues(r.reason).Inc()
		}
	}
	if len(valid) > 0 {
		res, err := s.store.Append(r.Context(), valid)
		if err == nil && len(res) != len(valid) {
			err = fmt.Errorf("store returned %d results for %d events", len(res), len(valid))
		}
		if err != nil {
			s.metrics.rejected.WithLabelValues(reasonStoreFailure).Add(float64(len(valid)))
			s.storeError(w, r, err)
			return
		}
		s.noteConflicts(r, valid, res)
		s.queuePushes(valid, res)
		for j, ar := range res {
			out := &results[index[j]]
			out.Cursor, out.Duplicate = ar.Cursor, ar.Duplicate
			if ar.Duplicate {
				out.Status = http.StatusOK
				s.metrics.duplicates.Inc()
			} else {
				out.Status = http.StatusCreated
				s.metrics.ingested.Inc()
			}
		}
	}
	writeJSON(w, http.StatusOK, batchResponse{Results: results})
}

// batchDecoder reads {"events":[...]} as a stream, token by token and one
// event at a time, from the request body: memory holds the event being
// decoded and the valid events so far (which one Append stores), never
// the whole body. An event over the per-event limit fails the batch
// before it is read whole (guard), so nothing of a batch is stored unless
// every event is within the limit, and the events after a refused one
// cannot overtake it.
type batchDecoder struct {
	s      *Server
	dec    *json.Decoder
	guard  *valueGuard
	pathID string
	// results has a slot per event, valid the valid events, and index for
	// each valid event its slot.
	results []batchResult
	valid   []store.Event
	index   []int
}

func (s *Server) newBatchDecoder(w http.ResponseWriter, r *http.Request, pathID string) *batchDecoder {
	g := &valueGuard{r: http.MaxBytesReader(w, r.Body, s.maxBatch), max: s.maxEvent}
	return &batchDecoder{s: s, dec: json.NewDecoder(g), guard: g, pathID: pathID}
}

// decode reads the whole body. A body that is not that shape, or over a
// limit, is one RejectError with its status; an event that is well-formed
// JSON but invalid only fails its own slot.
func (d *batchDecoder) decode() (int, *RejectError) {
	if err := d.expectDelim('{'); err != nil {
		return d.fail(err, -1)
	}
	seen := false
	for d.dec.More() {
		key, err := d.token()
		if err != nil {
			return d.fail(err, -1)
		}
		if key != "events" || seen {
			var skip json.RawMessage // unknown fields are ignored
			if err := d.value(&skip); err != nil {
				return d.fail(err, -1)
			}
			continue
		}
		seen = true
		if status, rerr := d.events(); rerr != nil {
			return status, rerr
		}
	}
	if err := d.expectDelim('}'); err != nil {
		return d.fail(err, -1)
	}
	if _, err := d.token(); !errors.Is(err, io.EOF) {
		if err == nil {
			err = errors.New("data after the object")
		}
		return d.fail(err, -1)
	}
	if len(d.results) == 0 {
		return http.StatusBadRequest, reject(reasonBatch, `"events" is missing or empty`)
	}
	return 0, nil
}

// events reads the "events" array.
func (d *batchDecoder) events() (int, *RejectError) {
	if err := d.expectDelim('['); err != nil {
		return d.fail(err, -1)
	}
	for d.dec.More() {
		i := len(d.results)
		if i == maxBatchEvents {
			return http.StatusRequestEntityTooLarge, reject(reasonTooLarge,
				"more than %d events in one batch; send fewer", maxBatchEvents)
		}
		start := d.dec.InputOffset()
		var w wireEvent
		err := d.value(&w)
		var typeErr *json.UnmarshalTypeError
		if err != nil && !errors.As(err, &typeErr) {
			return d.fail(err, i) // the stream itself is broken
		}
		size := d.dec.InputOffset() - start
		if size > d.s.maxEvent {
			return d.tooLarge(i)
		}
		ev, rerr := d.s.batchEvent(&w, err, d.pathID)
		d.results = append(d.results, batchResult{BatchResult: relaywire.BatchResult{EventID: ev.EventID}})
		if rerr != nil {
			out := &d.results[i]
			out.Status, out.Error, out.reason = http.StatusBadRequest, rerr.Msg, rerr.Reason
			continue
		}
		d.valid = append(d.valid, ev)
		d.index = append(d.index, i)
	}
	if err := d.expectDelim(']'); err != nil {
		return d.fail(err, -1)
	}
	return 0, nil
}

// token and value read the next token or value, each guarded on its own.
func (d *batchDecoder) token() (json.Token, error) {
	d.guard.mark = d.dec.InputOffset()
	return d.dec.Token()
}

func (d *batchDecoder) value(v any) error {
	d.guard.mark = d.dec.InputOffset()
	return d.dec.Decode(v)
}

func (d *batchDecoder) expectDelim(want json.Delim) error {
	tok, err := d.token()
	if err != nil {
		return err
	}
	if dl, ok := tok.(json.Delim); !ok || dl != want {
		return fmt.Errorf("expected %q, found %v", want, tok)
	}
	return nil
}

// fail answers an error reading event i (-1: not in an event): over a
// limit (413), too slow (408), or not the expected JSON (400).
func (d *batchDecoder) fail(err error, i int) (int, *RejectError) {
	var tooBig *http.MaxBytesError
	var slow *SlowBodyError
	switch {
	case errors.Is(err, errValueTooLarge):
		return d.tooLarge(i)
	case errors.As(err, &tooBig), errors.As(err, &slow):
		return readError(err, d.s.maxBatch, keyMaxBatch)
	}
	return http.StatusBadRequest, reject(reasonBadJSON, `body is not {"events":[...]}: %v`, err)
}

func (d *batchDecoder) tooLarge(i int) (int, *RejectError) {
	what := "a value in the body"
	if i >= 0 {
		what = fmt.Sprintf("event %d of the batch", i)
	}
	return http.StatusRequestEntityTooLarge, tooLarge(d.s.maxEvent,
		"%s is over the limit of %d bytes per event (%s); nothing of the batch was stored", what, d.s.maxEvent, keyMaxEvent)
}

// valueGuard is the batch decoder's reader: it hands the decoder at most
// guardSlack bytes per read and fails a read once more than max+guardSlack
// bytes were read past mark, the start of the value being decoded. The
// decoder reads only to complete a value, so it never buffers much more
// than one value of at most max bytes.
type valueGuard struct {
	r          io.Reader
	read, mark int64
	max        int64
}

// errValueTooLarge is valueGuard's refusal.
var errValueTooLarge = errors.New("a value is over the per-event limit")

func (g *valueGuard) Read(p []byte) (int, error) {
	if g.read-g.mark > g.max+guardSlack {
		return 0, errValueTooLarge
	}
	if len(p) > guardSlack {
		p = p[:guardSlack]
	}
	n, err := g.r.Read(p)
	g.read += int64(n)
	return n, err
}

// batchEvent checks one decoded batch element; decodeErr is a type error
// from decoding it (the element was well-formed JSON).
func (s *Server) batchEvent(w *wireEvent, decodeErr error, pathID string) (store.Event, *RejectError) {
	id := w.EventID
	if !validEventID(id) {
		id = "" // never echo a malformed ID back
	}
	if decodeErr != nil {
		return store.Event{EventID: id}, reject(reasonBadJSON, "event is not a JSON event object: %v", decodeErr)
	}
	ev, rerr := checkEvent(w, pathID)
	if rerr != nil {
		ev.EventID = id
	}
	return ev, rerr
}

// refuse answers a rejected request and counts it.
func (s *Server) refuse(w http.ResponseWriter, status int, rerr *RejectError) {
	s.metrics.rejected.WithLabelValues(rerr.Reason).Inc()
	writeJSON(w, status, errorBody{Error: rerr.Msg, Limit: rerr.Limit})
}

// storeError answers a store failure: a closed store is temporary from the
// client's view (503, retried by the forwarder), anything else is a 500.
func (s *Server) storeError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case r.Context().Err() != nil:
		// The client is gone; nobody reads the answer.
		s.log.Debug("backend: request ended before the store answered", "path", r.URL.Path, "err", err)
		writeError(w, http.StatusServiceUnavailable, "request cancelled")
	case errors.Is(err, store.ErrInvalid):
		// We validate first, so this is a rule the store has and we lack.
		s.log.Warn("backend: store refused an event the API accepted", "path", r.URL.Path, "err", err)
		writeError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, store.ErrClosed):
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, "the store is closed (server shutting down); retry")
	default:
		s.log.Error("backend: store failed", "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, "storing failed; see the server log")
	}
}

func (s *Server) observe(endpoint string, start time.Time) {
	s.metrics.latency.WithLabelValues(endpoint).Observe(time.Since(start).Seconds())
}
