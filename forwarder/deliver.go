package forwarder

import (
	"github.com/claude-relay/claude-relay/internal/backoff"
	"github.com/claude-relay/claude-relay/internal/wire"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/hashicorp/go-retryablehttp"
)

// record is one spooled event on its way out.
type record struct {
	payload []byte
	end     pos // position just past the record
	size    int64
	eventID string
}

// batch support, detected once per backend.
const (
	batchUnknown int32 = iota
	batchYes
	batchNo
)

// maxBatchBytes bounds what one read of the spool takes and what one batch
// request carries: far under the reference backend's batch limit (32 MiB
// by default), so a batch is refused for its size only by a backend
// configured smaller, and then it is split. A record larger than this is
// posted alone, where a 413 is about that event only.
const maxBatchBytes = 4 << 20

// batchOutcome is what send does after a batch request.
type batchOutcome int

const (
	batchStopped batchOutcome = iota // the forwarder is stopping
	batchSent                        // the settled records are done; batch the rest
	batchSingly                      // post the next record alone
	batchSplit                       // the batch was too large: send smaller ones
	batchIsolate                     // the batch was refused with 5xx again and again: post its events alone
)

// isolateAfter is how many 5xx in a row (503 aside) a batch gets before its
// events go alone, where one that the backend cannot store is found.
const isolateAfter = 3

type client struct {
	f     *Forwarder
	http  *retryablehttp.Client
	batch atomic.Int32
}

func newClient(f *Forwarder) *client {
	c := &client{f: f}
	rc := retryablehttp.NewClient()
	tr := f.opts.Transport
	if tr == nil {
		t := cleanhttp.DefaultPooledTransport()
		// One request in flight per session: keep a connection per busy
		// session instead of re-dialling past GOMAXPROCS+1 idle ones.
		t.MaxIdleConnsPerHost = 256
		tr = t
	}
	rc.HTTPClient = &http.Client{Timeout: f.opts.AttemptTimeout, Transport: tr,
		// A redirect is not the backend's answer: a POST followed as a GET
		// would get some page's 200. It is judged, and reported, as is.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	rc.RetryMax = 1<<31 - 1 // for ever, while running: we never drop an event
	rc.RetryWaitMin, rc.RetryWaitMax = f.opts.MinBackoff, f.opts.MaxBackoff
	rc.CheckRetry = func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		t, _ := ctx.Value(tryKey{}).(*try)
		retry, cerr := checkRetry(ctx, resp, err)
		if retry && t != nil && f.giveUp(t, resp) {
			return false, nil // the caller takes it from here
		}
		if retry {
			f.noteTransient(t, resp, err)
		}
		return retry, cerr
	}
	rc.Backoff = f.opts.Backoff
	rc.Logger = leveled{f.log}
	rc.RequestLogHook = func(_ retryablehttp.Logger, req *http.Request, attempt int) {
		// Read the token on every attempt: a reloaded token applies at once.
		if tok := f.opts.Token(); tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		if attempt > 0 {
			f.retried.Add(1)
		}
	}
	c.http = rc
	switch f.opts.Batch {
	case "always":
		c.batch.Store(batchYes)
	case "never":
		c.batch.Store(batchNo)
	}
	return c
}

// checkRetry retries transport errors, 408, 425, 429 and 5xx; never after
// the context ends.
func checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if err != nil {
		return true, nil
	}
	return retryable(resp.StatusCode), nil
}

// A poison event, one the backend refuses with a 5xx however often it is
// sent while it stores other events, would hold its session's later events
// back for ever. It is dead-lettered (reported, kept whole in dead/, sent
// again by `spool flush --dead-letters`) when both of these hold:
//
//   - it was refused with a 5xx other than 503 Options.PoisonAfter times
//     in a row (20 by default: several minutes at the capped backoff); an
//     attempt that fails otherwise (a transport error, 408, 429, 503)
//     starts the count again;
//   - between its previous failed attempt and the last one, the backend
//     stored another event: a request of another session of this process
//     was answered "stored" in that window. The backend stored something,
//     and then refused this event again. (The session's own next event is
//     never posted as a check: the backend could store it before the one
//     refused, and a session's events are stored in order or not at all.)
//
// A backend that is down for everyone (connection refused, 503, a proxy's
// 502, 500 for every event while its database is away) stores nothing, so
// the second condition never holds: every event stays queued and is
// retried for ever, and an outage dead-letters nothing. A poison event
// while no other session of this process delivers waits, retried, until
// one does.

