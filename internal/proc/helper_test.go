//go:build linux

package proc

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/claude-relay/claude-relay/internal/testkit/poll"
)

// The tests re-execute the test binary as the processes they kill. The mode
// is chosen by helperEnv.
const helperEnv = "GO_WANT_HELPER_PROCESS"

const (
	modeSleep      = "sleep"      // sleep forever
	modeIgnore     = "ignore"     // ignore SIGINT and SIGTERM, sleep forever
	modeSpawn      = "spawn"      // start an ignoring child in a new session, print its pid, sleep
	modeHelper     = "helper"     // play a helper: start a marked spawn tree, register it, print "cli grandchild"
	modeFindMarked = "findmarked" // print FindMarked($RUN_ID)
	modeClaim      = "claim"      // on a line on stdin, ClaimDead($REGISTRY_DIR), finish each claim, print the run IDs
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	// Orphans of the trees we kill are reparented to us instead of to a pid 1
	// that never reaps them, so we can reap them and spot leaks.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "proc tests: cannot become a subreaper:", err)
	}
	code := m.Run()
	if leaked := Descendants(os.Getpid()); len(leaked) > 0 {
		fmt.Fprintf(os.Stderr, "proc tests: leaked processes %v\n", leaked)
		KillNow(Tree{Root: mustSelf()})
		code = 1
	}
	reapAll()
	os.Exit(code)
}

func mustSelf() Proc {
	p, err := Lookup(os.Getpid())
	if err != nil {
		panic(err)
	}
	return p
}

// reapAll reaps every exited child left (orphans handed to us as subreaper).
// Only safe once no exec.Cmd is waiting.
func reapAll() {
	poll.Within(5*time.Second, func() bool {
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if err != nil { // ECHILD: none left
				return true
			}
			if pid == 0 { // some still run
				return false
			}
		}
	})
}

func runHelper(mode string) int {
	switch mode {
	case modeSleep:
	case modeIgnore:
		signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
	case modeSpawn:
		if os.Getenv("HELPER_IGNORE") == "1" {
			signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
		}
		gc := exec.Command(os.Args[0])
		gc.Env = append(os.Environ(), helperEnv+"="+modeIgnore)
		gc.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // what the Bash tool does
		if err := gc.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "spawn:", err)
			return 1
		}
		go gc.Wait()
		fmt.Println(gc.Process.Pid)
	case modeHelper:
		line, err := playHelper(os.Getenv("REGISTRY_DIR"), os.Getenv("RUN_ID"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 1
		}
		fmt.Println(line)
	case modeClaim:
		return claimHelper(os.Getenv("REGISTRY_DIR"))
	case modeFindMarked:
		ps, err := FindMarked(os.Getenv("RUN_ID"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "findmarked:", err)
			return 1
		}
		fmt.Println(ps)
		return 0
	default:
		fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
		return 2
	}
	for {
		time.Sleep(time.Hour)
	}
}

// playHelper does what the real helper does for a run: start the CLI (here a
// spawn tree) marked and in its own group, and register it.
func playHelper(dir, runID string) (string, error) {
	cli := exec.Command(os.Args[0])
	cli.Env = append(os.Environ(), helperEnv+"="+modeSpawn, MarkerEnvEntry(runID))
	cli.SysProcAttr = SysProcAttr()
	out, err := cli.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cli.Start(); err != nil {
		return "", err
	}
	gc, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("read grandchild pid: %w", err)
	}
	self, err := Lookup(os.Getpid())
	if err != nil {
		return "", err
	}
	c, err := Lookup(cli.Process.Pid)
	if err != nil {
		return "", err
	}
	rec := Record{RunID: runID, Helper: self, CLI: c, PGID: c.PID, Started: time.Now(),
		Spool: SpoolKey{SessionID: os.Getenv("SPOOL_SESSION"), InteractionID: os.Getenv("SPOOL_INTERACTION")}}
	if err := (Registry{Dir: dir}).Register(rec); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d %s", c.PID, strings.TrimSpace(gc)), nil
}

// child is a helper process started by a test.
type child struct {
	cmd  *exec.Cmd
	out  *bufio.Reader
	proc Proc
	wait func() error // reaps once; safe to call again
}

// start runs the test binary in mode with extra environment entries. The
// process and, via the returned child's proc, its identity are killed and
// reaped when the test ends.
func start(t *testing.T, mode string, attr *syscall.SysProcAttr, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), helperEnv+"="+mode), env...)
	cmd.SysProcAttr = attr
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, out: bufio.NewReader(out)}
	c.wait = sync.OnceValue(func() error {
		// Wait closes the pipe: drain it first so nothing is lost.
		_, _ = io.Copy(io.Discard, c.out)
		return cmd.Wait()
	})
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL) // our unreaped child: the pid is still ours
		_ = c.wait()
	})
	p, err := Lookup(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	c.proc = p
	return c
}

// readPids reads one line of pids from the child's stdout.
func (c *child) readPids(t *testing.T) []Proc {
	t.Helper()
	line, err := c.out.ReadString('\n')
	if err != nil {
		t.Fatalf("read from helper process: %v", err)
	}
	var ps []Proc
	for _, f := range strings.Fields(line) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("helper printed %q: %v", line, err)
		}
		p, err := Lookup(pid)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
		killAndReapAtEnd(t, p)
	}
	return ps
}

// killAndReapAtEnd makes sure a process that is not our direct child is gone
// when the test ends, and reaps it if it was reparented to us.
func killAndReapAtEnd(t *testing.T, p Proc) {
	t.Cleanup(func() {
		_ = signalProc(p, syscall.SIGKILL)
		reap(p.PID)
	})
}

// reap waits for pid if it is our child (an orphan handed to us as
// subreaper). It gives up at once if it is not.
func reap(pid int) (syscall.WaitStatus, bool) {
	var ws syscall.WaitStatus
	reaped := false
	poll.Within(5*time.Second, func() bool {
		got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			return false
		}
		if err != nil { // not our child
			return true
		}
		reaped = got == pid
		return reaped
	})
	return ws, reaped
}

func newRunID(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	runID := "test-" + hex.EncodeToString(b)
	// Whatever a test leaves of the run dies with it.
	t.Cleanup(func() { KillNow(Tree{RunID: runID}) })
	return runID
}

// deathWait bounds a wait for a killed process to be gone.
const deathWait = 10 * time.Second

func pids(ps []Proc) []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = p.PID
	}
	return out
}
