package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/localbackend"
	"github.com/claude-relay/claude-relay/internal/server"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
)

// serveProc is a `claude-relay serve` subprocess.
type serveProc struct {
	cmd    *exec.Cmd
	info   localbackend.Info // what it advertised
	exited chan struct{}
	stderr *syncBuffer
}

// spawnServe starts `claude-relay serve --addr=addr` on dataDir and returns
// once it advertises itself in serve.json and answers there. Cleanup stops
// it with SIGTERM.
func spawnServe(t *testing.T, env []string, dataDir, addr string) *serveProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "serve", "--addr="+addr)
	cmd.Env = append(append([]string{}, env...), envTestMain+"=1", goraceEnv(), "CLAUDE_RELAY_DATA_DIR="+dataDir)
	p := &serveProc{cmd: cmd, exited: make(chan struct{}), stderr: &syncBuffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(p.exited) }() //nolint:errcheck // the status is not the point
	t.Cleanup(func() { p.stop(t) })
	if !poll.Within(30*time.Second, func() bool {
		if f := localbackend.Find(context.Background(), dataDir, time.Second); f.Ready && f.PID == cmd.Process.Pid {
			p.info = f.Info
			return true
		}
		select {
		case <-p.exited:
			t.Fatalf("serve exited: %s", p.stderr.String())
		default:
		}
		return false
	}) {
		t.Fatalf("serve did not come up: %s", p.stderr.String())
	}
	return p
}

// stop ends the serve gracefully (idempotent).
func (p *serveProc) stop(t *testing.T) {
	t.Helper()
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may be gone already
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		p.cmd.Process.Kill() //nolint:errcheck
		<-p.exited
		t.Errorf("serve ignored SIGTERM: %s", p.stderr.String())
	}
}

// kill ends the serve with SIGKILL, as a crash would: no cleanup runs.
func (p *serveProc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.exited
}

// serveTestEnv is an isolated world for serve tests: its HOME, its data dir.
func serveTestEnv(t *testing.T) (env []string, dataDir string) {
	home := t.TempDir()
	return []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state")}, filepath.Join(home, "data")
}

// envMap turns env entries into runCLI's map, with the data dir set.
func envMap(env []string, dataDir string) map[string]string {
	m := map[string]string{"CLAUDE_RELAY_DATA_DIR": dataDir}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// loadedApp is an App with its configuration loaded from env, as a command
// would have it.
func loadedApp(t *testing.T, env map[string]string) *App {
	t.Helper()
	a := &App{Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{},
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Getwd:     func() (string, error) { return env["HOME"], nil }}
	if err := a.load(a.rootCommand().PersistentFlags()); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestServeSecondServeIsRefused: a second serve on the same data dir exits
// with status 1 naming the first's pid and address, and leaves the first
// advertised: run's lookup still finds it.
func TestServeSecondServeIsRefused(t *testing.T) {
	t.Parallel()
	env, dir := serveTestEnv(t)
	// A wildcard address is advertised too, on loopback: run must find
	// every serve of its data dir, not start the embedded default beside it.
	first := spawnServe(t, env, dir, ":0")
	if !strings.HasPrefix(first.info.URL, "http://127.0.0.1:") {
		t.Errorf("a serve on :0 advertised %q, want http://127.0.0.1:PORT", first.info.URL)
	}

	cmd := exec.Command(os.Args[0], "serve", "--addr=127.0.0.1:0")
	cmd.Env = append(append([]string{}, env...), envTestMain+"=1", goraceEnv(), "CLAUDE_RELAY_DATA_DIR="+dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	code := exitCode(cmd.Run())
	want := fmt.Sprintf("claude-relay: another serve (pid %d, %s) already uses data dir %s; stop it, or give this serve its own with --data-dir\n",
		first.cmd.Process.Pid, first.info.URL, dir)
	if code != 1 || errb.String() != want || out.Len() != 0 {
		t.Errorf("second serve: exit %d, stdout %q, stderr %q; want exit 1 and stderr %q", code, out.String(), errb.String(), want)
	}

	// In-process too, so the error's fields are checked as well as its text
	// (as claude-relay-server, which has the backend's code).
	a := loadedApp(t, envMap(env, dir))
	a.server = server.InProcess{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // ends it should it serve
	defer cancel()
	err := runServe(ctx, a, serveOptions{addr: "127.0.0.1:0"})
	var busy *localbackend.HeldError
	if !errors.As(err, &busy) || busy.PID != first.cmd.Process.Pid || busy.URL != first.info.URL || busy.DataDir != dir {
		t.Errorf("in-process second serve: %v (%+v)", err, busy)
	}

	// The first is still the one advertised, and run's lookup uses it.
	if info, err := localbackend.ReadInfo(dir); err != nil || info != first.info {
		t.Errorf("serve.json after the refusals: %+v, %v; want the first's %+v", info, err, first.info)
	}
	b, err := a.backend(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Embedded || b.URL != first.info.URL {
		t.Errorf("run's backend: %q (embedded %v), want the first serve %q", b.URL, b.Embedded, first.info.URL)
	}

	// Its own data dir lets a second serve run beside the first.
	other := spawnServe(t, env, filepath.Join(t.TempDir(), "other"), "127.0.0.1:0")
	if other.info.URL == first.info.URL {
		t.Errorf("two serves advertise %s", other.info.URL)
	}

	// Only the holder cleans up: serve.json goes when the first stops.
	first.stop(t)
	if _, err := os.Stat(filepath.Join(dir, localbackend.InfoFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("serve.json after the first stopped: %v", err)
	}
}

// TestServeTakesOverFromKilledServe: a SIGKILLed serve leaves serve.json
// but no lock; commands ignore that file and the next serve takes over.
func TestServeTakesOverFromKilledServe(t *testing.T) {
	t.Parallel()
	env, dir := serveTestEnv(t)
	first := spawnServe(t, env, dir, "127.0.0.1:0")
	first.kill(t)
	if info, err := localbackend.ReadInfo(dir); err != nil || info.PID != first.cmd.Process.Pid {
		t.Fatalf("a killed serve should leave its serve.json: %+v, %v", info, err)
	}
	a := loadedApp(t, envMap(env, dir))
	if p := localbackend.Find(context.Background(), dir, localbackend.StartWait); p.Held || p.Ready {
		t.Errorf("the killed serve's data dir: %+v, want free", p)
	}
	b, err := a.backend(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !b.Embedded {
		t.Errorf("run's backend with only a stale serve.json: %q, want the embedded default", b.URL)
	}
	b.Close()

	second := spawnServe(t, env, dir, "127.0.0.1:0")
	p := localbackend.Find(context.Background(), dir, localbackend.StartWait)
	if !p.Ready || p.PID != second.cmd.Process.Pid || p.Info != second.info {
		t.Errorf("after the takeover: %+v, want the second serve (pid %d, %s)", p, second.cmd.Process.Pid, second.info.URL)
	}
}
