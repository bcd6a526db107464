package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/extension"
	"github.com/claude-relay/claude-relay/internal/server/backend"
	"github.com/claude-relay/claude-relay/internal/server/backend/memstore"
	"github.com/claude-relay/claude-relay/internal/testkit/fakecli"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
)

// The helper benchmarks measure a real claude-relay binary, built once per
// benchmark from this module, not the test binary.

// buildRelay builds cmd/claude-relay, with cmd/claude-relay-server beside
// it (as make build puts them: the embedded default runs in it), and
// returns claude-relay's path.
func buildRelay(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/claude-relay", "./cmd/claude-relay-server")
	cmd.Dir = filepath.Join("..", "..") // the module root
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, msg)
	}
	return filepath.Join(dir, "claude-relay")
}

// agentSDKEntry returns the official Agent SDK's ES module entry, or "".
func agentSDKEntry() string {
	dir := os.Getenv("CLAUDE_RELAY_AGENT_SDK")
	if dir == "" {
		dir = "/root/.cache/claude-relay/agent-sdk-0.3.330/node_modules/@anthropic-ai/claude-agent-sdk"
	}
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return ""
	}
	var pkg struct {
		Main    string `json:"main"`
		Exports map[string]json.RawMessage
	}
	if json.Unmarshal(b, &pkg) != nil {
		return ""
	}
	entry := pkg.Main
	var dot struct {
		Default string `json:"default"`
		Import  string `json:"import"`
	}
	if json.Unmarshal(pkg.Exports["."], &dot) == nil {
		entry = cmpOr(dot.Import, dot.Default, entry)
	}
	p := filepath.Join(dir, entry)
	if _, err := os.Stat(p); err != nil || entry == "" {
		return ""
	}
	return p
}

func cmpOr(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// procStatus reads a kB figure (VmRSS, VmHWM) of /proc/<pid>/status in MB.
func procStatus(pid int, field string) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, field+":"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// clockTick is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every
// Linux this runs on.
const clockTick = 100

// procCPU returns the process's own user+system CPU (not its children's).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command: state is field 3; utime and
	// stime are fields 14 and 15.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * time.Second / clockTick
}

// helperProc is one started helper (or baseline) with a line reader.
type helperProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	errb  *syncBuffer
}

func startHelperProc(b *testing.B, env []string, name string, args ...string) *helperProc {
	b.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = env
	cmd.Dir = b.TempDir()
	h := &helperProc{cmd: cmd, errb: &syncBuffer{}}
	cmd.Stderr = h.errb
	var err error
	if h.stdin, err = cmd.StdinPipe(); err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	h.out = bufio.NewReaderSize(stdout, 64<<10)
	return h
}

// next returns the next event on stdout.
func (h *helperProc) next(b *testing.B) extension.Event {
	b.Helper()
	line, err := h.out.ReadBytes('\n')
	if err != nil {
		b.Fatalf("helper stdout: %v; stderr:\n%s", err, h.errb.String())
	}
	var ev extension.Event
	if err := json.Unmarshal(line, &ev); err != nil {
		b.Fatalf("helper wrote %q: %v", line, err)
	}
	return ev
}

func (h *helperProc) until(b *testing.B, name string) extension.Event {
	b.Helper()
	for {
		if ev := h.next(b); ev.Event == name {
			return ev
		}
	}
}

func (h *helperProc) send(b *testing.B, c extension.Command) {
	b.Helper()
	line, _ := json.Marshal(c)
	if _, err := h.stdin.Write(append(line, '\n')); err != nil {
		b.Fatal(err)
	}
}

// stop closes stdin (EOF shuts the helper down) and waits for the exit.
func (h *helperProc) stop(b *testing.B) {
	b.Helper()
	h.stdin.Close()
	io.Copy(io.Discard, h.out) //nolint:errcheck // drain to the end
	if err := h.cmd.Wait(); err != nil {
		b.Fatalf("helper exit: %v; stderr:\n%s", err, h.errb.String())
	}
}

// BenchmarkHelper is the editor's wait for its helper: process start to the
// first ready line. relay is claude-relay extension with a configured
// backend and the pinned CLI (when installed; its --version probe is part
// of the start); relay-embedded starts the embedded default backend
// (SQLite) as well; baseline is node loading the official Agent SDK, the
// least a TypeScript helper must do. MB-rss-idle is VmRSS just after ready;
// MB-rss-children that of the processes it started, which is the embedded
// default's claude-relay-server in relay-embedded.
func BenchmarkHelper(b *testing.B) {
	bin := buildRelay(b)
	backendURL, _ := fastBackend(b, "bench-token")
	cliPath, _ := realcli.DefaultPath()
	if _, err := os.Stat(cliPath); err != nil {
		cliPath = "" // discovery then reports none found; still a ready event
	}
	relayEnv := func(home string, extra ...string) []string {
		env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "CLAUDE_RELAY_CLAUDE_PATH=" + cliPath}
		return append(env, extra...)
	}
	b.Run("relay", func(b *testing.B) {
		home := b.TempDir()
		env := relayEnv(home, "CLAUDE_RELAY_BACKEND_URL="+backendURL, "CLAUDE_RELAY_BACKEND_TOKEN=bench-token")
		benchReady(b, func() *helperProc { return startHelperProc(b, env, bin, "extension") })
	})
	b.Run("relay-embedded", func(b *testing.B) {
		home := b.TempDir()
		benchReady(b, func() *helperProc { return startHelperProc(b, relayEnv(home), bin, "extension") })
	})
	b.Run("baseline", func(b *testing.B) {
		entry := agentSDKEntry()
		node, err := exec.LookPath("node")
		if entry == "" || err != nil {
			b.Skip("the Agent SDK (CLAUDE_RELAY_AGENT_SDK, make deps) or node is missing")
		}
		script := fmt.Sprintf(`await import(%q); console.log(JSON.stringify({event: "ready", timestamp: new Date().toISOString()}));
process.stdin.resume(); process.stdin.on("end", () => process.exit(0));`, "file://"+entry)
		env := []string{"HOME=" + b.TempDir(), "PATH=" + os.Getenv("PATH")}
		benchReady(b, func() *helperProc { return startHelperProc(b, env, node, "--input-type=module", "-e", script) })
	})
}

