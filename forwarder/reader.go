package forwarder

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// record is one spooled event on its way out.
type record struct {
	payload []byte
	end     pos // position just past the record
	size    int64
	eventID string
}

// spoolReader walks a session's segments from the acknowledged position.
type spoolReader struct {
	spool   *sessionSpool
	at      pos // next unread position
	skipped pos // acknowledged or skipped up to here
	file    *os.File
	fileSeg int64
	corrupt int
	lastErr error
	dropped int64          // corrupt bytes passed, not yet taken off the spool size
	segment *segmentReader // reused across segments for its buffer
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
		limit, last := rd.spool.committed(rd.at.seg)
		if rd.at.off >= limit {
			if last {
				return out, nil
			}
			next, ok := rd.spool.nextSeg(rd.at.seg)
			if !ok {
				return out, nil
			}
			rd.at = pos{seg: next}
			continue
		}
		if rd.file == nil || rd.fileSeg != rd.at.seg {
			rd.close()
			f, err := os.Open(filepath.Join(rd.spool.dir, segName(rd.at.seg)))
			if err != nil {
				return out, fmt.Errorf("open spool segment: %w", err)
			}
			rd.file, rd.fileSeg = f, rd.at.seg
		}
		src := io.NewSectionReader(rd.file, rd.at.off, limit-rd.at.off)
		if rd.segment == nil {
			rd.segment = newSegmentReader(src, rd.at.off, limit)
		} else {
			rd.segment.reset(src, rd.at.off, limit) // reuse its 64 KiB buffer
		}
		sr := rd.segment
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
			rd.lastErr = fmt.Errorf("session %s segment %d: %w", rd.spool.id, rd.at.seg, sr.lastErr)
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