// try is one request's delivery state across its attempts, carried in its
// context, so that CheckRetry can count refusals.
type try struct {
	s     *sessionSpool
	batch bool // a batch: its events go alone after isolateAfter refusals

	refused  int           // refusals in a row: 5xx other than 503
	last     time.Duration // when the latest failed attempt failed (since the epoch)
	evidence bool          // the backend stored something between the previous failure and the latest
	poison   bool          // CheckRetry gave the event up as poison
}

type tryKey struct{}

// since is the time since the forwarder's epoch, on the monotonic clock.
func (f *Forwarder) since() time.Duration { return time.Since(f.epoch) }

// noteStored records that the backend just answered "stored": evidence,
// for events it refuses afterwards, that it stores events.
func (f *Forwarder) noteStored() {
	now := int64(f.since())
	for {
		cur := f.storedAt.Load()
		if now <= cur || f.storedAt.CompareAndSwap(cur, now) {
			return
		}
	}
}

// giveUp counts a retryable failure of t's request and says whether to
// stop retrying it: a batch refused isolateAfter times in a row, or an
// event found to be poison.
func (f *Forwarder) giveUp(t *try, resp *http.Response) bool {
	now := f.since()
	defer func() { t.last = now }()
	if resp == nil || resp.StatusCode < 500 || resp.StatusCode == http.StatusServiceUnavailable {
		t.refused = 0 // not a refusal of this request's content
		return false
	}
	t.refused++
	// Did the backend store anything since this request last failed
	// (while this attempt was in flight too)? Then this refusal is about
	// this request.
	t.evidence = f.storedAt.Load() > int64(t.last)
	if t.batch {
		return t.refused >= isolateAfter
	}
	if f.opts.PoisonAfter < 0 || t.refused < f.opts.PoisonAfter {
		return false
	}
	if t.evidence {
		t.poison = true
		return true
	}
	return false
}

// noteTransient keeps a retried failure as the last error (for `spool
// status` and `status`), writing the session's file only when it changes.
func (f *Forwarder) noteTransient(t *try, resp *http.Response, err error) {
	msg := "backend unreachable"
	switch {
	case err != nil:
		msg += ": " + cleanErr(err)
	case resp != nil:
		msg = fmt.Sprintf("backend answered HTTP %d; retrying", resp.StatusCode)
	}
	f.setLastError(msg)
	if t == nil || t.s == nil {
		return
	}
	s := t.s
	if prev := s.lastNote.Swap(&msg); prev == nil || *prev != msg {
		noteError(s.dir, "delivery: "+msg)
		s.erred.Store(true)
	}
}

// cleanErr renders a transport error without the URL's query.
func cleanErr(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op + " " + clean([]any{"u", ue.URL})[1].(string) + ": " + ue.Err.Error()
	}
	return err.Error()
}

// jitterBackoff is full jitter over a capped exponential, unless the server
// said Retry-After, which is honoured up to max.
func jitterBackoff(lo, hi time.Duration, attempt int, resp *http.Response) time.Duration {
	return backoff.Delay(lo, hi, hi, attempt, resp, time.Now())
}

// deliverLoop sends one session's records in order, one request at a time.
func (f *Forwarder) deliverLoop(s *sessionSpool) {
	defer f.workers.Done()
	s.mu.Lock()
	at := s.ack
	s.mu.Unlock()
	rd := &spoolReader{s: s, at: at, skipped: at}
	defer rd.close()
	for {
		recs, err := rd.read(f.opts.MaxBatch, maxBatchBytes)
		f.bytes.Add(-rd.dropped)
		rd.dropped = 0
		if rd.corrupt > 0 {
			f.report(s, Error{Code: CodeCorruptSpool, SessionID: s.id, Message: rd.lastErr.Error()})
			rd.corrupt = 0
		}
		if err != nil {
			f.report(s, Error{Code: CodeDelivery, SessionID: s.id, Message: err.Error()})
		}
		if len(recs) == 0 {
			if rd.skipped.less(rd.at) {
				// Only corrupt bytes were passed: acknowledge them too.
				_ = s.acknowledge(rd.at, 0)
				rd.skipped = rd.at
			}
			select {
			case <-s.wake:
				continue
			case <-f.drain:
				if f.idle(s, rd) {
					return
				}
				select {
				case <-s.wake:
				case <-f.ctx.Done():
					return
				case <-time.After(20 * time.Millisecond):
				}
				continue
			case <-f.ctx.Done():
				return
			case <-time.After(time.Second):
				continue // a safety net against a lost wake-up
			}
		}
		if !f.send(s, recs) {
			return // stopped
		}
		rd.skipped = rd.at
	}
}

