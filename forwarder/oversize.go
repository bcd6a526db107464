package forwarder

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
	"unicode/utf8"
)

// An event over the backend's size limit (413 for the event alone) is kept
// whole in the session's oversize file beside its dead letters, and a
// stand-in takes its place at the backend: the same envelope (event_id,
// seq, type, timestamp, source) with event_data
//
//	{"type": <the original's type>, "relay_oversize": {"bytes": N,
//	 "sha256": "<hex of the original event_data>", "limit": L,
//	 "head": "<the first bytes of the original event_data>"}}
//
// so the session's record has no gap in seq and nothing overtakes it, and
// nothing is lost on this machine (`spool status` counts it with the dead
// letters). `spool flush --dead-letters` leaves it there: the backend
// holds the stand-in under that event_id, so a re-post would be a
// duplicate.

// oversizeSuffix ends a session's oversize file in the dead directory;
// escapeID never writes '~', so no session's dead-letter file is named so.
const oversizeSuffix = "~oversize.jsonl"

// maxHead bounds the original's text a stand-in carries.
const maxHead = 2048

// OversizeInfo is event_data.relay_oversize of a stand-in.
type OversizeInfo struct {
	Bytes  int    `json:"bytes"`           // the original event_data's size
	SHA256 string `json:"sha256"`          // hex SHA-256 of the original event_data
	Limit  int64  `json:"limit,omitempty"` // the backend's limit per event, when it said
	Head   string `json:"head"`            // the original event_data's first bytes (whole UTF-8 characters)
}

func oversizePath(dir, sessionID string) string {
	return filepath.Join(dir, "dead", escapeID(sessionID)+oversizeSuffix)
}

// standIn builds the envelope posted in place of payload, an envelope the
// backend refused as too large; limit is the backend's limit (0: it did
// not say). It also returns what the stand-in says and the event_type.
func standIn(payload []byte, limit int64) ([]byte, OversizeInfo, string, error) {
	var env Envelope
	if err := json.Unmarshal(payload, &env); err != nil {
		return nil, OversizeInfo{}, "", fmt.Errorf("read the spooled envelope: %w", err)
	}
	sum := sha256.Sum256(env.EventData)
	info := OversizeInfo{Bytes: len(env.EventData), SHA256: hex.EncodeToString(sum[:]), Limit: limit,
		Head: head(env.EventData, headSize(limit))}
	var typ struct {
		Type json.RawMessage `json:"type"`
	}
	_ = json.Unmarshal(env.EventData, &typ) // an object: the spool took only objects
	data := struct {
		Type     json.RawMessage `json:"type,omitempty"`
		Oversize OversizeInfo    `json:"relay_oversize"`
	}{Oversize: info}
	if len(typ.Type) > 0 && typ.Type[0] == '"' && len(typ.Type) <= 256 {
		data.Type = typ.Type
	}
	var err error
	if env.EventData, err = json.Marshal(data); err != nil {
		return nil, OversizeInfo{}, "", err
	}
	out, err := json.Marshal(env)
	return out, info, env.EventType, err
}

// headSize keeps a stand-in well inside a small limit: JSON escaping can
// make the head six times longer.
func headSize(limit int64) int {
	if limit > 0 && limit/16 < maxHead {
		return int(max(limit/16, 0))
	}
	return maxHead
}

// head is b's first n bytes at most, cut before an incomplete character.
func head(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	b = b[:n]
	for len(b) > 0 && !utf8.Valid(b) {
		b = b[:len(b)-1]
	}
	return string(b)
}

// limitOf reads the limit a 413 body states ({"limit":N}); 0 when it says
// none (a proxy's page, an older backend).
func limitOf(body []byte) int64 {
	var v struct {
		Limit int64 `json:"limit"`
	}
	if json.Unmarshal(body, &v) != nil || v.Limit < 0 {
		return 0
	}
	return v.Limit
}

