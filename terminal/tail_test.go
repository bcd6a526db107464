package terminal

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// tailWait bounds a wait for lines; they normally come within milliseconds.
const tailWait = 10 * time.Second

// notifyPoll is the Poll for tests that rely on fsnotify alone: on Linux
// inotify reports writes to files in the watched directory, so an hour-long
// ticker proves the watcher did the work. kqueue only reports directory
// entries, so elsewhere the ticker has to help.
func notifyPoll() time.Duration {
	if runtime.GOOS == "linux" {
		return time.Hour
	}
	return 50 * time.Millisecond
}

// lineSink collects a tailer's lines.
type lineSink struct {
	mu    sync.Mutex
	lines []string
	added chan struct{}
}

func newSink() *lineSink { return &lineSink{added: make(chan struct{}, 1)} }

func (s *lineSink) onLine(b []byte) {
	s.mu.Lock()
	s.lines = append(s.lines, string(b)) // the slice is reused: copy
	s.mu.Unlock()
	select {
	case s.added <- struct{}{}:
	default:
	}
}

func (s *lineSink) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lines)
}

// waitFor waits until the sink holds want exactly.
func (s *lineSink) waitFor(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.After(tailWait)
	for {
		got := s.got()
		if slices.Equal(got, want) {
			return
		}
		if len(got) > len(want) {
			t.Fatalf("lines %q, want %q", got, want)
		}
		select {
		case <-s.added:
		case <-deadline:
			t.Fatalf("lines %q after %v, want %q", got, tailWait, want)
		}
	}
}

// still checks that the sink holds want and nothing more once tl has read
// everything the file holds. Sync is the barrier: Run reads with the same
// readAll that a watcher event or a tick runs, so a line that is not there
// after it cannot come from what was written so far; no wait for "a while"
// needed.
func (s *lineSink) still(t *testing.T, tl *Tailer, want ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), tailWait)
	defer cancel()
	if !tl.Sync(ctx) {
		t.Fatalf("Sync did not return within %v", tailWait)
	}
	if got := s.got(); !slices.Equal(got, want) {
		t.Fatalf("lines %q, want still %q", got, want)
	}
}

// runTailer runs tl until the returned stop is called (or the test ends).
func runTailer(t *testing.T, tl *Tailer) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tl.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(tailWait):
				t.Errorf("Run did not return within %v of its context ending", tailWait)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func TestTailerLateCreation(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "projects", "-work")
	path := filepath.Join(dir, "conv.jsonl")
	sink := newSink()
	tl := &Tailer{Path: path, OnLine: sink.onLine, Poll: notifyPoll()}
	runTailer(t, tl)
	// Run waits for the directory. Nothing marks that it is waiting, and
	// nothing needs to: a directory made before Run looks is simply found
	// (TestTailerExistingFile), so a slow start only tests less.
	time.Sleep(200 * time.Millisecond)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// And the file comes later still: Sync returns once Run found the
	// directory and watches it.
	sink.still(t, tl)
	appendFile(t, path, `{"n":1}`+"\n"+`{"n":2}`+"\n")
	sink.waitFor(t, `{"n":1}`, `{"n":2}`)
	appendFile(t, path, `{"n":3}`+"\n")
	sink.waitFor(t, `{"n":1}`, `{"n":2}`, `{"n":3}`)
}

func TestTailerExistingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	appendFile(t, path, "a\nb\n")
	sink := newSink()
	runTailer(t, &Tailer{Path: path, OnLine: sink.onLine, Poll: notifyPoll()})
	sink.waitFor(t, "a", "b")
}

func TestTailerReturnsWhileWaitingForTheDirectory(t *testing.T) {
	tl := &Tailer{Path: filepath.Join(t.TempDir(), "never", "t.jsonl"), OnLine: func([]byte) { t.Error("a line from nowhere") }}
	stop := runTailer(t, tl)
	time.Sleep(150 * time.Millisecond)
	stop()
}

func TestTailerPartialLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	sink := newSink()
	tl := &Tailer{Path: path, OnLine: sink.onLine, Poll: 20 * time.Millisecond}
	runTailer(t, tl)
	appendFile(t, path, `{"type":"assis`)
	sink.still(t, tl)
	appendFile(t, path, `tant","n":1`)
	sink.still(t, tl)
	appendFile(t, path, "}\n"+`{"n":2}`+"\n"+`{"n":`)
	sink.waitFor(t, `{"type":"assistant","n":1}`, `{"n":2}`)
	sink.still(t, tl, `{"type":"assistant","n":1}`, `{"n":2}`)
	appendFile(t, path, "3}\n")
	sink.waitFor(t, `{"type":"assistant","n":1}`, `{"n":2}`, `{"n":3}`)
	// Blank lines are no lines.
	appendFile(t, path, "\n  \n\t\n"+`{"n":4}`+"\n")
	sink.waitFor(t, `{"type":"assistant","n":1}`, `{"n":2}`, `{"n":3}`, `{"n":4}`)
}

