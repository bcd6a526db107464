package executor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
)

// The official TypeScript Agent SDK the agent-sdk variants run, as `make
// deps` installs it: $CLAUDE_RELAY_AGENT_SDK names the package directory.
const (
	sdkVersion = "0.3.330"
	sdkEnv     = "CLAUDE_RELAY_AGENT_SDK"
)

// benchMaxTurns bounds every benchmark turn, as a caller of the relay would.
const benchMaxTurns = 6

// BenchmarkRealTurn is one text turn of the real CLI against the scripted
// API, started and read by: claude alone (baseline, the least a wrapper can
// do), the relay's executor, and the official Agent SDK in node. ns/op is
// the whole turn, from asking for the start to the CLI's exit; ms-to-init
// and ms-to-result are when system/init and the result reached the wrapper;
// MB-rss is the wrapper process's peak RSS (see rssWatch and bench.mjs).
func BenchmarkRealTurn(b *testing.B) {
	benchRealTurn(b, realScript{
		script: mockapi.Script{mockapi.TextTurn("The relay bench says hello.")},
		prompt: "say hello",
		want:   "The relay bench says hello.",
	})
}

// BenchmarkRealBashTurn is BenchmarkRealTurn with a Bash tool call first:
// two model round trips and a tool run.
func BenchmarkRealBashTurn(b *testing.B) {
	benchRealTurn(b, realScript{
		script: mockapi.Script{
			mockapi.ToolTurn("Bash", map[string]any{"command": "echo bench-$((40+2))", "description": "Print a number"}),
			mockapi.TextTurn("The answer is 42."),
		},
		prompt:   "compute",
		want:     "The answer is 42.",
		wantTool: "bench-42",
	})
}

// realScript is a scripted turn and how to tell it ran.
type realScript struct {
	script   mockapi.Script
	prompt   string
	want     string // the result text
	wantTool string // in a successful tool result, when the script calls a tool
}

func benchRealTurn(b *testing.B, s realScript) {
	b.Run("baseline", func(b *testing.B) {
		rb := newRealBench(b, s)
		rb.measure(b, rb.alone)
	})
	b.Run("relay", func(b *testing.B) {
		rb := newRealBench(b, s)
		rb.measure(b, rb.relay(New(Options{CLIPath: rb.cli.Path, BaseEnv: rb.env})))
	})
	b.Run("agent-sdk", func(b *testing.B) {
		rb := newRealBench(b, s)
		rb.measure(b, rb.agentSDK(b))
	})
}

// realBench is what one variant runs its turns with: each variant gets its
// own HOME, server and directory so that none inherits another's sessions.
type realBench struct {
	realScript
	cli *realcli.CLI
	api *mockapi.Server
	cwd string
	env []string // the CLI's whole environment, the same for every variant
}

func newRealBench(b *testing.B, s realScript) *realBench {
	b.Helper()
	cli := realcli.RealCLI(b)
	api := mockapi.New(b, s.script)
	cwd := b.TempDir()
	cli.TrustDir(cwd)
	return &realBench{realScript: s, cli: cli, api: api, cwd: cwd, env: cli.Env(b, api.URL())}
}

// turnTimes is one turn as its wrapper saw it, measured from just before the
// wrapper started its process.
type turnTimes struct {
	ready        time.Duration // agent-sdk: node is up and the SDK imported
	init, result time.Duration // system/init and the result arrived
	text         string        // the result text
	rssMB        float64       // a wrapper in its own process: its peak RSS
}

// turnsPerOp is how many turns one benchmark op runs. A turn takes about
// 0.6 s, so with the default -benchtime Go would stop after two or three
// and a noisy machine would decide the ratios; ns/op, B/op and allocs/op are
// reported per turn all the same.
const turnsPerOp = 8