// idle reports whether the session has nothing left to read.
func (f *Forwarder) idle(s *sessionSpool, rd *spoolReader) bool {
	limit, last := s.committed(rd.at.seg)
	return last && rd.at.off >= limit
}

// send delivers recs in order; it returns false when the forwarder stopped
// before they were all delivered or dead-lettered. A batch the backend
// refuses as too large is split in halves down to single events, never
// dead-lettered as a whole; one it keeps refusing with 5xx is posted event
// by event, where an event it cannot store is found.
func (f *Forwarder) send(s *sessionSpool, recs []record) bool {
	span := len(recs) // the most records per batch
	for len(recs) > 0 {
		if n := batchable(recs, span); n > 1 && f.client.batch.Load() != batchNo {
			settled, next := f.sendBatch(s, recs[:n])
			recs = recs[settled:]
			switch next {
			case batchStopped:
				return false
			case batchSplit:
				span = n / 2
				continue
			case batchIsolate:
				span = 1
				if !f.sleep(f.opts.Backoff(f.opts.MinBackoff, f.opts.MaxBackoff, isolateAfter, nil)) {
					return false
				}
				continue
			case batchSent:
				continue
			}
			if len(recs) == 0 {
				continue
			}
		}
		r, rest := recs[0], recs[1:]
		if !f.sendOne(s, r) {
			return false
		}
		recs = rest
	}
	return true
}

// batchable is how many of recs (at most span) the next batch carries: as
// many as fit in maxBatchBytes together, at least one.
func batchable(recs []record, span int) int {
	var total int64
	n := 0
	for n < len(recs) && n < span && total+recs[n].size <= maxBatchBytes {
		total += recs[n].size
		n++
	}
	return max(n, 1)
}

// sendOne posts a single event until it is stored or dead-lettered.
func (f *Forwarder) sendOne(s *sessionSpool, r record) bool {
	v, resp, ok := f.deliverEvent(s, r, r.payload)
	switch {
	case !ok:
		return false
	case v == verdictStored:
		f.acked(s, r, 1)
		return true
	case v == verdictTooLarge:
		return f.oversize(s, r, resp.body)
	}
	// Refused for good, or poison.
	for !f.deadLetter(s, r, resp.status, string(resp.body), resp.refusals) {
		if !f.pause() { // no dead-letter file (disk full?): keep the event, retry
			return false
		}
	}
	return true
}

// deliverEvent posts body, the envelope of r or its stand-in, alone until
// an answer settles it: stored, too large, refused for good, or poison
// (verdictRetry). A refused token and an answer that is not a claude-relay
// backend's are reported and waited out: the event stays. ok is false when
// the forwarder stopped first.
func (f *Forwarder) deliverEvent(s *sessionSpool, r record, body []byte) (v verdict, resp response, ok bool) {
	u := f.eventURL(s)
	t := &try{s: s}
	t.last = f.since() // evidence counts from here
	for waits := 1; ; {
		resp, err := f.post(t, u, body, r.eventID)
		if err != nil {
			return 0, resp, false
		}
		v := judge(resp, r.eventID)
		if v == verdictAuth || v == verdictForeign {
			// Neither is the backend refusing this event: a poison count
			// starts again after it.
			t.refused, t.last = 0, f.since()
		}
		switch v {
		case verdictStored:
			f.noteStored()
			return v, resp, true
		case verdictAuth:
			if !f.waitForAuth(s, resp.status) {
				return v, resp, false
			}
		case verdictForeign, verdictRetry:
			if v == verdictRetry && t.poison {
				resp.refusals = t.refused
				return v, resp, true
			}
			if v == verdictForeign {
				f.notBackend(s, notBackendMessage(http.MethodPost, u, resp))
			}
			if !f.sleep(f.opts.Backoff(f.opts.MinBackoff, f.opts.MaxBackoff, waits, nil)) {
				return v, resp, false
			}
			waits++
		default:
			return v, resp, true
		}
	}
}

