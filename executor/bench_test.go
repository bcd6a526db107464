package executor

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/claude-relay/claude-relay/internal/ndjson"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/testkit/fakecli"
)

// floodLines is how many stream_event lines the fake CLI writes per run in
// the read-loop benchmarks: enough that process start is noise.
const floodLines = 100_000

// countingObserver only counts, so the benchmark measures the executor and
// not what a real observer does with the events.
type countingObserver struct {
	lines, other atomic.Int64
}

func (c *countingObserver) Event(e Event) {
	if e.Kind == EventLine {
		c.lines.Add(1)
	} else {
		c.other.Add(1)
	}
}

// perEvent reports the loop's cost per stdout line: time, and what the
// allocator saw between before and now (all goroutines of this process, so
// the executor's stderr reader and supervisor count too; the fake CLI is
// another process and does not).
func perEvent(b *testing.B, before *runtime.MemStats, events int64) {
	b.Helper()
	if events == 0 {
		b.Fatal("no events were read")
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(events), "allocs/event")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(events), "B/event")
}

// BenchmarkReadLoop is the executor's per-event overhead: a whole Run over a
// fake CLI that floods stdout, against the same process read with a bare
// bufio line loop (baseline), so the ratio is what decoding, events and
// supervision cost over reading.
func BenchmarkReadLoop(b *testing.B) {
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		var events int64
		for b.Loop() {
			n, err := rawFloodRun(io.Discard)
			if err != nil {
				b.Fatal(err)
			}
			events += n
		}
		perEvent(b, &before, events)
	})
	b.Run("executor", func(b *testing.B) {
		path, env := fakecli.Command(fakecli.ModeFlood, fakecli.WithFloodLines(floodLines))
		e := New(Options{CLIPath: path, BaseEnv: append(os.Environ(), env...)})
		obs := &countingObserver{}
		b.ReportAllocs()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		for b.Loop() {
			res, err := e.Run(context.Background(), Request{Prompt: "flood"}, obs, nil)
			if err != nil || res.Status != StatusCompleted {
				b.Fatalf("flood run: %+v %v", res, err)
			}
		}
		perEvent(b, &before, obs.lines.Load())
	})
}

// rawFloodRun is the least a wrapper can do with the flooding fake CLI: start
// it, send the prompt, count stdout lines with no decoding, close stdin at
// the result and wait. Everything it reads is copied to sink.
func rawFloodRun(sink io.Writer) (lines int64, err error) {
	path, env := fakecli.Command(fakecli.ModeFlood, fakecli.WithFloodLines(floodLines))
	cmd := exec.Command(path)
	cmd.Env = append(os.Environ(), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 0, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	if _, err := stdin.Write(append(streamjson.UserMessage("flood"), '\n')); err != nil {
		return 0, errors.Join(err, cmd.Wait())
	}
	resultPrefix := []byte(`{"type":"result"`)
	r := bufio.NewReaderSize(stdout, 64<<10)
	for {
		line, rerr := r.ReadSlice('\n')
		sink.Write(line) //nolint:errcheck // io.Discard or a bytes.Buffer
		if errors.Is(rerr, bufio.ErrBufferFull) {
			continue // the rest of a long line follows
		}
		if len(line) > 0 {
			lines++
		}
		if bytes.HasPrefix(line, resultPrefix) {
			stdin.Close()
		}
		if rerr != nil {
			break
		}
	}
	stdin.Close()
	return lines, cmd.Wait()
}

// BenchmarkReadLoopInProcess isolates the CPU per event: the fake CLI's
// flood, captured once, split by our line reader and decoded, with no
// process, pipe or observer; the baseline only splits it with bufio.
func BenchmarkReadLoopInProcess(b *testing.B) {
	var out bytes.Buffer
	if _, err := rawFloodRun(&out); err != nil {
		b.Fatalf("capture the fake CLI's flood: %v", err)
	}
	flood := out.Bytes()
	b.Run("baseline", func(b *testing.B) {
		b.SetBytes(int64(len(flood)))
		b.ReportAllocs()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		var events int64
		for b.Loop() {
			r := bufio.NewReaderSize(bytes.NewReader(flood), 64<<10)
			for {
				line, err := r.ReadSlice('\n')
				if len(line) > 0 && !errors.Is(err, bufio.ErrBufferFull) {
					events++
				}
				if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
					break
				}
			}
		}
		perEvent(b, &before, events)
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(flood)))
		b.ReportAllocs()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		var events int64
		for b.Loop() {
			lr := ndjson.NewReader(bytes.NewReader(flood), ndjson.DefaultMax)
			for {
				line, err := lr.Next()
				if err != nil {
					break
				}
				if _, err := streamjson.Decode(line); err != nil {
					b.Fatalf("decode %q: %v", line, err)
				}
				events++
			}
		}
		perEvent(b, &before, events)
	})
}
