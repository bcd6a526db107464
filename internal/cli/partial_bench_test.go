package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/extension"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
)

// partialTurnsPerOp is how many follow-up turns one op of
// BenchmarkPartialE2E runs; figures are per turn.
const partialTurnsPerOp = 4

// partialScriptTurns is the length of the scripted conversation: more turns
// than any benchmark run takes, so that every delta's text is unique.
const partialScriptTurns = 200

// BenchmarkPartialE2E is a `partial` event's latency end to end, with the
// real CLI on the scripted API: from the scripted API's content_block_delta
// leaving for the CLI (a proxy between them stamps it) to the partial event
// on the helper's stdout (helper: `claude-relay extension`, a keep-alive run
// with partial_messages, read by this process as an editor would), against
// the same delta reaching an in-process executor's Observer as a decoded
// stream_event line (baseline: the CLI's share, with no relay or protocol
// behind it). ms-first-p50/p99 are over each turn's first delta,
// ms-delta-p50/p99 over every delta; ns/op is a whole follow-up turn.
// BenchmarkPartial (internal/relay) isolates our own part of the latency.
func BenchmarkPartialE2E(b *testing.B) {
	b.Run("baseline", func(b *testing.B) {
		cli := realcli.RealCLI(b)
		api := mockapi.New(b, partialScript())
		proxy := newDeltaProxy(b, api.URL())
		cwd := b.TempDir()
		cli.TrustDir(cwd)
		e := executor.New(executor.Options{CLIPath: cli.Path, BaseEnv: cli.Env(b, proxy.url())})
		lr := startPartialRun(b, e, cwd, proxy)
		lr.waitTurn(b) // turn 1, untimed: the CLI's start
		measurePartialTurns(b, func(text string) partialTurn { return lr.turn(b, text) })
		lr.end(b)
	})
	b.Run("helper", func(b *testing.B) {
		cli := realcli.RealCLI(b) // first: it skips when the CLI is not installed
		bin := buildRelay(b)
		api := mockapi.New(b, partialScript())
		proxy := newDeltaProxy(b, api.URL())
		backendURL, _ := fastBackend(b, "bench-token")
		cwd := b.TempDir()
		cli.TrustDir(cwd)
		env := append(cli.Env(b, proxy.url()), "CLAUDE_RELAY_CLAUDE_PATH="+cli.Path,
			"CLAUDE_RELAY_BACKEND_URL="+backendURL, "CLAUDE_RELAY_BACKEND_TOKEN=bench-token")
		h := startHelperProc(b, env, bin, "extension")
		h.until(b, extension.EventReady)
		prompt := "start"
		h.send(b, extension.Command{Action: extension.ActionPrompt, RunID: "partial", Prompt: &prompt,
			Options: extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd, KeepAlive: true, PartialMessages: true, MaxTurns: 6}}})
		helperPartialTurn(b, h, proxy) // turn 1, untimed: the CLI's start
		measurePartialTurns(b, func(text string) partialTurn {
			h.send(b, extension.Command{Action: extension.ActionSend, RunID: "partial", Prompt: &text})
			return helperPartialTurn(b, h, proxy)
		})
		h.send(b, extension.Command{Action: extension.ActionEnd, RunID: "partial"})
		if end := h.until(b, extension.EventRunCompleted); end.RunID != "partial" {
			b.Fatalf("run_completed for %q", end.RunID)
		}
		h.stop(b)
	})
}

// partialScript answers every turn with text streamed in several deltas of
// unique words, so a delta's text names the delta.
func partialScript() mockapi.Script {
	s := make(mockapi.Script, partialScriptTurns)
	for i := range s {
		var text strings.Builder
		for w := range 24 {
			fmt.Fprintf(&text, "t%03dw%02d ", i, w) // 8 bytes: each 24-byte delta is 3 words
		}
		// A pause before each delta, so that each one travels alone, as
		// tokens from the real API do.
		s[i] = mockapi.Turn{Blocks: []mockapi.Block{mockapi.Text(text.String())}, DeltaDelay: 5 * time.Millisecond}
	}
	return s
}

// partialTurn is one turn's partial latencies, in arrival order.
type partialTurn struct {
	deltas []time.Duration
	took   time.Duration // from the send to the turn's end
}