// measure runs one untimed turn (the first start of the 380 MB CLI, or of
// node and the SDK, reads them from disk), then timed turns. It reports per
// turn the mean time and allocations (of this process: the mock API server
// counts in every variant), the median times to init and to the result, and
// the wrapper's peak RSS.
func (rb *realBench) measure(b *testing.B, turn func(context.Context) (turnTimes, error)) {
	b.Helper()
	run := func() turnTimes {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		t, err := turn(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if t.text != rb.want || t.init <= 0 || t.result < t.init {
			b.Fatalf("turn: result %q after %v (init after %v), want %q", t.text, t.result, t.init, rb.want)
		}
		return t
	}
	run()
	rb.checkTool(b)

	mem := watchRSS()
	defer mem.stop()
	var turns []turnTimes
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		for range turnsPerOp {
			turns = append(turns, run())
		}
	}
	runtime.ReadMemStats(&after)
	self := mem.stop()

	n := float64(len(turns))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/op")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/op")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/op")
	median := func(f func(turnTimes) time.Duration) float64 {
		ds := make([]time.Duration, len(turns))
		for i, t := range turns {
			ds[i] = f(t)
		}
		slices.Sort(ds)
		return float64(ds[len(ds)/2]) / float64(time.Millisecond)
	}
	if turns[0].ready > 0 {
		b.ReportMetric(median(func(t turnTimes) time.Duration { return t.ready }), "ms-sdk-ready")
	}
	b.ReportMetric(median(func(t turnTimes) time.Duration { return t.init }), "ms-to-init")
	b.ReportMetric(median(func(t turnTimes) time.Duration { return t.result }), "ms-to-result")
	var childRSS float64
	for _, t := range turns {
		childRSS = max(childRSS, t.rssMB)
	}
	switch {
	case childRSS > 0:
		b.ReportMetric(childRSS, "MB-rss")
	case self > 0:
		b.ReportMetric(self, "MB-rss")
	}
}

// checkTool fails unless the script's tool ran and succeeded.
func (rb *realBench) checkTool(b *testing.B) {
	b.Helper()
	if rb.wantTool == "" {
		return
	}
	for _, tr := range rb.api.ToolResults() {
		if !tr.IsError && strings.Contains(tr.Content, rb.wantTool) {
			return
		}
	}
	b.Fatalf("no successful tool result with %q: %+v", rb.wantTool, rb.api.ToolResults())
}

// alone is claude with no wrapper to speak of: the relay's flags and stdin
// lines, a stdout loop that decodes only type and subtype, an allow for any
// permission prompt, and stdin closed at the result.
func (rb *realBench) alone(ctx context.Context) (turnTimes, error) {
	var t turnTimes
	in, err := aloneInput(rb.prompt)
	if err != nil {
		return t, err
	}
	args := append(slices.Clone(protocolArgs), "--max-turns="+strconv.Itoa(benchMaxTurns))
	cmd := exec.CommandContext(ctx, rb.cli.Path, args...)
	cmd.Env, cmd.Dir, cmd.WaitDelay = rb.env, rb.cwd, 5*time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return t, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return t, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return t, err
	}
	if _, err := stdin.Write(in); err != nil {
		return t, errors.Join(err, cmd.Wait())
	}
	r := bufio.NewReaderSize(stdout, 64<<10)
	for {
		line, rerr := r.ReadBytes('\n')
		var m struct {
			Type      string `json:"type"`
			Subtype   string `json:"subtype"`
			Result    string `json:"result"`
			RequestID string `json:"request_id"`
			Request   struct {
				Subtype string          `json:"subtype"`
				Input   json.RawMessage `json:"input"`
			} `json:"request"`
		}
		if len(line) > 0 && json.Unmarshal(line, &m) == nil {
			switch {
			case m.Type == "system" && m.Subtype == streamjson.SystemInit:
				t.init = time.Since(start)
			case m.Type == "control_request" && m.Request.Subtype == streamjson.SubtypeCanUseTool:
				resp, err := streamjson.ControlResponseSuccess(m.RequestID, map[string]any{"behavior": "allow", "updatedInput": m.Request.Input})
				if err == nil {
					_, err = stdin.Write(append(resp, '\n'))
				}
				if err != nil {
					return t, errors.Join(fmt.Errorf("answer can_use_tool: %w", err), cmd.Wait())
				}
			case m.Type == "result":
				t.result, t.text = time.Since(start), m.Result
				stdin.Close()
			}
		}
		if rerr != nil {
			break
		}
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil || t.result == 0 {
		return t, fmt.Errorf("claude alone: exit %v, result seen %v; stderr: %s", err, t.result > 0, stderr.Bytes())
	}
	return t, nil
}