// oversize handles a 413 for r alone: it keeps r whole in the oversize
// file, then posts its stand-in until the backend has it. It returns false
// when the forwarder stopped first (r stays in the spool; the next process
// finds the kept copy and does not write it twice).
func (f *Forwarder) oversize(s *sessionSpool, r record, reason []byte) bool {
	limit := limitOf(reason)
	body, info, eventType, err := standIn(r.payload, limit)
	if err != nil { // not an envelope we can rewrite: an ordinary dead letter
		for !f.deadLetter(s, r, http.StatusRequestEntityTooLarge, string(reason), 0) {
			if !f.pause() {
				return false
			}
		}
		return true
	}
	path := oversizePath(f.opts.Dir, s.id)
	for {
		err := keepOversize(path, r, info, truncate(string(reason), 2048))
		if err == nil {
			break
		}
		f.report(s, Error{Code: CodeDelivery, SessionID: s.id, Message: "cannot keep an event over the backend's limit: " + err.Error()})
		if !f.pause() { // disk full? keep the event and try again
			return false
		}
	}
	v, resp, ok := f.deliverEvent(s, r, body)
	if !ok {
		return false
	}
	f.settleOversize(s, r, info, eventType, path, v == verdictStored, resp.status, string(resp.body))
	return true
}

// settleOversize acknowledges r once its stand-in was answered, and says
// what happened, once.
func (f *Forwarder) settleOversize(s *sessionSpool, r record, info OversizeInfo, eventType, path string, stored bool, status int, resp string) {
	limit := "its size limit"
	if info.Limit > 0 {
		limit = fmt.Sprintf("its limit of %d bytes per event (serve.max_event_bytes)", info.Limit)
	}
	what := fmt.Sprintf("event %s (%s, %d bytes of event_data) is over the backend's %s; it is kept whole in %s",
		r.eventID, eventType, info.Bytes, limit, path)
	if stored {
		f.acked(s, r, 1)
		what += fmt.Sprintf(", and the backend stored a stand-in with its type, size, SHA-256 and first %d bytes", len(info.Head))
	} else {
		// The stand-in was refused too: the kept copy is all there is.
		if err := s.acknowledge(r.end, r.size); err != nil {
			f.report(s, Error{Code: CodeDelivery, SessionID: s.id, Message: err.Error()})
		}
		f.bytes.Add(-r.size)
		f.pending.Add(-1)
		what += fmt.Sprintf("; the backend refused its stand-in too (HTTP %d: %s)", status, truncate(resp, 200))
	}
	f.deadLettered.Add(1)
	f.report(s, Error{Code: CodeDeadLetter, SessionID: s.id, Status: http.StatusRequestEntityTooLarge, Message: what})
}

// keepOversize appends r to the oversize file unless a line for its
// event_id is there already (kept before a crash or a stop).
func keepOversize(path string, r record, info OversizeInfo, reason string) error {
	if found, err := hasEvent(path, r.eventID); err != nil || found {
		return err
	}
	meta, err := json.Marshal(struct {
		EventID string    `json:"event_id"` // first: hasEvent looks for it at the start
		DeadAt  time.Time `json:"dead_at"`
		Status  int       `json:"status"`
		Bytes   int       `json:"bytes"`
		SHA256  string    `json:"sha256"`
		Limit   int64     `json:"limit,omitempty"`
		Reason  string    `json:"reason"`
	}{r.eventID, time.Now().UTC(), http.StatusRequestEntityTooLarge, info.Bytes, info.SHA256, info.Limit, reason})
	if err != nil {
		return err
	}
	// The envelope goes in as it is (our own JSON, from the spool): no
	// copy of an event that is large by definition.
	return appendParts(path, meta[:len(meta)-1], []byte(`,"envelope":`), r.payload, []byte("}\n"))
}

// appendParts appends parts as one line of path and fsyncs it.
func appendParts(path string, parts ...[]byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	for _, p := range parts {
		if _, err = fh.Write(p); err != nil {
			break
		}
	}
	if err == nil {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	return err
}

// hasEvent reports whether a line of the oversize file at path begins with
// eventID's key. It reads each line's start only.
func hasEvent(path, eventID string) (bool, error) {
	fh, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer fh.Close()
	want := []byte(`{"event_id":"` + eventID + `"`)
	br := bufio.NewReaderSize(fh, 4096)
	for {
		start, err := br.ReadSlice('\n')
		if bytes.HasPrefix(start, want) {
			return true, nil
		}
		for errors.Is(err, bufio.ErrBufferFull) { // the rest of a long line
			_, err = br.ReadSlice('\n')
		}
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
}