// measurePartialTurns runs partialTurnsPerOp turns per op and reports them:
// ns/op, B/op and allocs/op per turn (this process's allocations: the
// scripted API and the proxy count in both variants), and the latency
// percentiles (nearest rank: over a dozen turns, first-p99 is the worst).
func measurePartialTurns(b *testing.B, turn func(text string) partialTurn) {
	b.Helper()
	var first, all []time.Duration
	var took time.Duration
	n := 0
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		for range partialTurnsPerOp {
			n++
			t := turn(fmt.Sprintf("follow-up %d", n))
			if len(t.deltas) == 0 {
				b.Fatalf("turn %d: no text delta reached stdout", n)
			}
			first = append(first, t.deltas[0])
			all = append(all, t.deltas...)
			took += t.took
		}
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(took)/float64(n), "ns/op")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(n), "B/op")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(n), "allocs/op")
	ms := func(ds []time.Duration, p int) float64 {
		slices.Sort(ds)
		i := (len(ds)*p + 99) / 100
		return float64(ds[max(i, 1)-1]) / float64(time.Millisecond)
	}
	b.ReportMetric(ms(first, 50), "ms-first-p50")
	b.ReportMetric(ms(first, 99), "ms-first-p99")
	b.ReportMetric(ms(all, 50), "ms-delta-p50")
	b.ReportMetric(ms(all, 99), "ms-delta-p99")
}

// helperPartialTurn reads the helper's stdout until the run's next
// turn_completed, timing each text delta's partial event on arrival.
func helperPartialTurn(b *testing.B, h *helperProc, proxy *deltaProxy) partialTurn {
	b.Helper()
	var t partialTurn
	start := time.Now()
	for {
		line, err := h.out.ReadBytes('\n')
		at := time.Now() // first: decoding the line is the reader's cost
		if err != nil {
			b.Fatalf("helper stdout: %v; stderr:\n%s", err, h.errb.String())
		}
		var ev extension.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			b.Fatalf("helper wrote %q: %v", line, err)
		}
		switch ev.Event {
		case extension.EventPartial:
			if text, ok := deltaText(ev.Payload); ok {
				t.deltas = append(t.deltas, proxy.since(b, text, at))
			}
		case extension.EventTurnCompleted:
			if ev.Result == nil || ev.Result.ExitCode != 0 {
				b.Fatalf("turn %d failed: %+v", ev.Turn, ev.Result)
			}
			t.took = time.Since(start)
			return t
		case extension.EventRunCompleted, extension.EventRunFailed, extension.EventRunCancelled, extension.EventError:
			b.Fatalf("the live run stopped: %s", line)
		}
	}
}

