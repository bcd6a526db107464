package executor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/proc"
	"github.com/claude-relay/claude-relay/internal/testkit/fakecli"
)

// hostEnv makes the test binary a helper that runs the executor until it is
// killed; its value is the registry directory.
const (
	hostEnv     = "CLAUDE_RELAY_TEST_EXECUTOR_HOST"
	hostPidsEnv = "CLAUDE_RELAY_TEST_EXECUTOR_PIDS"
)

func runHost() {
	path, env := fakecli.Command(fakecli.ModeGrandchild, fakecli.WithPidFile(os.Getenv(hostPidsEnv)))
	var base []string
	for _, kv := range os.Environ() {
		if !hasPrefix(kv, hostEnv+"=") && !hasPrefix(kv, hostPidsEnv+"=") {
			base = append(base, kv)
		}
	}
	e := New(Options{CLIPath: path, BaseEnv: append(base, env...), Registry: &proc.Registry{Dir: os.Getenv(hostEnv)}})
	e.Run(context.Background(), Request{Prompt: "run until killed"}, nil, nil) //nolint:errcheck
	os.Exit(0)
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }

func TestOrphansOfAKilledHelperAreCleanedOnNextStart(t *testing.T) {
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), hostEnv+"="+filepath.Join(dir, "runs"), hostPidsEnv+"="+pids)
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	got := waitPids(t, pids, 3)
	if err := host.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	host.Wait() //nolint:errcheck
	// Wait is the barrier: the helper is dead and reaped, so whatever its
	// death sets off (a parent-death signal, a closed pipe) is under way.
	// Nothing the tree does says it has arrived, so a short look guards
	// the premise only; the claim under test is CleanupOrphans below.
	time.Sleep(200 * time.Millisecond)
	var alive int
	for _, pid := range got {
		if p, err := proc.Lookup(pid); err == nil && proc.Alive(p) {
			alive++
		}
	}
	if alive == 0 {
		t.Fatal("test premise: the fake CLI tree should survive its helper's SIGKILL")
	}

	e := New(Options{Registry: &proc.Registry{Dir: filepath.Join(dir, "runs")}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	report, err := e.CleanupOrphans(ctx)
	if err != nil {
		t.Fatalf("cleanup: %v (%+v)", err, report)
	}
	assertGone(t, pids)
	if entries, _ := os.ReadDir(filepath.Join(dir, "runs")); len(entries) != 0 {
		t.Errorf("registry not emptied: %v", entries)
	}
}