func benchReady(b *testing.B, start func() *helperProc) {
	var ready time.Duration
	var rss, children float64
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		h := start()
		h.until(b, extension.EventReady)
		ready += time.Since(t0)
		b.StopTimer()
		time.Sleep(50 * time.Millisecond) // let start-up work settle
		pid := h.cmd.Process.Pid
		rss += procStatus(pid, "VmRSS")
		for _, c := range procChildren(pid) {
			children += procStatus(c, "VmRSS")
		}
		h.stop(b)
		b.StartTimer()
	}
	b.ReportMetric(float64(ready.Microseconds())/1000/float64(b.N), "ms-to-ready")
	b.ReportMetric(rss/float64(b.N), "MB-rss-idle")
	b.ReportMetric(children/float64(b.N), "MB-rss-children")
}

// procChildren lists pid's child processes (/proc/<pid>/task/*/children).
func procChildren(pid int) []int {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, w := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(w); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// fastBackend is the reference backend on an in-memory store: as fast a
// receiver as there is, so the figures are the helper's.
func fastBackend(b *testing.B, token string) (string, *memstore.Store) {
	b.Helper()
	st := memstore.New()
	be := backend.New(backend.Options{Store: st, Tokens: func() []config.Secret { return []config.Secret{config.Secret(token)} }})
	srv := httptest.NewServer(be.Handler())
	b.Cleanup(func() {
		srv.Close()
		be.Shutdown(context.Background()) //nolint:errcheck
		st.Close()
	})
	return srv.URL, st
}

// floodLines is how many stream lines the fake CLI writes in one run.
const floodLines = 20000

// fakeCLIScript writes a shell script that answers --version like the real
// CLI and otherwise runs the fake CLI (this test binary) in flood mode.
func fakeCLIScript(b *testing.B) string {
	b.Helper()
	path, env := fakecli.Command(fakecli.ModeFlood, fakecli.WithFloodLines(floodLines), fakecli.WithFloodAssistant())
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	var envArgs []string
	for _, kv := range env {
		envArgs = append(envArgs, q(kv))
	}
	script := fmt.Sprintf("#!/bin/sh\nif [ \"$1\" = --version ]; then echo '%s (Claude Code)'; exit 0; fi\nexec env %s %s \"$@\"\n",
		fakecli.Version, strings.Join(envArgs, " "), q(path))
	p := filepath.Join(b.TempDir(), "claude")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkHelperRun is one run through the helper whose CLI floods 20,000
// stream lines, each spooled, written to stdout and delivered to a fast
// backend. ns/op is prompt to everything delivered; µs-cpu/event is the
// helper process's own CPU (utime+stime, /proc/<pid>/stat) over that span
// per forwarded event; MB-hwm is the helper's peak RSS (VmHWM).
func BenchmarkHelperRun(b *testing.B) {
	bin := buildRelay(b)
	fake := fakeCLIScript(b)
	b.Run("relay", func(b *testing.B) {
		const token = "bench-token"
		url, st := fastBackend(b, token)
		env := []string{"HOME=" + b.TempDir(), "PATH=" + os.Getenv("PATH"), "CLAUDE_RELAY_CLAUDE_PATH=" + fake,
			"CLAUDE_RELAY_BACKEND_URL=" + url, "CLAUDE_RELAY_BACKEND_TOKEN=" + token}
		var cpu time.Duration
		var events int64
		var hwm float64
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			b.StopTimer()
			h := startHelperProc(b, env, bin, "extension")
			h.until(b, extension.EventReady)
			pid := h.cmd.Process.Pid
			cpu0 := procCPU(pid)
			session := fmt.Sprintf("flood-%d", i)
			prompt := "flood"
			b.StartTimer()
			h.send(b, extension.Command{Action: extension.ActionPrompt, RunID: session, SessionID: session, Prompt: &prompt})
			var streams int
			for {
				ev := h.next(b)
				if ev.Event == extension.EventStream {
					streams++
				}
				if ev.Event == extension.EventRunCompleted || ev.Event == extension.EventRunFailed {
					if ev.Event != extension.EventRunCompleted {
						b.Fatalf("run failed: %+v %s", ev.Result, ev.Reason)
					}
					break
				}
			}
			// Wait until the forwarder has delivered everything.
			for {
				h.send(b, extension.Command{Action: extension.ActionStatus, RequestID: "s"})
				status := h.until(b, extension.EventStatus)
				if status.Forwarder.Pending == 0 && status.Forwarder.InFlight == 0 {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			b.StopTimer()
			cpu += procCPU(pid) - cpu0
			hwm = max(hwm, procStatus(pid, "VmHWM"))
			sess, err := st.Session(b.Context(), session)
			if err != nil {
				b.Fatal(err)
			}
			if streams < floodLines || sess.EventCount < int64(streams) {
				b.Fatalf("%d stream events, %d at the backend", streams, sess.EventCount)
			}
			events += sess.EventCount
			h.stop(b)
			b.StartTimer()
		}
		b.ReportMetric(float64(cpu.Microseconds())/float64(events), "µs-cpu/event")
		b.ReportMetric(hwm, "MB-hwm")
		b.ReportMetric(float64(events)/float64(b.N), "events/op")
	})
}