// deltaText is the text of a stream_event line's text_delta.
func deltaText(line []byte) (string, bool) {
	var m struct {
		Event struct {
			Type  string `json:"type"`
			Delta struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"delta"`
		} `json:"event"`
	}
	if json.Unmarshal(line, &m) != nil || m.Event.Type != "content_block_delta" || m.Event.Delta.Type != "text_delta" {
		return "", false
	}
	return m.Event.Delta.Text, true
}

// partialRun is a keep-alive executor run with partial messages whose
// Observer times each text delta against the proxy.
type partialRun struct {
	in    chan executor.Input
	turns chan partialTurn
	done  chan struct{}
	res   *executor.Result
	err   error

	mu  sync.Mutex // the Observer's goroutine fills cur
	cur partialTurn
}

func startPartialRun(b *testing.B, e *executor.Executor, cwd string, proxy *deltaProxy) *partialRun {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	lr := &partialRun{in: make(chan executor.Input, 4), turns: make(chan partialTurn, 4), done: make(chan struct{})}
	obs := executor.ObserverFunc(func(ev executor.Event) {
		switch {
		case ev.Kind == executor.EventLine && ev.Message.StreamEvent != nil:
			if text, ok := deltaText(ev.Line); ok {
				d := proxy.since(b, text, ev.Time)
				lr.mu.Lock()
				lr.cur.deltas = append(lr.cur.deltas, d)
				lr.mu.Unlock()
			}
		case ev.Kind == executor.EventTurnCompleted:
			lr.mu.Lock()
			t := lr.cur
			lr.cur = partialTurn{}
			lr.mu.Unlock()
			lr.turns <- t // one turn at a time: there is room
		}
	})
	go func() {
		defer close(lr.done)
		lr.res, lr.err = e.Run(ctx, executor.Request{
			RunOptions: executor.RunOptions{
				Cwd:             cwd,
				MaxTurns:        6,
				KeepAlive:       true,
				PartialMessages: true,
			},
			Prompt: "start",
			Inputs: lr.in,
		}, obs, nil)
	}()
	b.Cleanup(func() {
		cancel()
		<-lr.done
	})
	return lr
}

func (lr *partialRun) waitTurn(b *testing.B) partialTurn {
	b.Helper()
	select {
	case t := <-lr.turns:
		return t
	case <-lr.done:
		b.Fatalf("the live run ended: %+v, %v", lr.res, lr.err)
	case <-time.After(2 * time.Minute):
		b.Fatal("no turn completed in 2 minutes")
	}
	return partialTurn{}
}

func (lr *partialRun) turn(b *testing.B, text string) partialTurn {
	b.Helper()
	content, _ := json.Marshal(text)
	start := time.Now()
	lr.in <- executor.Input{Kind: executor.InputSend, Content: content}
	t := lr.waitTurn(b)
	t.took = time.Since(start)
	return t
}

func (lr *partialRun) end(b *testing.B) {
	b.Helper()
	lr.in <- executor.Input{Kind: executor.InputEnd}
	select {
	case <-lr.done:
	case <-time.After(time.Minute):
		b.Fatal("the live run did not end within a minute of InputEnd")
	}
	if lr.err != nil || lr.res.Status != executor.StatusCompleted {
		b.Fatalf("live run: %+v, %v", lr.res, lr.err)
	}
}

// deltaProxy stands between the CLI and the scripted API and notes when
// each text delta of a streamed reply left for the CLI.
type deltaProxy struct {
	srv  *httptest.Server
	mu   sync.Mutex
	sent map[string]time.Time // by delta text; the latest wins
}

func newDeltaProxy(b *testing.B, target string) *deltaProxy {
	b.Helper()
	u, err := url.Parse(target)
	if err != nil {
		b.Fatal(err)
	}
	p := &deltaProxy{sent: map[string]time.Time{}}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(u) },
		FlushInterval: -1, // every write goes out at once
		ModifyResponse: func(resp *http.Response) error {
			if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				resp.Body = &sseStamper{ReadCloser: resp.Body, p: p}
			}
			return nil
		},
	}
	p.srv = httptest.NewServer(rp)
	b.Cleanup(p.srv.Close)
	return p
}

func (p *deltaProxy) url() string { return p.srv.URL }

// since is the time from text's delta leaving the proxy to at.
func (p *deltaProxy) since(b *testing.B, text string, at time.Time) time.Duration {
	p.mu.Lock()
	sent, ok := p.sent[text]
	p.mu.Unlock()
	if !ok {
		b.Errorf("a delta %q reached the reader but never passed the proxy", text)
	}
	return at.Sub(sent)
}

// sseStamper reads a streamed reply for the proxy, which writes what it
// read to the CLI at once: a delta's read time is when it left.
type sseStamper struct {
	io.ReadCloser
	p       *deltaProxy
	pending []byte // an incomplete line
}

var deltaData = []byte(`"type":"content_block_delta"`)

func (s *sseStamper) Read(buf []byte) (int, error) {
	n, err := s.ReadCloser.Read(buf)
	now := time.Now()
	s.pending = append(s.pending, buf[:n]...)
	for {
		i := bytes.IndexByte(s.pending, '\n')
		if i < 0 {
			break
		}
		line := s.pending[:i]
		if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok && bytes.Contains(data, deltaData) {
			var ev struct {
				Delta struct {
					Text string `json:"text"`
				} `json:"delta"`
			}
			if json.Unmarshal(data, &ev) == nil && ev.Delta.Text != "" {
				s.p.mu.Lock()
				s.p.sent[ev.Delta.Text] = now
				s.p.mu.Unlock()
			}
		}
		s.pending = s.pending[i+1:]
	}
	return n, err
}