// aloneInput is what the executor writes at start: initialize (no hooks
// without approvals), the permission mode and the prompt.
func aloneInput(prompt string) ([]byte, error) {
	var in bytes.Buffer
	for _, req := range []any{
		streamjson.InitializeRequest{},
		streamjson.SetPermissionModeRequest{Mode: streamjson.PermissionModeDefault},
	} {
		line, err := streamjson.ControlRequest{RequestID: uuid.NewString(), Request: req}.Encode()
		if err != nil {
			return nil, err
		}
		in.Write(line)
		in.WriteByte('\n')
	}
	in.Write(streamjson.UserMessage(prompt))
	in.WriteByte('\n')
	return in.Bytes(), nil
}

// relay runs the turn through e, timing the events as the Observer gets them.
func (rb *realBench) relay(e *Executor) func(context.Context) (turnTimes, error) {
	return func(ctx context.Context) (turnTimes, error) {
		var t turnTimes
		start := time.Now()
		// Only the stdout reader reports lines, and Run waits for it: no lock.
		obs := ObserverFunc(func(ev Event) {
			switch {
			case ev.Kind != EventLine:
			case ev.Message.System != nil && ev.Message.Subtype == streamjson.SystemInit:
				t.init = ev.Time.Sub(start)
			case ev.Message.Result != nil:
				t.result = ev.Time.Sub(start)
			}
		})
		res, err := e.Run(ctx, Request{RunOptions: RunOptions{Cwd: rb.cwd, MaxTurns: benchMaxTurns}, Prompt: rb.prompt}, obs, nil)
		if err != nil {
			return t, fmt.Errorf("relay run: %w; stderr: %s", err, res.StderrTail)
		}
		t.text = res.Stdout
		return t, nil
	}
}

// agentSDK runs the turn with testdata/sdkbench/bench.mjs in node, skipping
// when node or the SDK is not installed.
func (rb *realBench) agentSDK(b *testing.B) func(context.Context) (turnTimes, error) {
	b.Helper()
	dir := sdkDir()
	pkg, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		b.Skipf("Agent SDK %s not installed at %s (%v); run `make deps`, or set $%s to its package directory", sdkVersion, dir, err, sdkEnv)
	}
	var meta struct{ Version string }
	_ = json.Unmarshal(pkg, &meta) // a bad file shows as the wrong version
	if meta.Version != sdkVersion {
		b.Logf("Agent SDK at %s is %q, not the pinned %s", dir, meta.Version, sdkVersion)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		b.Skipf("node not found (%v); the agent-sdk variant needs node 18.14 or newer", err)
	}
	script, err := filepath.Abs(filepath.Join("..", "testdata", "sdkbench", "bench.mjs"))
	if err != nil {
		b.Fatal(err)
	}
	env := append(slices.Clone(rb.env),
		"SDKBENCH_SDK="+dir, "SDKBENCH_CLI="+rb.cli.Path, "SDKBENCH_CWD="+rb.cwd,
		"SDKBENCH_PROMPT="+rb.prompt, "SDKBENCH_MAX_TURNS="+strconv.Itoa(benchMaxTurns))
	return func(ctx context.Context) (turnTimes, error) {
		t, _, err := runSDKScript(ctx, node, script, rb.cwd, env, readSDKBench, func(t turnTimes) bool { return t.result > 0 })
		return t, err
	}
}

