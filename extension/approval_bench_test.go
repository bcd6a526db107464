package extension

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/host"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/testkit/fakecli"
)

// BenchmarkApprovalRoundTrip is issue 13's approval latency, in two legs
// per tool call, each reported as p50 and p99 in µs:
//
//   - req: from the fake CLI writing its can_use_tool control_request to
//     the bench reading the approval_requested event off the helper's
//     stdout;
//   - ans: from the bench writing the approve command to the helper's stdin
//     to the fake CLI reading the control_response off its stdin.
//
// "helper" is the whole path: an in-process Server over OS pipes, the real
// executor, and the fake CLI in ModeApprovals asking b.N times in a row.
// "baseline" is the same fake read and answered by the bench directly: the
// bare cost of the two pipe crossings. ns/op is one whole cycle per
// approval: the timer runs from reading the first request to writing the
// last answer, so neither process start nor exit counts.
//
// The two processes' stamps are both CLOCK_REALTIME (UnixNano), so their
// differences hold at µs resolution on one machine. The spool is a
// discarding fake: the forwarder's own benchmarks measure it.
func BenchmarkApprovalRoundTrip(b *testing.B) {
	b.Run("baseline", benchApprovalsDirect)
	b.Run("helper", benchApprovalsHelper)
}

// benchApprovalsHelper answers b.N approvals through the extension
// protocol.
func benchApprovalsHelper(b *testing.B) {
	b.StopTimer()
	samples := filepath.Join(b.TempDir(), "samples")
	path, env := fakecli.Command(fakecli.ModeApprovals, fakecli.WithApprovals(b.N), fakecli.WithSampleFile(samples))
	s := testSetup(executor.New(executor.Options{CLIPath: path, BaseEnv: append(os.Environ(), env...)}), discardForwarder{})
	s.Version, s.CLIPath, s.Core.DefaultCwd = "bench", path, b.TempDir()
	srv := s.server()
	h := startPipeServer(b, srv)
	h.expectEvent(b, EventReady)
	h.writeLine(b, fmt.Appendf(nil, `{"action":"prompt","request_id":"bench","run_id":"bench","prompt":"approve %d calls","options":{"approvals":true}}`, b.N))

	var lat legs
	for {
		line, at := h.next(b)
		var ev struct {
			Event      string `json:"event"`
			RunID      string `json:"run_id"`
			ApprovalID string `json:"approval_id"`
			Input      struct {
				T int64 `json:"t"`
			} `json:"input"`
			Code    string  `json:"code"`
			Message string  `json:"message"`
			Result  *Result `json:"result"`
			Reason  string  `json:"reason"`
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			b.Fatalf("helper stdout line is not an event: %v: %.200q", err, line)
		}
		switch ev.Event {
		case EventApprovalRequested:
			if len(lat.req) == 0 {
				b.StartTimer()
			}
			lat.req = append(lat.req, at.Sub(time.Unix(0, ev.Input.T)))
			// updated_input is the whole tool input; t0 goes last so the
			// stamp is appended right before the write.
			prefix := fmt.Appendf(nil, `{"action":"approve","run_id":%q,"approval_id":%q,"decision":"allow","updated_input":{"command":%q,%q:`,
				ev.RunID, ev.ApprovalID, fakecli.ApprovalCommand, fakecli.AnswerStampField)
			h.writeLine(b, append(strconv.AppendInt(prefix, time.Now().UnixNano(), 10), "}}"...))
			if len(lat.req) == b.N {
				b.StopTimer()
			}
		case EventRunCompleted:
			if want := fmt.Sprintf("Asked %d times: %d allowed, 0 denied.", b.N, b.N); ev.Result == nil || ev.Result.Stdout != want {
				b.Fatalf("run_completed says %+v, want the fake's %q", ev.Result, want)
			}
			h.shutdown(b)
			lat.readAnswers(b, samples)
			lat.report(b)
			return
		case EventRunFailed, EventRunCancelled, EventError, EventShutdown:
			b.Fatalf("helper reported %s (%s%s%s) after %d approvals; stdout line: %.300s",
				ev.Event, ev.Code, ev.Message, ev.Reason, len(lat.req), line)
		}
	}
}

// benchApprovalsDirect answers b.N approvals on the fake CLI's own stdio.
func benchApprovalsDirect(b *testing.B) {
	b.StopTimer()
	samples := filepath.Join(b.TempDir(), "samples")
	path, env := fakecli.Command(fakecli.ModeApprovals, fakecli.WithApprovals(b.N), fakecli.WithSampleFile(samples))
	cmd := exec.CommandContext(b.Context(), path, "-p", "--output-format", "stream-json", "--input-format", "stream-json", "--verbose")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("starting the fake CLI %s: %v", path, err)
	}
	// Kill and reap it if the bench fails early; after a clean Wait both
	// are no-ops.
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	write := func(line []byte) {
		if _, err := stdin.Write(append(line, '\n')); err != nil {
			b.Fatalf("writing to the fake CLI's stdin: %v", err)
		}
	}
	write([]byte(`{"type":"control_request","request_id":"init","request":{"subtype":"initialize","hooks":{}}}`))
	write(streamjson.UserMessage("approve"))

	var lat legs
	r := bufio.NewReaderSize(stdout, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		at := time.Now()
		if err != nil {
			b.Fatalf("the fake CLI's stdout ended after %d approvals without a result: %v", len(lat.req), err)
		}
		var m struct {
			Type      string `json:"type"`
			RequestID string `json:"request_id"`
			Request   struct {
				Input struct {
					T int64 `json:"t"`
				} `json:"input"`
			} `json:"request"`
			Result string `json:"result"`
		}
		if err := json.Unmarshal(line, &m); err != nil {
			b.Fatalf("fake CLI stdout line is not JSON: %v: %.200q", err, line)
		}
		switch m.Type {
		case "control_request":
			if len(lat.req) == 0 {
				b.StartTimer()
			}
			lat.req = append(lat.req, at.Sub(time.Unix(0, m.Request.Input.T)))
			prefix := fmt.Appendf(nil, `{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":{"behavior":"allow","updatedInput":{"command":%q,%q:`,
				m.RequestID, fakecli.ApprovalCommand, fakecli.AnswerStampField)
			write(append(strconv.AppendInt(prefix, time.Now().UnixNano(), 10), "}}}}"...))
			if len(lat.req) == b.N {
				b.StopTimer()
			}
		case "result":
			if want := fmt.Sprintf("Asked %d times: %d allowed, 0 denied.", b.N, b.N); m.Result != want {
				b.Fatalf("the fake's result says %q, want %q", m.Result, want)
			}
			stdin.Close()
			if _, err := io.Copy(io.Discard, r); err != nil {
				b.Fatalf("draining the fake CLI's stdout: %v", err)
			}
			if err := cmd.Wait(); err != nil {
				b.Fatalf("the fake CLI exited with %v", err)
			}
			lat.readAnswers(b, samples)
			lat.report(b)
			return
		}
	}
}

