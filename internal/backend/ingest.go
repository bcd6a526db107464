package backend

import (
	relaywire "github.com/claude-relay/claude-relay/internal/wire"

	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/claude-relay/claude-relay/internal/store"
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

// readIngest checks the path's session ID and reads a body of at most
// limit bytes; on a problem it has answered, and ok is false.
func (s *Server) readIngest(w http.ResponseWriter, r *http.Request, limit int64) (string, []byte, bool) {
	pathID := r.PathValue("id")
	if rerr := checkSessionID(pathID); rerr != nil {
		s.refuse(w, http.StatusBadRequest, rerr)
		return "", nil, false
	}
	body, status, rerr := readBody(w, r, limit)
	if rerr != nil {
		s.refuse(w, status, rerr)
		return "", nil, false
	}
	return pathID, body, true
}

// handleEvent is POST /api/sessions/{id}/events.
func (s *Server) handleEvent(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	defer s.observe(endpointSingle, start)
	pathID, body, ok := s.readIngest(w, r, s.maxEvent)
	if !ok {
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
	pathID, body, ok := s.readIngest(w, r, s.maxBatch)
	if !ok {
		return
	}
	results, valid, index, rerr := s.decodeBatch(body, pathID)
	if rerr != nil {
		status := http.StatusBadRequest
		if rerr.Reason == reasonTooLarge {
			status = http.StatusRequestEntityTooLarge
		}
		s.refuse(w, status, rerr)
		return
	}
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

// decodeBatch reads {"events":[...]} in one pass with a streaming decoder
// (json.Unmarshal into []json.RawMessage would scan every event twice more).
// It returns a result slot per event, the valid events, and for each valid
// event its slot. A body that is not that shape is one RejectError; an event
// that is well-formed JSON but invalid only fails its own slot.
func (s *Server) decodeBatch(body []byte, pathID string) (results []batchResult, valid []store.Event, index []int, rerr *RejectError) {
	bad := func(err error) *RejectError {
		return reject(reasonBadJSON, `body is not {"events":[...]}: %v`, err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := expectDelim(dec, '{'); err != nil {
		return nil, nil, nil, bad(err)
	}
	seen := false
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, nil, nil, bad(err)
		}
		if key != "events" || seen {
			var skip json.RawMessage // unknown fields are ignored
			if err := dec.Decode(&skip); err != nil {
				return nil, nil, nil, bad(err)
			}
			continue
		}
		seen = true
		if err := expectDelim(dec, '['); err != nil {
			return nil, nil, nil, bad(err)
		}
		for dec.More() {
			if len(results) == maxBatchEvents {
				return nil, nil, nil, reject(reasonTooLarge, "more than %d events in one batch", maxBatchEvents)
			}
			start := dec.InputOffset()
			var w wireEvent
			err := dec.Decode(&w)
			var typeErr *json.UnmarshalTypeError
			if err != nil && !errors.As(err, &typeErr) {
				return nil, nil, nil, bad(err) // the stream itself is broken
			}
			ev, rerr := s.batchEvent(&w, err, dec.InputOffset()-start, pathID)
			results = append(results, batchResult{BatchResult: relaywire.BatchResult{EventID: ev.EventID}})
			if rerr != nil {
				out := &results[len(results)-1]
				out.Status, out.Error, out.reason = http.StatusBadRequest, rerr.Msg, rerr.Reason
				continue
			}
			valid = append(valid, ev)
			index = append(index, len(results)-1)
		}
		if err := expectDelim(dec, ']'); err != nil {
			return nil, nil, nil, bad(err)
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, nil, nil, bad(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, nil, nil, bad(errors.New("data after the object"))
	}
	if len(results) == 0 {
		return nil, nil, nil, reject(reasonBatch, `"events" is missing or empty`)
	}
	return results, valid, index, nil
}

// batchEvent checks one decoded batch element of size bytes; decodeErr is
// a type error from decoding it (the element was well-formed JSON).
func (s *Server) batchEvent(w *wireEvent, decodeErr error, size int64, pathID string) (store.Event, *RejectError) {
	id := w.EventID
	if !validEventID(id) {
		id = "" // never echo a malformed ID back
	}
	switch {
	case size > s.maxEvent:
		return store.Event{EventID: id}, reject(reasonTooLarge, "event is %d bytes; the limit is %d", size, s.maxEvent)
	case decodeErr != nil:
		return store.Event{EventID: id}, reject(reasonBadJSON, "event is not a JSON event object: %v", decodeErr)
	}
	ev, rerr := checkEvent(w, pathID)
	if rerr != nil {
		ev.EventID = id
	}
	return ev, rerr
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("expected %q, found %v", want, tok)
	}
	return nil
}

// readBody reads at most limit bytes; over that it is a 413.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, int, *RejectError) {
	if r.ContentLength > limit {
		return nil, http.StatusRequestEntityTooLarge, reject(reasonTooLarge,
			"body is %d bytes; the limit is %d", r.ContentLength, limit)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, http.StatusRequestEntityTooLarge, reject(reasonTooLarge, "body is over the limit of %d bytes", limit)
		}
		return nil, http.StatusBadRequest, reject(reasonBadJSON, "reading the body: %v", err)
	}
	return body, 0, nil
}

// refuse answers a rejected request and counts it.
func (s *Server) refuse(w http.ResponseWriter, status int, rerr *RejectError) {
	s.metrics.rejected.WithLabelValues(rerr.Reason).Inc()
	writeError(w, status, rerr.Msg)
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