func TestTailerTruncation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	sink := newSink()
	tl := &Tailer{Path: path, OnLine: sink.onLine, Poll: notifyPoll()}
	runTailer(t, tl)
	appendFile(t, path, "first line\nsecond line\nhalf a li")
	sink.waitFor(t, "first line", "second line")
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	// Shorter than before: seen as a truncation whenever it is read. The
	// half line went with the truncation.
	appendFile(t, path, "new\n")
	sink.waitFor(t, "first line", "second line", "new")
	// Once the truncation was seen, longer content is read from the top.
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	sink.still(t, tl, "first line", "second line", "new")
	appendFile(t, path, "a much longer line than any before it\nand one more\n")
	sink.waitFor(t, "first line", "second line", "new", "a much longer line than any before it", "and one more")
}

func TestTailerReplacement(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.jsonl")
	sink := newSink()
	tl := &Tailer{Path: path, OnLine: sink.onLine, Poll: notifyPoll()}
	runTailer(t, tl)
	appendFile(t, path, "old 1\n")
	sink.waitFor(t, "old 1")

	// Renamed over: the new file is read from its start.
	tmp := filepath.Join(dir, "t.jsonl.tmp")
	if err := os.WriteFile(tmp, []byte("new 1\nnew 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	sink.waitFor(t, "old 1", "new 1", "new 2")
	appendFile(t, path, "new 3\n")
	sink.waitFor(t, "old 1", "new 1", "new 2", "new 3")

	// Removed, then created again.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	sink.still(t, tl, "old 1", "new 1", "new 2", "new 3")
	appendFile(t, path, "again 1\n")
	sink.waitFor(t, "old 1", "new 1", "new 2", "new 3", "again 1")
}

// Lines written to the old file just before it is replaced are not lost.
func TestTailerReplacementDrainsTheOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.jsonl")
	appendFile(t, path, "old 1\n")
	sink := newSink()
	// No watcher help: the old file's tail and the replacement land between
	// two polls.
	stop := runTailer(t, &Tailer{Path: filepath.Join(linkedDir(t, dir), "t.jsonl"), OnLine: sink.onLine, Poll: time.Hour})
	sink.waitFor(t, "old 1")
	appendFile(t, path, "old 2\n")
	tmp := filepath.Join(dir, "t.jsonl.tmp")
	if err := os.WriteFile(tmp, []byte("new 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	stop() // the final read
	if got, want := sink.got(), []string{"old 1", "old 2", "new 1"}; !slices.Equal(got, want) {
		t.Errorf("lines %q, want %q", got, want)
	}
}

func TestTailerOverlongLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	sink := newSink()
	tl := &Tailer{Path: path, OnLine: sink.onLine, MaxLine: 64, Poll: 20 * time.Millisecond}
	runTailer(t, tl)
	exact := strings.Repeat("e", 64)
	appendFile(t, path, "short 1\n"+strings.Repeat("x", 200)+"\nshort 2\n"+exact+"\n"+exact+"!\nshort 3\n")
	sink.waitFor(t, "short 1", "short 2", exact, "short 3")
	// Over the limit across several writes, then a line in the same write as
	// its end.
	appendFile(t, path, strings.Repeat("y", 50))
	sink.still(t, tl, "short 1", "short 2", exact, "short 3")
	appendFile(t, path, strings.Repeat("y", 50))
	sink.still(t, tl, "short 1", "short 2", exact, "short 3")
	appendFile(t, path, "yyy\nafter\n")
	sink.waitFor(t, "short 1", "short 2", exact, "short 3", "after")
}

// linkedDir returns a directory holding a symlink to every name in target,
// so a tailer of a name in it reads target's files, but fsnotify (watching
// the link's directory) never hears of writes to them.
func linkedDir(t *testing.T, target string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(target, "t.jsonl"), filepath.Join(dir, "t.jsonl")); err != nil {
		t.Skipf("symlinks: %v", err)
	}
	return dir
}

func TestTailerTickerFallback(t *testing.T) {
	real := t.TempDir()
	path := filepath.Join(real, "t.jsonl")
	sink := newSink()
	runTailer(t, &Tailer{Path: filepath.Join(linkedDir(t, real), "t.jsonl"), OnLine: sink.onLine, Poll: 20 * time.Millisecond})
	appendFile(t, path, "one\n")
	sink.waitFor(t, "one")
	appendFile(t, path, "two\nthr")
	sink.waitFor(t, "one", "two")
	appendFile(t, path, "ee\n")
	sink.waitFor(t, "one", "two", "three")
}

// Without the ticker and without watcher events, nothing arrives until the
// context ends; then the final read delivers what is left.
func TestTailerFinalRead(t *testing.T) {
	real := t.TempDir()
	path := filepath.Join(real, "t.jsonl")
	sink := newSink()
	tl := &Tailer{Path: filepath.Join(linkedDir(t, real), "t.jsonl"), OnLine: sink.onLine, Poll: time.Hour}
	stop := runTailer(t, tl)
	sink.still(t, tl) // Run is in its loop and has read the (missing) file
	appendFile(t, path, "one\ntwo\n")
	// Nothing may read the lines before the end, and a read that did not
	// happen leaves no mark (Sync would make one): a bounded look only.
	time.Sleep(300 * time.Millisecond)
	if got := sink.got(); len(got) != 0 {
		t.Fatalf("lines %q before the context ended, want none: nothing told Run to read", got)
	}
	stop()
	if got := sink.got(); !slices.Equal(got, []string{"one", "two"}) {
		t.Errorf("lines %q after the final read, want one, two", got)
	}
}

// A 200 MB transcript is read through with bounded memory.
func TestTailerLargeFileBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 200 MB file")
	}
	const lineLen, lines = 1024, 200 << 10 // 200 MiB
	path := filepath.Join(t.TempDir(), "big.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	pad := strings.Repeat("x", lineLen)
	for i := range lines {
		head := fmt.Sprintf(`{"type":"assistant","uuid":"u-%d","pad":"`, i)
		w.WriteString(head)
		w.WriteString(pad[:lineLen-len(head)-3])
		w.WriteString("\"}\n")
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != lineLen*lines {
		t.Fatalf("generated %v bytes (%v), want %d", fi.Size(), err, lineLen*lines)
	}
	runtime.GC()

	var n, bad atomic.Int64
	var peak atomic.Uint64
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		for {
			p := peak.Load()
			if ms.HeapInuse <= p || peak.CompareAndSwap(p, ms.HeapInuse) {
				return
			}
		}
	}
	done := make(chan struct{})
	tl := &Tailer{Path: path, Poll: 50 * time.Millisecond, OnLine: func(b []byte) {
		if len(b) != lineLen-1 {
			bad.Add(1)
		}
		c := n.Add(1)
		if c%4096 == 0 {
			sample()
		}
		if c == lines {
			close(done)
		}
	}}
	began := time.Now()
	stop := runTailer(t, tl)
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("%d of %d lines read after 2 minutes", n.Load(), lines)
	}
	stop()
	sample()
	t.Logf("read %d lines (200 MiB) in %v; peak HeapInuse %.1f MiB", n.Load(), time.Since(began), float64(peak.Load())/(1<<20))
	if n.Load() != lines || bad.Load() != 0 {
		t.Errorf("%d lines, %d of the wrong length; want %d of %d bytes", n.Load(), bad.Load(), lines, lineLen-1)
	}
	if p := peak.Load(); p >= 32<<20 {
		t.Errorf("peak HeapInuse %.1f MiB while tailing 200 MiB, want < 32 MiB", float64(p)/(1<<20))
	}
}