// legs holds one benchmark's samples of both legs.
type legs struct {
	req, ans []time.Duration
}

// readAnswers loads the fake's answer-leg samples, one per approval.
func (l *legs) readAnswers(b *testing.B, path string) {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatalf("reading the fake CLI's answer samples: %v", err)
	}
	for _, f := range strings.Fields(string(data)) {
		ns, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			b.Fatalf("answer sample %q in %s is not a number of nanoseconds", f, path)
		}
		l.ans = append(l.ans, time.Duration(ns))
	}
	if len(l.req) != b.N || len(l.ans) != b.N {
		b.Fatalf("%d request and %d answer samples for %d approvals: some approval was not stamped", len(l.req), len(l.ans), b.N)
	}
}

func (l *legs) report(b *testing.B) {
	b.Helper()
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(us(nearestRank(l.req, 50)), "p50-req-µs")
	b.ReportMetric(us(nearestRank(l.req, 99)), "p99-req-µs")
	b.ReportMetric(us(nearestRank(l.ans, 50)), "p50-ans-µs")
	b.ReportMetric(us(nearestRank(l.ans, 99)), "p99-ans-µs")
}

// nearestRank is the p-th percentile of ds by the nearest-rank method; it
// sorts ds.
func nearestRank(ds []time.Duration, p int) time.Duration {
	slices.Sort(ds)
	i := (p*len(ds)+99)/100 - 1
	return ds[max(i, 0)]
}

// pipeServer is a Server serving over OS pipes, as the helper process does
// on its stdin and stdout.
type pipeServer struct {
	in   *os.File // the Server's stdin, our end
	out  *bufio.Reader
	done chan error
}

func startPipeServer(b *testing.B, srv *Server) *pipeServer {
	b.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	h := &pipeServer{in: inW, out: bufio.NewReaderSize(outR, 64<<10), done: make(chan error, 1)}
	go func() {
		err := srv.Serve(inR, outW, nil)
		outW.Close() // our reader sees EOF once Serve is over
		h.done <- err
	}()
	// Closing our end of stdin makes Serve stop; wait for it so no run
	// outlives the benchmark.
	b.Cleanup(func() {
		inW.Close()
		select {
		case <-h.done:
		case <-time.After(30 * time.Second):
			b.Errorf("the helper did not shut down within 30s of stdin EOF")
		}
		inR.Close()
		outR.Close()
	})
	return h
}

// next returns the helper's next stdout line and when it was read.
func (h *pipeServer) next(b *testing.B) ([]byte, time.Time) {
	b.Helper()
	line, err := h.out.ReadBytes('\n')
	at := time.Now()
	if err != nil {
		b.Fatalf("reading the helper's stdout: %v (partial line %.200q)", err, line)
	}
	return line, at
}

func (h *pipeServer) expectEvent(b *testing.B, name string) {
	b.Helper()
	line, _ := h.next(b)
	var ev Event
	if err := json.Unmarshal(line, &ev); err != nil || ev.Event != name {
		b.Fatalf("want a %s event first, got %.200q (%v)", name, line, err)
	}
}

func (h *pipeServer) writeLine(b *testing.B, line []byte) {
	b.Helper()
	if _, err := h.in.Write(append(line, '\n')); err != nil {
		b.Fatalf("writing a command to the helper: %v", err)
	}
}

// shutdown asks the helper to stop and waits for its shutdown event.
func (h *pipeServer) shutdown(b *testing.B) {
	b.Helper()
	h.writeLine(b, []byte(`{"action":"shutdown"}`))
	for {
		line, _ := h.next(b)
		var ev Event
		if json.Unmarshal(line, &ev) == nil && ev.Event == EventShutdown {
			break
		}
	}
	select {
	case err := <-h.done:
		if err != nil {
			b.Fatalf("Serve: %v", err)
		}
		h.done <- nil // for the cleanup
	case <-time.After(30 * time.Second):
		b.Fatal("Serve did not return within 30s of its shutdown event")
	}
}

// discardForwarder accepts every event and keeps none.
type discardForwarder struct{}

var _ host.Forwarder = discardForwarder{}

func (discardForwarder) OnError(func(forwarder.Error)) {}
func (discardForwarder) Start()                        {}

func (discardForwarder) Enqueue(forwarder.Event) (forwarder.Accepted, error) {
	return forwarder.Accepted{}, nil
}
func (discardForwarder) Stats() forwarder.Stats     { return forwarder.Stats{} }
func (discardForwarder) Stop(context.Context) error { return nil }