// milestone is one line an Agent SDK script prints
// (testdata/sdkbench/common.mjs).
type milestone struct {
	Event   string  `json:"event"`
	Result  string  `json:"result"`
	RSS     float64 `json:"rss_mb"`
	HWM     float64 `json:"hwm_mb"`
	Message string  `json:"message"`
}

// readMilestones hands each milestone to on with the time it arrived, until
// stdout ends, and returns the script's error milestone or a read error.
func readMilestones(stdout io.Reader, start time.Time, on func(m milestone, at time.Duration)) (failure string) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m milestone
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		if m.Event == "error" {
			failure = m.Message
			continue
		}
		on(m, time.Since(start))
	}
	if err := sc.Err(); err != nil && failure == "" {
		failure = "read the script's output: " + err.Error()
	}
	io.Copy(io.Discard, stdout) //nolint:errcheck // drain, so the script never blocks on a full pipe
	return failure
}

// readSDKBench reads bench.mjs's milestones, timing each on arrival.
func readSDKBench(stdout io.Reader, start time.Time) (t turnTimes, failure string) {
	failure = readMilestones(stdout, start, func(m milestone, at time.Duration) {
		switch m.Event {
		case "ready":
			t.ready = at
		case "init":
			t.init = at
		case "result":
			t.result, t.text = at, m.Result
		case "done":
			t.rssMB = max(m.RSS, m.HWM)
		}
	})
	return t, failure
}

// sdkDir is $CLAUDE_RELAY_AGENT_SDK, else where `make deps` installs the SDK.
func sdkDir() string {
	if d := os.Getenv(sdkEnv); d != "" {
		return d
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "claude-relay", "agent-sdk-"+sdkVersion, "node_modules", "@anthropic-ai", "claude-agent-sdk")
}

// rssWatch follows this process's resident set while a variant runs: peak
// RSS is what the Go wrapper (and, in this test binary, the mock API server
// and the testing package) held, so compare the relay with the baseline.
type rssWatch struct {
	stopc, done chan struct{}
	once        sync.Once
	hwmReset    bool
	peak        float64 // MB
}

func watchRSS() *rssWatch {
	debug.FreeOSMemory() // what earlier benchmarks left in the heap is not this variant's
	w := &rssWatch{stopc: make(chan struct{}), done: make(chan struct{}), peak: procStatusMB("VmRSS")}
	// Writing 5 resets VmHWM (Linux 4.0+), which then catches peaks between
	// samples; sampling alone is the fallback.
	w.hwmReset = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	go func() {
		defer close(w.done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-w.stopc:
				return
			case <-tick.C:
				w.peak = max(w.peak, procStatusMB("VmRSS"))
			}
		}
	}()
	return w
}

// stop ends the sampling and returns the peak RSS in MB; it is idempotent.
func (w *rssWatch) stop() float64 {
	w.once.Do(func() {
		close(w.stopc)
		<-w.done
		if w.hwmReset {
			w.peak = max(w.peak, procStatusMB("VmHWM"))
		}
	})
	return w.peak
}

// procStatusMB reads a kB field of /proc/self/status in MB; 0 when absent.
func procStatusMB(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			if err != nil {
				return 0
			}
			return kb / 1024
		}
	}
	return 0
}

// runSDKScript runs one of the Agent SDK bench scripts under node and reads
// its milestone lines with read, timed from the start; done says whether
// what it read is complete. It returns what was read and the wall time.
func runSDKScript[T any](ctx context.Context, node, script, cwd string, env []string,
	read func(io.Reader, time.Time) (T, string), done func(T) bool) (T, time.Duration, error) {
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Env, cmd.Dir, cmd.WaitDelay = env, cwd, 5*time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	var zero T
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return zero, 0, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return zero, 0, err
	}
	t, failure := read(stdout, start)
	err = cmd.Wait()
	wall := time.Since(start)
	if err != nil || failure != "" || !done(t) {
		return t, wall, fmt.Errorf("agent-sdk %s: exit %v, complete %v: %s; stderr: %s", filepath.Base(script), err, done(t), failure, stderr.Bytes())
	}
	return t, wall, nil
}
