package terminal

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Tailer follows a JSONL file that may not exist yet, may grow in partial
// writes, and may be truncated or replaced. Memory stays bounded whatever the
// file's size: it reads in chunks and keeps at most one partial line (capped
// by MaxLine).
type Tailer struct {
	Path    string
	OnLine  func(line []byte)             // a complete line without '\n'; the slice is reused
	OnSkip  func(prefix []byte, size int) // a line over MaxLine was skipped (nil: only logged)
	MaxLine int                           // longer lines are skipped and reported (16 MiB)
	Poll    time.Duration                 // ticker: the fallback when fsnotify fails, and a safety net (1s)
	// Skip is where reading starts in the file as it is now: a resumed
	// conversation's transcript already holds lines sent by an earlier run.
	// A file smaller than Skip, or replaced, is read from the start.
	Skip   int64
	Logger *slog.Logger

	syncOnce sync.Once
	syncs    chan chan struct{} // Sync's requests, served by Run

	f        *os.File
	fi       os.FileInfo
	off      int64
	partial  []byte
	skipping bool // inside an over-long line
	buf      []byte
}

// Run tails until ctx ends, then reads what is left once and returns.
func (t *Tailer) Run(ctx context.Context) error {
	if t.MaxLine <= 0 {
		t.MaxLine = 16 << 20
	}
	if t.Poll <= 0 {
		t.Poll = time.Second
	}
	if t.Logger == nil {
		t.Logger = slog.New(slog.DiscardHandler)
	}
	t.buf = make([]byte, 64<<10)
	defer t.closeFile()
	var events <-chan fsnotify.Event
	w, err := t.watch(ctx)
	if err != nil {
		t.Logger.Warn("transcript watch failed; polling", "err", err)
	} else {
		defer w.Close()
		events = w.Events
	}
	tick := time.NewTicker(t.Poll)
	defer tick.Stop()
	for {
		t.readAll()
		select {
		case <-ctx.Done():
			t.readAll()
			return nil
		case done := <-t.requests():
			t.readAll()
			close(done)
			continue
		case ev, ok := <-events:
			if !ok {
				events = nil
			} else if filepath.Clean(ev.Name) != filepath.Clean(t.Path) {
				continue
			}
		case <-tick.C:
		}
	}
}

// Sync has Run read everything the file holds now, and returns once it has
// (every complete line went to OnLine), or false when ctx ended first (Run
// not started, or ended). It lets a caller order its own events after the
// lines written before them.
func (t *Tailer) Sync(ctx context.Context) bool {
	done := make(chan struct{})
	select {
	case t.requests() <- done:
	case <-ctx.Done():
		return false
	}
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

func (t *Tailer) requests() chan chan struct{} {
	t.syncOnce.Do(func() { t.syncs = make(chan chan struct{}) })
	return t.syncs
}

// watch watches the transcript's directory, waiting for it to exist: the CLI
// may create it after the first hook arrives.
func (t *Tailer) watch(ctx context.Context) (*fsnotify.Watcher, error) {
	dir := filepath.Dir(t.Path)
	for {
		if _, err := os.Stat(dir); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	if err := w.Add(dir); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// readAll reads whatever is new, handling creation, truncation and
// replacement of the file.
func (t *Tailer) readAll() {
	fi, err := os.Stat(t.Path)
	if err != nil {
		return // not created yet, or between a remove and a create
	}
	if t.f != nil && !os.SameFile(t.fi, fi) {
		t.drain() // replaced: finish the old file, then start the new one
		t.closeFile()
	}
	if t.f == nil {
		f, err := os.Open(t.Path)
		if err != nil {
			return
		}
		t.f, t.fi, t.off, t.partial, t.skipping = f, fi, 0, t.partial[:0], false
		if t.Skip > 0 && fi.Size() >= t.Skip {
			t.off = t.Skip
		}
		t.Skip = 0 // only the file as it was at the start
	}
	if fi.Size() < t.off {
		// Truncated: start again from the top; a half line is gone with it.
		t.off, t.partial, t.skipping = 0, t.partial[:0], false
	}
	t.drain()
}

func (t *Tailer) drain() {
	for {
		n, err := t.f.ReadAt(t.buf, t.off)
		if n > 0 {
			t.off += int64(n)
			t.split(t.buf[:n])
		}
		if err != nil || n == 0 {
			if err != nil && !errors.Is(err, io.EOF) {
				t.Logger.Warn("reading the transcript", "err", err)
			}
			return
		}
	}
}

func (t *Tailer) split(chunk []byte) {
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			t.keep(chunk)
			return
		}
		if !t.skipping {
			t.keep(chunk[:i])
			if !t.skipping && len(bytes.TrimSpace(t.partial)) > 0 {
				t.OnLine(t.partial)
			}
		}
		t.partial, t.skipping = t.partial[:0], false
		chunk = chunk[i+1:]
	}
}

// keep appends to the partial line, giving up on a line over MaxLine.
func (t *Tailer) keep(b []byte) {
	if t.skipping {
		return
	}
	if len(t.partial)+len(b) > t.MaxLine {
		t.Logger.Warn("transcript line over the limit skipped", "limit", t.MaxLine)
		if t.OnSkip != nil {
			prefix := make([]byte, 0, 1024)
			prefix = append(prefix, t.partial[:min(len(t.partial), 1024)]...)
			prefix = append(prefix, b[:min(len(b), 1024-len(prefix))]...)
			t.OnSkip(prefix, len(t.partial)+len(b))
		}
		t.partial, t.skipping = t.partial[:0], true
		return
	}
	t.partial = append(t.partial, b...)
	if cap(t.partial) > 4<<20 && len(t.partial) == 0 {
		t.partial = nil
	}
}

func (t *Tailer) closeFile() {
	if t.f != nil {
		t.f.Close()
		t.f = nil
	}
}
