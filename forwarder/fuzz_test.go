package forwarder

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"testing"
)

// FuzzSegmentReader feeds arbitrary bytes to the segment reader, which
// reads spool files that a crash, a full disk or a bad sector may have
// damaged: it must not panic, must end, must only move forward within the
// input, must return only payloads whose frame checks out, and must count
// every byte it skips as corrupt.
func FuzzSegmentReader(f *testing.F) {
	var valid []byte
	for _, p := range []string{`{"seq":1}`, `{"seq":2,"pad":"xxxxxxxxxxxxxxxx"}`, ``, `{"seq":4}`} {
		valid = appendFrame(valid, []byte(p))
	}
	f.Add(valid)
	f.Add(valid[:len(valid)-3])             // torn tail
	f.Add(valid[:headerSize-1])             // torn header
	f.Add(append(valid, "garbage"...))      // garbage appended
	f.Add(append([]byte("junk"), valid...)) // garbage before
	f.Add(flipped(valid, headerSize+3))     // a payload byte
	f.Add(flipped(valid, 5))                // a length byte
	f.Add(flipped(valid, 0))                // a magic byte
	f.Add(flipped(valid, 9))                // a checksum byte
	f.Add([]byte{})
	var huge [headerSize]byte // a header claiming more than maxRecord
	binary.LittleEndian.PutUint32(huge[0:], recordMagic)
	binary.LittleEndian.PutUint32(huge[4:], maxRecord+1)
	f.Add(append(huge[:], valid...))

	f.Fuzz(func(t *testing.T, b []byte) {
		r := newSegmentReader(bytes.NewReader(b), 0, int64(len(b)))
		prev, corrupt := int64(0), 0
		// Each record takes at least headerSize bytes and every corrupt
		// stretch at least one, so more calls than bytes means a loop.
		for calls := 0; ; calls++ {
			if calls > len(b)+1 {
				t.Fatalf("no io.EOF after %d calls on %d bytes", calls, len(b))
			}
			payload, off, err := r.next()
			if off < prev || off > int64(len(b)) {
				t.Fatalf("offset %d after %d, input %d bytes", off, prev, len(b))
			}
			if errors.Is(err, io.EOF) {
				if off < int64(len(b)) || (off > prev && r.corrupt == corrupt) {
					t.Fatalf("io.EOF at %d of %d bytes, %d bytes skipped unreported", off, len(b), off-prev)
				}
				return
			}
			if err != nil {
				t.Fatalf("reading from memory: %v", err)
			}
			start := off - int64(len(payload)) - headerSize
			if start < prev || (start > prev && r.corrupt == corrupt) {
				t.Fatalf("record [%d, %d) after %d: overlap, or bytes skipped unreported", start, off, prev)
			}
			h := b[start : start+headerSize]
			if binary.LittleEndian.Uint32(h[0:]) != recordMagic ||
				binary.LittleEndian.Uint32(h[4:]) != uint32(len(payload)) ||
				binary.LittleEndian.Uint32(h[8:]) != crc32.Checksum(payload, castagnoli) ||
				!bytes.Equal(b[start+headerSize:off], payload) {
				t.Fatalf("payload at [%d, %d) is not the one its frame describes", start, off)
			}
			prev, corrupt = off, r.corrupt
		}
	})
}

func flipped(b []byte, i int) []byte {
	b = bytes.Clone(b)
	b[i] ^= 0x40
	return b
}
