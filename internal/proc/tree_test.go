//go:build linux

package proc

import (
	"context"
	"errors"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/testkit/poll"
)

func TestKillAll(t *testing.T) {
	tests := []struct {
		name string
		// tree builds the tree to kill from the root process and run ID.
		tree func(root Proc, runID string) Tree
	}{
		{"root, group and marker", func(root Proc, runID string) Tree {
			return Tree{Root: root, PGID: root.PID, RunID: runID}
		}},
		{"root and descendants only", func(root Proc, _ string) Tree { return Tree{Root: root} }},
		{"marker only", func(_ Proc, runID string) Tree { return Tree{RunID: runID} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runID := newRunID(t)
			root := start(t, modeSpawn, SysProcAttr(), MarkerEnvEntry(runID), "HELPER_IGNORE=1")
			gc := root.readPids(t)[0]
			tree := tt.tree(root.proc, runID)
			if got := tree.Members(); !slices.Contains(got, gc) || !slices.Contains(got, root.proc) {
				t.Fatalf("Members = %v, want %v and %v", got, root.proc, gc)
			}

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := KillAll(ctx, tree, 100*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			for _, p := range []Proc{root.proc, gc} {
				if Alive(p) {
					t.Errorf("%v survived", p)
				}
			}
			// Both ignore SIGINT and SIGTERM: only SIGKILL ends them.
			_ = root.wait()
			if sig := root.cmd.ProcessState.Sys().(syscall.WaitStatus).Signal(); sig != syscall.SIGKILL {
				t.Errorf("root ended by %v, want SIGKILL", sig)
			}
		})
	}
}

func TestKillAllGraceful(t *testing.T) {
	c := start(t, modeSleep, SysProcAttr())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// A long gap: the process dies of SIGINT and KillAll returns then, not
	// after escalating.
	if err := KillAll(ctx, Tree{Root: c.proc, PGID: c.proc.PID}, time.Minute); err != nil {
		t.Fatal(err)
	}
	_ = c.wait()
	if sig := c.cmd.ProcessState.Sys().(syscall.WaitStatus).Signal(); sig != syscall.SIGINT {
		t.Errorf("ended by %v, want SIGINT", sig)
	}
}

func TestKillAllDoneContext(t *testing.T) {
	runID := newRunID(t)
	c := start(t, modeIgnore, SysProcAttr(), MarkerEnvEntry(runID))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// A cancelled context skips the graceful steps but still kills.
	if err := KillAll(ctx, Tree{Root: c.proc, RunID: runID}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if Alive(c.proc) {
		t.Error("process survived")
	}
}

func TestKillAllNothing(t *testing.T) {
	if err := KillAll(context.Background(), Tree{RunID: "no-such-run"}, time.Minute); err != nil {
		t.Fatal(err)
	}
}

func TestKillNow(t *testing.T) {
	runID := newRunID(t)
	root := start(t, modeSpawn, SysProcAttr(), MarkerEnvEntry(runID), "HELPER_IGNORE=1")
	gc := root.readPids(t)[0]
	KillNow(Tree{Root: root.proc, PGID: root.proc.PID, RunID: runID})
	poll.Until(t, deathWait, "the tree to die", func() bool { return !Alive(root.proc) && !Alive(gc) })
}

func TestSurvivorsError(t *testing.T) {
	err := error(&SurvivorsError{Survivors: []Proc{{PID: 7, StartTime: 9}}, Err: context.DeadlineExceeded})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Error("SurvivorsError does not unwrap to its cause")
	}
	if want := "proc: 1 process(es) survived SIGKILL: pid 7 (start 9): context deadline exceeded"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
}

// A SIGKILLed helper's CLI gets SIGTERM through Pdeathsig.
func TestSysProcAttrPdeathsig(t *testing.T) {
	runID := newRunID(t)
	h := start(t, modeHelper, nil, "REGISTRY_DIR="+t.TempDir(), "RUN_ID="+runID)
	ps := h.readPids(t)
	cli := ps[0]
	if err := syscall.Kill(h.proc.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = h.wait()
	poll.Until(t, deathWait, "the CLI to die", func() bool { return !Alive(cli) })
	if ws, ok := reap(cli.PID); ok && ws.Signal() != syscall.SIGTERM {
		t.Errorf("CLI ended by %v, want SIGTERM", ws.Signal())
	}
}