func TestTailerReportsSkippedLines(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.jsonl")
	long := `{"type":"user","x":"` + strings.Repeat("y", 300) + `"}`
	if err := os.WriteFile(path, []byte(long+"\n{\"type\":\"ok\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lines []string
	var skipped []int
	tl := &Tailer{Path: path, MaxLine: 100, Poll: 20 * time.Millisecond,
		OnLine: func(l []byte) { mu.Lock(); lines = append(lines, string(l)); mu.Unlock() },
		OnSkip: func(prefix []byte, size int) {
			mu.Lock()
			skipped = append(skipped, size)
			mu.Unlock()
			if !strings.HasPrefix(string(prefix), `{"type":"user"`) {
				t.Errorf("prefix %q", prefix)
			}
		}}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	tl.Run(ctx) //nolint:errcheck
	mu.Lock()
	defer mu.Unlock()
	if len(skipped) != 1 || skipped[0] <= 100 || len(lines) != 1 || lines[0] != `{"type":"ok"}` {
		t.Errorf("skipped %v lines %q", skipped, lines)
	}
}

// Sync returns once every line the file holds has reached OnLine, without
// waiting for a change notification or the poll.
func TestTailerSync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, []byte("{\"n\":1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []string
	tl := &Tailer{Path: path, Poll: time.Hour, OnLine: func(l []byte) {
		mu.Lock()
		got = append(got, string(l))
		mu.Unlock()
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); tl.Run(ctx) }() //nolint:errcheck // returns at ctx end
	defer func() { cancel(); <-done }()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 2; i <= 50; i++ {
		fmt.Fprintf(f, "{\"n\":%d}\n", i)
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		ok := tl.Sync(sctx)
		scancel()
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if !ok || n != i {
			t.Fatalf("after line %d and Sync (%v): %d lines", i, ok, n)
		}
	}
	f.Close()
}