func (f *Forwarder) eventURL(s *sessionSpool) string {
	return f.opts.BackendURL + "/api/sessions/" + url.PathEscape(s.id) + "/events"
}

// notBackend reports an answer that is not a claude-relay backend's, once
// until the session delivers again; it stays the last error meanwhile.
func (f *Forwarder) notBackend(s *sessionSpool, msg string) {
	if s.notBackend.Swap(true) {
		f.setLastError(msg)
		return
	}
	f.report(s, Error{Code: CodeNotBackend, SessionID: s.id, Message: msg})
}

// pause waits MaxBackoff after a local failure; false when the forwarder
// stopped meanwhile.
func (f *Forwarder) pause() bool { return f.sleep(f.opts.MaxBackoff) }

// sleep waits d; false when the forwarder stopped meanwhile.
func (f *Forwarder) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-f.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// sendBatch posts recs to the batch endpoint. It returns how many records
// were settled, and what to do next. Only a per-event result naming the
// event's event_id acknowledges it; an answer that cannot be matched to
// the events sends them alone, where each answer is judged.
func (f *Forwarder) sendBatch(s *sessionSpool, recs []record) (int, batchOutcome) {
	u := f.opts.BackendURL + "/api/sessions/" + url.PathEscape(s.id) + "/events/batch"
	var body bytes.Buffer
	body.WriteString(`{"events":[`)
	for i, r := range recs {
		if i > 0 {
			body.WriteByte(',')
		}
		body.Write(r.payload)
	}
	body.WriteString("]}")
	t := &try{s: s, batch: true}
	for {
		resp, err := f.post(t, u, body.Bytes(), "")
		switch status := resp.status; {
		case err != nil:
			return 0, batchStopped
		case status == http.StatusNotFound || status == http.StatusMethodNotAllowed:
			if f.client.batch.CompareAndSwap(batchUnknown, batchNo) {
				f.log.Info("backend has no batch endpoint; posting events one by one", "status", status)
			}
			return 0, batchSingly
		case status == http.StatusUnauthorized || status == http.StatusForbidden:
			if !f.waitForAuth(s, status) {
				return 0, batchStopped
			}
			continue
		case status == http.StatusRequestEntityTooLarge:
			// Over the batch limit, or one event over the event limit:
			// nothing was stored; halves find the event, which then goes
			// alone.
			f.log.Debug("backend refused a batch as too large; splitting it", "session_id", s.id, "events", len(recs), "bytes", body.Len())
			return 0, batchSplit
		case status >= 500:
			f.log.Debug("backend refused a batch again and again; posting its events one by one", "session_id", s.id, "status", status)
			return 0, batchIsolate
		case status != http.StatusOK:
			return 0, batchSingly // another refusal of the whole batch: isolate events
		}
		var out wire.BatchResponse
		if json.Unmarshal(resp.body, &out) != nil || len(out.Results) != len(recs) {
			return 0, batchSingly // not a batch answer (a web server's page?): alone, every answer is judged
		}
		if out.Results[0].EventID == "" && f.client.batch.CompareAndSwap(batchUnknown, batchNo) {
			f.log.Info("backend's batch results name no event_id; posting events one by one")
			return 0, batchSingly
		}
		f.client.batch.CompareAndSwap(batchUnknown, batchYes)
		for i, res := range out.Results {
			switch {
			case storedResult(res, recs[i].eventID):
				f.noteStored()
				f.acked(s, recs[i], 1)
			case res.EventID == recs[i].eventID && judge(response{status: res.Status}, "") == verdictRefused:
				if !f.deadLetter(s, recs[i], res.Status, res.Error, 0) {
					// No dead-letter file (disk full?): alone, it waits
					// and retries; the rest is re-sent, and the backend
					// de-duplicates.
					return i, batchSingly
				}
			default:
				// Not this event's result, a 413 (alone, the event gets its
				// stand-in), a 5xx or anything else: alone, the event gets
				// the single-event rules.
				return i, batchSingly
			}
		}
		return len(recs), batchSent
	}
}

