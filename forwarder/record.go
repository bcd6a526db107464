package forwarder

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Record framing: magic, payload length, CRC32-C of the payload, payload.
// The magic lets a reader find the next record after corrupt bytes.
const (
	recordMagic uint32 = 0xC1A0DE01
	headerSize         = 12
	maxRecord          = 129 << 20 // one event: the longest CLI line (ndjson.DefaultMax, 128 MiB) in its envelope
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt reports bytes in a segment that are not a valid record.
var ErrCorrupt = errors.New("corrupt spool record")

// appendFrame appends the framed payload to dst.
func appendFrame(dst, payload []byte) []byte {
	var h [headerSize]byte
	binary.LittleEndian.PutUint32(h[0:], recordMagic)
	binary.LittleEndian.PutUint32(h[4:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[8:], crc32.Checksum(payload, castagnoli))
	return append(append(dst, h[:]...), payload...)
}

// segmentReader reads records from a segment, starting at an offset.
type segmentReader struct {
	r       *bufio.Reader
	off     int64 // offset of the next unread byte
	limit   int64 // bytes beyond this are not read (a live segment's committed size)
	corrupt int   // corrupt stretches skipped
	lastErr error
}

func newSegmentReader(r io.Reader, off, limit int64) *segmentReader {
	return &segmentReader{r: bufio.NewReaderSize(r, 64<<10), off: off, limit: limit}
}

// reset points the reader at another stretch, keeping its buffer.
func (s *segmentReader) reset(r io.Reader, off, limit int64) {
	s.r.Reset(r)
	s.off, s.limit, s.corrupt, s.lastErr = off, limit, 0, nil
}

// next returns the next valid record's payload and the offset just past it.
// Corrupt stretches are skipped by searching for the next magic whose CRC
// checks out; io.EOF means nothing more up to the limit. A truncated record
// at the limit (a torn tail) also ends in io.EOF after being counted.
func (s *segmentReader) next() ([]byte, int64, error) {
	for {
		if s.limit-s.off < headerSize {
			if s.limit > s.off {
				s.skipCorrupt(s.limit-s.off, "torn tail")
			}
			return nil, s.off, io.EOF
		}
		h, err := s.r.Peek(headerSize)
		if err != nil {
			return nil, s.off, s.eof(err)
		}
		magic := binary.LittleEndian.Uint32(h[0:])
		n := int64(binary.LittleEndian.Uint32(h[4:]))
		sum := binary.LittleEndian.Uint32(h[8:])
		if magic != recordMagic || n > maxRecord {
			s.resync()
			continue
		}
		if s.off+headerSize+n > s.limit {
			s.resync() // a torn tail, or a corrupt length: scan on for a magic
			continue
		}
		buf := make([]byte, headerSize+n)
		if _, err := io.ReadFull(s.r, buf); err != nil {
			return nil, s.off, s.eof(err)
		}
		payload := buf[headerSize:]
		if crc32.Checksum(payload, castagnoli) != sum {
			// The length may be what is corrupt: rescan from the next byte,
			// so that a wrong length cannot swallow the records after it.
			s.r = bufio.NewReaderSize(io.MultiReader(bytes.NewReader(buf[1:]), s.r), 64<<10)
			s.off++
			s.corrupt++
			s.lastErr = fmt.Errorf("%w: bad checksum at offset %d", ErrCorrupt, s.off-1)
			continue
		}
		s.off += headerSize + n
		return payload, s.off, nil
	}
}

// resync drops one byte and scans forward to the next magic.
func (s *segmentReader) resync() {
	start := s.off
	for {
		if _, err := s.r.Discard(1); err != nil {
			break
		}
		s.off++
		if s.limit-s.off < 4 {
			break
		}
		b, err := s.r.Peek(4)
		if err != nil || binary.LittleEndian.Uint32(b) == recordMagic {
			break
		}
	}
	s.corrupt++
	s.lastErr = fmt.Errorf("%w: %d unreadable bytes at offset %d", ErrCorrupt, s.off-start, start)
}

func (s *segmentReader) skipCorrupt(n int64, what string) {
	s.corrupt++
	s.lastErr = fmt.Errorf("%w: %s of %d bytes at offset %d", ErrCorrupt, what, n, s.off)
	s.off += n
}

func (s *segmentReader) eof(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return io.EOF
	}
	return fmt.Errorf("read spool segment: %w", err)
}
