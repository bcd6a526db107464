package markdown

import (
	"bytes"
	"errors"

	"github.com/yuin/goldmark/util"
)

// errOutput stops a render whose HTML outgrew maxOutput.
var errOutput = errors.New("markdown: rendered HTML over the output budget")

// limitWriter is a render's output, at most max bytes. Past that it keeps
// nothing more and is over; the node renderers that can repeat a long
// destination (render.go) then stop the walk, so an output bomb costs
// about max bytes of work. It is a util.BufWriter, so goldmark writes to
// it directly instead of through a bufio.Writer of its own.
type limitWriter struct {
	bytes.Buffer
	max  int
	over bool
}

var _ util.BufWriter = (*limitWriter)(nil)

// room reports whether n more bytes fit, and marks w over when not.
func (w *limitWriter) room(n int) bool {
	if !w.over && w.Len()+n > w.max {
		w.over = true
	}
	return !w.over
}

func (w *limitWriter) Write(p []byte) (int, error) {
	if !w.room(len(p)) {
		return 0, errOutput
	}
	return w.Buffer.Write(p)
}

func (w *limitWriter) WriteString(s string) (int, error) {
	if !w.room(len(s)) {
		return 0, errOutput
	}
	return w.Buffer.WriteString(s)
}

func (w *limitWriter) WriteByte(c byte) error {
	if !w.room(1) {
		return errOutput
	}
	return w.Buffer.WriteByte(c)
}

func (w *limitWriter) WriteRune(r rune) (int, error) {
	if !w.room(4) {
		return 0, errOutput
	}
	return w.Buffer.WriteRune(r)
}

// Buffered and Flush complete util.BufWriter: nothing is held back.
func (w *limitWriter) Buffered() int { return 0 }

func (w *limitWriter) Flush() error {
	if w.over {
		return errOutput
	}
	return nil
}

// over reports whether w is a limitWriter past its budget: node renderers
// then return ast.WalkStop and errOutput instead of rendering the rest for
// nothing.
func over(w util.BufWriter) bool {
	lw, ok := w.(*limitWriter)
	return ok && lw.over
}
