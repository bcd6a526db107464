package runview

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Line is one line a person typed, or why there is none.
type Line struct {
	Text string
	Err  error
}

// LineReader asks for lines on request (run -i's > prompt) and delivers
// them on C. It reads on a goroutine of its own so that signals and the
// run's end are handled while it waits; Close unblocks a pending read (a
// terminal's read deadline) and waits for it.
type LineReader struct {
	in   *bufio.Reader
	f    *os.File // set when in is a file: its deadline unblocks a read
	out  io.Writer
	c    chan Line
	wg   sync.WaitGroup
	once sync.Once
	stop chan struct{}
}

// NewLineReader reads lines from in, prompting on out.
func NewLineReader(in io.Reader, out io.Writer) *LineReader {
	r := &LineReader{in: bufio.NewReader(in), out: out, c: make(chan Line, 1), stop: make(chan struct{})}
	r.f, _ = in.(*os.File)
	return r
}

// C delivers the answer to each ask; nil for a nil reader, so a select on it
// never fires.
func (r *LineReader) C() <-chan Line {
	if r == nil {
		return nil
	}
	return r.c
}

// Ask prints prompt and reads one line, delivered on C.
func (r *LineReader) Ask(prompt string) {
	if r == nil {
		return
	}
	fmt.Fprint(r.out, prompt)
	r.wg.Go(func() {
		text, err := r.in.ReadString('\n')
		if text != "" && err == io.EOF {
			err = nil // a last line without a newline still counts
		}
		select {
		case r.c <- Line{Text: text, Err: err}:
		case <-r.stop:
		}
	})
}

// Close stops a pending read and waits for it.
func (r *LineReader) Close() {
	r.once.Do(func() {
		close(r.stop)
		if r.f != nil {
			r.f.SetReadDeadline(time.Now()) //nolint:errcheck // not every file has deadlines
		}
	})
	r.wg.Wait()
}
