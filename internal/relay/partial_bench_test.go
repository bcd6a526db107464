package relay_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/extension"
	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/host"
	"github.com/claude-relay/claude-relay/internal/relay"
	"github.com/claude-relay/claude-relay/internal/streamjson"
)

// partialLines is how many stream_event lines one fake run writes.
const partialLines = 2000

// BenchmarkPartial is our share of a `partial` event's latency (issue 12:
// p99 at most 2 ms from the CLI's line to our stdout): from the moment the
// executor has read and decoded a stream_event line (Event.Time) to the
// write of the protocol line that carries it, with a fake executor that
// emits partialLines such lines per run. Variants: baseline copies the
// CLI's line straight to a buffered stdout (the least a relay can do);
// writer is relay.Core and extension.Writer (`run --json`); helper is
// extension.Server, what `claude-relay extension` runs. µs-p50 and µs-p99
// are that latency; ns/op, B/op and allocs/op are per partial event, the
// fake executor's decoding included (the same in every variant).
func BenchmarkPartial(b *testing.B) {
	lines := streamEventLines(partialLines)
	b.Run("baseline", func(b *testing.B) {
		out := &stampWriter{}
		bw := bufio.NewWriterSize(out, 64<<10)
		fx := &partialExec{lines: lines, out: out}
		obs := executor.ObserverFunc(func(e executor.Event) {
			bw.Write(e.Line)   //nolint:errcheck // Flush reports it
			bw.WriteByte('\n') //nolint:errcheck // Flush reports it
			if err := bw.Flush(); err != nil {
				b.Fatal(err)
			}
		})
		measurePartials(b, fx, func() {
			if _, err := fx.Run(b.Context(), executor.Request{RunID: "r"}, obs, nil); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("writer", func(b *testing.B) {
		out := &stampWriter{}
		fx := &partialExec{lines: lines, out: out}
		core := relay.New(relay.Options{Executor: fx, Spool: acceptSpool{}})
		defer core.Close()
		w := extension.NewWriter(out)
		ended := make(chan struct{}, 1)
		sink := relay.SinkFunc(func(e relay.Event) {
			for _, ev := range extension.EventsOf(e) {
				if err := w.Emit(ev); err != nil {
					b.Error(err)
				}
			}
			if e.Kind == relay.KindEnded {
				ended <- struct{}{}
			}
		})
		cwd := b.TempDir()
		measurePartials(b, fx, func() {
			_, err := core.Start(relay.Request{RunOptions: executor.RunOptions{Cwd: cwd, KeepAlive: true, PartialMessages: true}, Prompt: "partials"}, sink)
			if err != nil {
				b.Fatal(err)
			}
			<-ended
		})
	})
	b.Run("helper", func(b *testing.B) {
		out := &stampWriter{idle: make(chan struct{}, 1)}
		fx := &partialExec{lines: lines, out: out}
		h := host.New(host.Options{Forwarder: idleForwarder{}, Core: relay.Options{Executor: fx, DefaultCwd: b.TempDir()}})
		srv := extension.New(extension.Options{Host: h})
		inR, inW := io.Pipe()
		served := make(chan error, 1)
		go func() { served <- srv.Serve(inR, out, nil) }()
		defer func() {
			inW.Close() // EOF: the server shuts down
			if err := <-served; err != nil {
				b.Errorf("serve: %v", err)
			}
			inR.Close()
		}()
		prompt := "partials"
		measurePartials(b, fx, func() {
			cmd, _ := json.Marshal(extension.Command{Action: extension.ActionPrompt, RunID: uuid.NewString(), Prompt: &prompt,
				Options: extension.PromptOptions{RunOptions: executor.RunOptions{KeepAlive: true, PartialMessages: true}}})
			if _, err := inW.Write(append(cmd, '\n')); err != nil {
				b.Fatal(err)
			}
			// The state idle line follows the run's end: nothing of this
			// run is written after it.
			select {
			case <-out.idle:
			case <-time.After(time.Minute):
				b.Fatal("the run did not end within a minute")
			}
		})
	})
}

// measurePartials runs one untimed run, then one run per op, and reports
// the latencies fx measured.
func measurePartials(b *testing.B, fx *partialExec, run func()) {
	b.Helper()
	run()
	fx.lat = fx.lat[:0]
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		run()
	}
	runtime.ReadMemStats(&after)
	n := float64(len(fx.lat))
	if n != float64(b.N*partialLines) {
		b.Fatalf("%d latencies for %d runs of %d lines", len(fx.lat), b.N, partialLines)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/op")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/op")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/op")
	slices.Sort(fx.lat)
	pct := func(p int) float64 {
		i := (len(fx.lat)*p + 99) / 100
		return float64(fx.lat[max(i, 1)-1]) / float64(time.Microsecond)
	}
	b.ReportMetric(pct(50), "µs-p50")
	b.ReportMetric(pct(99), "µs-p99")
}

// streamEventLines are n text deltas as the pinned CLI writes them with
// --include-partial-messages.
func streamEventLines(n int) [][]byte {
	session := uuid.NewString()
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"word%04d and a few more "}},"session_id":%q,"parent_tool_use_id":null,"uuid":%q}`,
			i, session, uuid.NewString())
	}
	return out
}

// partialExec is an executor whose CLI writes only stream_event lines, then
// a result. Each line is decoded as the executor does, stamped like
// Event.Time, and handed to the observer, which writes (or not) to out
// before it returns: the latency is out's write time minus the stamp.
type partialExec struct {
	lines [][]byte
	out   *stampWriter
	lat   []time.Duration // one Run at a time appends
}

func (fx *partialExec) Run(ctx context.Context, req executor.Request, obs executor.Observer, _ executor.Approver) (*executor.Result, error) {
	for _, line := range fx.lines {
		msg, err := streamjson.Decode(line)
		if err != nil {
			return nil, fmt.Errorf("decode %s: %w", line, err)
		}
		writes := fx.out.count()
		now := time.Now()
		obs.Event(executor.Event{Kind: executor.EventLine, RunID: req.RunID, Time: now, Line: msg.Raw, Message: msg})
		at, n := fx.out.lastWrite()
		if n != writes+1 {
			return nil, fmt.Errorf("a stream_event line made %d writes to stdout, want 1", n-writes)
		}
		fx.lat = append(fx.lat, at.Sub(now))
	}
	result := []byte(`{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s"}`)
	msg, err := streamjson.Decode(result)
	if err != nil {
		return nil, err
	}
	obs.Event(executor.Event{Kind: executor.EventLine, RunID: req.RunID, Time: time.Now(), Line: msg.Raw, Message: msg})
	return &executor.Result{Status: executor.StatusCompleted, CommandResult: executor.CommandResult{Stdout: "done"}}, ctx.Err()
}

// stampWriter is stdout: it notes when each write began and how many there
// were, and signals idle (when set) after a line that says the relay is idle.
type stampWriter struct {
	mu   sync.Mutex
	last time.Time
	n    int
	idle chan struct{}
}

var idleLine = []byte(`"state":"` + extension.StateIdle + `"`)

func (w *stampWriter) Write(p []byte) (int, error) {
	now := time.Now() // first: what follows is not the writer's cost
	w.mu.Lock()
	w.last, w.n = now, w.n+1
	w.mu.Unlock()
	if w.idle != nil && bytes.Contains(p, idleLine) {
		select {
		case w.idle <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

func (w *stampWriter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

func (w *stampWriter) lastWrite() (time.Time, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last, w.n
}

// acceptSpool takes every event at once, as a healthy spool does.
type acceptSpool struct{}

func (acceptSpool) Enqueue(forwarder.Event) (forwarder.Accepted, error) {
	return forwarder.Accepted{}, nil
}

// idleForwarder is a forwarder with nothing to deliver.
type idleForwarder struct{ acceptSpool }

func (idleForwarder) Stats() forwarder.Stats        { return forwarder.Stats{} }
func (idleForwarder) Stop(context.Context) error    { return nil }
func (idleForwarder) OnError(func(forwarder.Error)) {}
func (idleForwarder) Start()                        {}
