package forwarder

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// deliverLoop sends one session's records in order, one request at a time.
func (f *Forwarder) deliverLoop(s *sessionSpool) {
	defer f.workers.Done()
	s.mu.Lock()
	at := s.ack
	s.mu.Unlock()
	rd := &spoolReader{spool: s, at: at, skipped: at}
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
	t := &try{spool: s}
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
	if s.lastErrorWritten.CompareAndSwap(true, false) {
		os.Remove(filepath.Join(s.dir, lastErrorFile)) // delivering again: the error is history
		s.lastNote.Store(nil)
	}
}