// post sends one request with retries; it returns an error only when the
// forwarder is stopping.
func (f *Forwarder) post(t *try, u string, body []byte, eventID string) (response, error) {
	req, err := retryablehttp.NewRequestWithContext(context.WithValue(f.ctx, tryKey{}, t), http.MethodPost, u, body)
	if err != nil {
		return response{}, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if eventID != "" {
		req.Header.Set("Idempotency-Key", eventID)
	}
	f.inFlight.Add(1)
	resp, err := f.client.http.Do(req)
	f.inFlight.Add(-1)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return response{status: resp.StatusCode, body: b, ctype: resp.Header.Get("Content-Type"),
		location: resp.Header.Get("Location")}, nil
}

// waitForAuth reports a refused token loudly and waits for a new token or
// the next attempt; the events stay in the spool.
func (f *Forwarder) waitForAuth(s *sessionSpool, status int) bool {
	tok := f.opts.Token()
	f.report(s, Error{Code: CodeAuth, SessionID: s.id, Status: status,
		Message: fmt.Sprintf("the backend refused the token (HTTP %d); events wait in the spool until backend.token is fixed", status)})
	deadline := time.Now().Add(f.opts.MaxBackoff)
	for time.Now().Before(deadline) {
		select {
		case <-f.ctx.Done():
			return false
		case <-time.After(min(250*time.Millisecond, f.opts.MaxBackoff)):
		}
		if f.opts.Token() != tok {
			return true
		}
	}
	return true
}

func (f *Forwarder) acked(s *sessionSpool, r record, n int64) {
	if err := s.acknowledge(r.end, r.size); err != nil {
		f.report(s, Error{Code: CodeDelivery, SessionID: s.id, Message: err.Error()})
	}
	f.bytes.Add(-r.size)
	f.pending.Add(-n)
	f.delivered.Add(n)
	s.notBackend.Store(false)
	if s.erred.CompareAndSwap(true, false) {
		os.Remove(filepath.Join(s.dir, lastErrorFile)) // delivering again: the error is history
		s.lastNote.Store(nil)
	}
}

// deadLetter keeps an event the backend refused for good, or found to be
// poison, and moves on. It reports false when the dead letter could not be
// written: the event stays.
// refusals is how many refusals in a row made it poison; 0: refused for good.
func (f *Forwarder) deadLetter(s *sessionSpool, r record, status int, reason string, refusals int) bool {
	line, _ := json.Marshal(struct {
		DeadAt   time.Time       `json:"dead_at"`
		Status   int             `json:"status"`
		Reason   string          `json:"reason"`
		Poison   bool            `json:"poison,omitempty"`
		Backend  string          `json:"backend"` // the destination it was refused by
		Envelope json.RawMessage `json:"envelope"`
	}{time.Now().UTC(), status, truncate(reason, 2048), refusals > 0, f.pol.dest, r.payload})
	if err := appendLine(filepath.Join(f.opts.Dir, "dead", escapeID(s.id)+".jsonl"), line); err != nil {
		f.report(s, Error{Code: CodeDelivery, SessionID: s.id, Message: "cannot write dead letter: " + err.Error()})
		return false
	}
	if err := s.acknowledge(r.end, r.size); err != nil {
		f.report(s, Error{Code: CodeDelivery, SessionID: s.id, Message: err.Error()})
	}
	f.bytes.Add(-r.size)
	f.pending.Add(-1)
	f.dl.Add(1)
	msg := fmt.Sprintf("the backend refused event %s (HTTP %d: %s); kept in the dead-letter file", r.eventID, status, truncate(reason, 200))
	if refusals > 0 {
		msg = fmt.Sprintf("the backend refused event %s with HTTP %d %d times in a row (%s) while it stored other events; "+
			"it is kept in the dead-letter file so that the session's later events go on: fix the backend, then "+
			"`claude-relay spool flush --dead-letters` sends it again", r.eventID, status, refusals, snippet([]byte(reason), 200))
	}
	f.report(s, Error{Code: CodeDeadLetter, SessionID: s.id, Status: status, Message: msg})
	return true
}

func appendLine(path string, line []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	_, err = fh.Write(append(line, '\n'))
	if err == nil {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// spoolReader walks a session's segments from the acknowledged position.
type spoolReader struct {
	s       *sessionSpool
	at      pos // next unread position
	skipped pos // acknowledged or skipped up to here
	file    *os.File
	fileSeg int64
	corrupt int
	lastErr error
	dropped int64 // corrupt bytes passed, not yet taken off the spool size
	sr      *segmentReader
}

func (rd *spoolReader) close() {
	if rd.file != nil {
		rd.file.Close()
	}
}

// read returns up to max records (and about maxBytes) after rd.at.
func (rd *spoolReader) read(maxN int, maxBytes int64) ([]record, error) {
	var out []record
	var total int64
	for len(out) < maxN && total < maxBytes {
		limit, last := rd.s.committed(rd.at.seg)
		if rd.at.off >= limit {
			if last {
				return out, nil
			}
			next, ok := rd.s.nextSeg(rd.at.seg)
			if !ok {
				return out, nil
			}
			rd.at = pos{seg: next}
			continue
		}
		if rd.file == nil || rd.fileSeg != rd.at.seg {
			rd.close()
			f, err := os.Open(filepath.Join(rd.s.dir, segName(rd.at.seg)))
			if err != nil {
				return out, fmt.Errorf("open spool segment: %w", err)
			}
			rd.file, rd.fileSeg = f, rd.at.seg
		}
		src := io.NewSectionReader(rd.file, rd.at.off, limit-rd.at.off)
		if rd.sr == nil {
			rd.sr = newSegmentReader(src, rd.at.off, limit)
		} else {
			rd.sr.reset(src, rd.at.off, limit) // reuse its 64 KiB buffer
		}
		sr := rd.sr
		for len(out) < maxN && total < maxBytes {
			payload, end, err := sr.next()
			if errors.Is(err, io.EOF) {
				rd.dropped += end - rd.at.off // corrupt bytes at the end
				rd.at.off = end
				break
			}
			if err != nil {
				return out, err
			}
			size := end - rd.at.off
			rd.at.off = end
			out = append(out, record{payload: payload, end: rd.at, size: size, eventID: eventIDOf(payload)})
			total += size
		}
		if sr.corrupt > 0 {
			rd.corrupt += sr.corrupt
			rd.lastErr = fmt.Errorf("session %s segment %d: %w", rd.s.id, rd.at.seg, sr.lastErr)
		}
	}
	return out, nil
}

// eventIDOf slices the event ID out of an envelope we encoded: the key
// cannot occur unescaped inside a JSON string, and a uuid needs no escaping.
func eventIDOf(payload []byte) string {
	const key = `,"event_id":"`
	i := bytes.Index(payload, []byte(key))
	if i < 0 {
		return ""
	}
	rest := payload[i+len(key):]
	if j := bytes.IndexByte(rest, '"'); j >= 0 && j <= 64 {
		return string(rest[:j])
	}
	return ""
}

// leveled adapts slog to retryablehttp; it logs at debug and never prints a
// URL's query or any header (the token travels in one).
type leveled struct {
	log interface{ Debug(string, ...any) }
}

func (l leveled) Error(msg string, kv ...any) { l.log.Debug(msg, clean(kv)...) }
func (l leveled) Info(msg string, kv ...any)  { l.log.Debug(msg, clean(kv)...) }
func (l leveled) Debug(msg string, kv ...any) { l.log.Debug(msg, clean(kv)...) }
func (l leveled) Warn(msg string, kv ...any)  { l.log.Debug(msg, clean(kv)...) }

func clean(kv []any) []any {
	out := make([]any, 0, len(kv))
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1]
		switch x := v.(type) {
		case *url.URL:
			c := *x
			c.RawQuery, c.User = "", nil
			v = c.String()
		case string:
			if u, err := url.Parse(x); err == nil && u.Scheme != "" {
				u.RawQuery, u.User = "", nil
				v = u.String()
			}
		case http.Header:
			continue
		}
		out = append(out, kv[i], v)
	}
	return out
}
