// Package ndjson reads newline-delimited JSON streams of any line length:
// it splits on '\n' bytes only, caps a line's size, and reports an
// over-long line as an error that the reader survives.
package ndjson

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// DefaultMax is the default line cap. The Claude CLI emits a whole tool
// result or file read as one line; 20 MB lines are real. Past the cap Next
// returns the line's first KiB with ErrLineTooLong and the stream goes on.
const DefaultMax = 128 << 20

// ErrLineTooLong reports a stdout line over the limit.
var ErrLineTooLong = errors.New("line too long")

// Reader splits on '\n' bytes only: not bufio.Scanner, whose 64 KiB
// default kills long lines, and not a Unicode-aware splitter, since U+2028
// inside a JSON string is not a line end.
type Reader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

// NewReader returns a Reader with a line cap of max bytes (DefaultMax if <= 0).
func NewReader(r io.Reader, max int) *Reader {
	if max <= 0 {
		max = DefaultMax
	}
	return &Reader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Next returns the next line without its '\n' (and a trailing '\r'). The
// slice is valid until the following call. At the end it returns io.EOF; a
// last line without '\n' is still returned first.
func (l *Reader) Next() ([]byte, error) {
	l.buf = l.buf[:0]
	tooLong := false
	for {
		chunk, err := l.r.ReadSlice('\n')
		if !tooLong {
			if len(l.buf)+len(chunk) > l.max+1 {
				tooLong = true
				keep := min(len(chunk), 1024-min(len(l.buf), 1024))
				l.buf = append(l.buf, chunk[:keep]...)
			} else {
				l.buf = append(l.buf, chunk...)
			}
		}
		switch {
		case err == nil:
			return l.finish(tooLong)
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(l.buf) > 0:
			return l.finish(tooLong)
		default:
			return nil, err
		}
	}
}

func (l *Reader) finish(tooLong bool) ([]byte, error) {
	line := bytes.TrimSuffix(l.buf, []byte{'\n'})
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if tooLong {
		return line, fmt.Errorf("%w: over %d bytes", ErrLineTooLong, l.max)
	}
	// Release a huge buffer so one 20 MB line does not pin 20 MB for the run.
	if cap(l.buf) > 4<<20 {
		out := bytes.Clone(line)
		l.buf = nil
		return out, nil
	}
	return line, nil
}
