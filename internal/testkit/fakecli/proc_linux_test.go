package fakecli_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/testkit/fakecli"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
	"github.com/claude-relay/claude-relay/internal/testkit/syncbuf"
)

// patience bounds every wait so a broken fake fails the test instead of
// hanging it; it is a safety net, not a timing assertion.
const patience = 20 * time.Second

// proc is a running fake CLI with its stdout split into lines.
type proc struct {
	t       *testing.T
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan []byte // closed at stdout EOF
	stderr  *syncBuffer
	pidFile string

	waitOnce sync.Once
	waitErr  error
}

// start spawns the fake in mode with CLI-like arguments plus args, and
// registers a cleanup that kills everything it left behind.
func start(t *testing.T, mode fakecli.Mode, opts []fakecli.Option, args ...string) *proc {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pids")
	path, env := fakecli.Command(mode, append(opts, fakecli.WithPidFile(pidFile))...)
	args = append([]string{"-p", "--output-format", "stream-json", "--input-format", "stream-json", "--verbose"}, args...)
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &proc{t: t, cmd: cmd, lines: make(chan []byte, 64), stderr: &syncBuffer{}, pidFile: pidFile}
	cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting fake CLI: %v", err)
	}
	go func() {
		defer close(p.lines)
		r := bufio.NewReaderSize(stdout, 64<<10)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				p.lines <- bytes.TrimSuffix(line, []byte("\n"))
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(p.kill)
	return p
}

// kill removes the fake and every process in its pid file, leaf first so
// each parent reaps its child, then drains stdout and reaps the fake.
func (p *proc) kill() {
	pids := readPids(p.pidFile)
	for i := len(pids) - 1; i >= 0; i-- {
		if pid := pids[i]; pid != p.cmd.Process.Pid && isTestBinary(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			waitGone(p.t, pid)
		}
	}
	_ = p.cmd.Process.Kill()
	for range p.lines {
	}
	p.wait()
}

// wait reaps the fake; safe to call more than once.
func (p *proc) wait() error {
	p.waitOnce.Do(func() { p.waitErr = p.cmd.Wait() })
	return p.waitErr
}

func (p *proc) send(v any) {
	p.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		p.t.Fatal(err)
	}
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.t.Fatalf("writing to the fake's stdin: %v", err)
	}
}

func (p *proc) sendUser(text string) {
	p.t.Helper()
	p.send(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}})
}

func (p *proc) sendControl(id string, req map[string]any) {
	p.t.Helper()
	p.send(map[string]any{"type": "control_request", "request_id": id, "request": req})
}

func (p *proc) sendControlResponse(id string, body any) {
	p.t.Helper()
	p.send(map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "success", "request_id": id, "response": body,
	}})
}

// nextRaw returns the next stdout line; ok is false at EOF.
func (p *proc) nextRaw() (line []byte, ok bool) {
	p.t.Helper()
	select {
	case line, ok = <-p.lines:
		return line, ok
	case <-time.After(patience):
		p.t.Fatalf("no stdout line from the fake within %v; stderr: %q", patience, p.stderr.String())
		return nil, false
	}
}

// next returns the next stdout line decoded; it fails the test at EOF.
func (p *proc) next() msg {
	p.t.Helper()
	line, ok := p.nextRaw()
	if !ok {
		p.t.Fatalf("fake's stdout ended early; stderr: %q", p.stderr.String())
	}
	var m msg
	if err := json.Unmarshal(line, &m); err != nil {
		p.t.Fatalf("stdout line is not JSON: %v: %.200q", err, line)
	}
	return m
}

// expect returns the next line and checks its type.
func (p *proc) expect(typ string) msg {
	p.t.Helper()
	m := p.next()
	if m.str("type") != typ {
		p.t.Fatalf("got a %q line, want %q: %v", m.str("type"), typ, m)
	}
	return m
}

// expectEOF checks that stdout ends and the fake exits with code.
func (p *proc) expectEOF(code int) {
	p.t.Helper()
	if line, ok := p.nextRaw(); ok {
		p.t.Fatalf("want stdout EOF, got %.200q", line)
	}
	err := p.wait()
	var exit *exec.ExitError
	switch {
	case code == 0 && err != nil:
		p.t.Fatalf("fake exited with %v, want status 0; stderr: %q", err, p.stderr.String())
	case code != 0 && (!errors.As(err, &exit) || exit.ExitCode() != code):
		p.t.Fatalf("fake exited with %v, want status %d", err, code)
	}
}

// msg is a decoded stdout line with lookups for nested keys.
type msg map[string]any

// get follows a path of keys and array indexes; nil if absent.
func (m msg) get(path ...any) any {
	var v any = map[string]any(m)
	for _, k := range path {
		switch k := k.(type) {
		case string:
			o, _ := v.(map[string]any)
			v = o[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func (m msg) str(path ...any) string { s, _ := m.get(path...).(string); return s }

func (m msg) num(path ...any) float64 { n, _ := m.get(path...).(float64); return n }

type syncBuffer = syncbuf.Buffer

// readPids returns the pids in a pid file, or nil if there is none yet.
func readPids(path string) []int {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitPids polls the pid file until it lists n pids.
func waitPids(t *testing.T, path string, n int) []int {
	t.Helper()
	return poll.Value(t, patience, fmt.Sprintf("pid file %s to list %d pids", path, n), func() ([]int, bool) {
		pids := readPids(path)
		return pids, len(pids) >= n
	})
}

// procStat returns the fields of /proc/PID/stat after the command name
// (state first), or nil if the process is gone.
func procStat(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(b, ')') // the command name may hold spaces
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

// alive reports whether pid runs. Zombies count as dead: pid 1 on the test
// machines never reaps orphans, so a killed orphan stays a zombie forever.
func alive(pid int) bool {
	st := procStat(pid)
	return st != nil && st[0] != "Z" && st[0] != "X"
}

// sessionOf returns the session id of pid (field 6 of /proc/PID/stat).
func sessionOf(t *testing.T, pid int) int {
	t.Helper()
	st := procStat(pid)
	if len(st) < 4 {
		t.Fatalf("no /proc/%d/stat", pid)
	}
	sid, _ := strconv.Atoi(st[3])
	return sid
}

// isTestBinary guards kills by pid against pid reuse: only our own binary
// is fair game.
func isTestBinary(pid int) bool {
	self, err := os.Executable()
	if err != nil {
		return false
	}
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	return err == nil && exe == self
}

// waitGone polls until pid is no longer alive.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	if !poll.Within(patience, func() bool { return !alive(pid) }) {
		t.Errorf("process %d still alive %v after SIGKILL", pid, patience)
	}
}
