package forwarder

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/claude-relay/claude-relay/internal/wire"
)

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
	t := &try{spool: s, batch: true}
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
