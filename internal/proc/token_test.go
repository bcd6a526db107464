//go:build linux

package proc

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/testkit/poll"
)

// Two helpers run a run with the same ID at once (run IDs are the client's).
// Stopping one start of it must leave the other's processes alone: it used to
// kill every process marked with the run ID, so the other helper's CLI quit
// with no output and its run failed.
func TestKillAllSparesAnotherStartOfTheRun(t *testing.T) {
	runID := newRunID(t)
	mine, theirs := NewToken(), NewToken()
	if mine == theirs || mine == "" {
		t.Fatalf("tokens %q and %q", mine, theirs)
	}
	ours := start(t, modeSpawn, SysProcAttr(), MarkerEnvEntry(runID), TokenEnvEntry(mine))
	ourTool := ours.readPids(t)[0]
	other := start(t, modeSpawn, SysProcAttr(), MarkerEnvEntry(runID), TokenEnvEntry(theirs))
	otherTool := other.readPids(t)[0]
	// A process marked before tokens existed (an older helper's run).
	untokened := start(t, modeSleep, SysProcAttr(), MarkerEnvEntry(runID))

	tree := Tree{Root: ours.proc, PGID: ours.proc.PID, RunID: runID, Token: mine}
	want := []Proc{ours.proc, ourTool}
	sortProcs(want)
	if got := tree.Members(); !slices.Equal(got, want) {
		t.Errorf("members %v, want only ours %v", got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := KillAll(ctx, tree, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, deathWait, "our start of the run to die", func() bool { return !Alive(ours.proc) && !Alive(ourTool) })
	for name, p := range map[string]Proc{"CLI": other.proc, "tool": otherTool, "untokened process": untokened.proc} {
		if !Alive(p) {
			t.Errorf("the other start's %s (%v) was killed", name, p)
		}
	}
	// Without a token the run ID alone still finds every start of the run.
	if got, _ := FindMarked(runID); !slices.Contains(got, other.proc) || !slices.Contains(got, untokened.proc) {
		t.Errorf("FindMarked(%q) = %v, want the other start and the untokened process", runID, got)
	}
}

// A crashed helper's record must only take its own start of the run, not a
// live helper's run with the same ID.
func TestCleanupSparesAnotherStartOfTheRun(t *testing.T) {
	r := Registry{Dir: t.TempDir()}
	runID := newRunID(t)
	crashed, live := NewToken(), NewToken()
	orphan := start(t, modeSpawn, SysProcAttr(), MarkerEnvEntry(runID), TokenEnvEntry(crashed), "HELPER_IGNORE=1")
	orphanTool := orphan.readPids(t)[0]
	other := start(t, modeSpawn, SysProcAttr(), MarkerEnvEntry(runID), TokenEnvEntry(live))
	otherTool := other.readPids(t)[0]
	self := mustSelf()
	rec := Record{
		RunID: runID, Token: crashed,
		Helper: Proc{PID: self.PID, StartTime: self.StartTime + 1}, // a dead helper
		CLI:    orphan.proc, PGID: orphan.proc.PID, Started: time.Now(),
	}
	if err := r.Register(rec); err != nil {
		t.Fatal(err)
	}
	rep := cleanup(t, r)
	if rep.Stale != 1 || len(rep.Errors) != 0 {
		t.Errorf("report = %+v, want 1 stale, no errors", rep)
	}
	if Alive(orphan.proc) || Alive(orphanTool) {
		t.Errorf("the crashed helper's run survived: cli %v, tool %v", Alive(orphan.proc), Alive(orphanTool))
	}
	if !Alive(other.proc) || !Alive(otherTool) {
		t.Errorf("the live helper's run with the same ID was killed: cli %v, tool %v", Alive(other.proc), Alive(otherTool))
	}
	if exists(t, filepath.Join(r.Dir, runID+".json")) {
		t.Error("record not removed")
	}
}

func TestWithToken(t *testing.T) {
	env := []string{"A=1", TokenEnvEntry("inherited"), "B=2"}
	got := WithToken(env, "fresh")
	if want := []string{"A=1", "B=2", TokenEnvEntry("fresh")}; !slices.Equal(got, want) {
		t.Errorf("WithToken = %q, want %q", got, want)
	}
	if env[1] != TokenEnvEntry("inherited") {
		t.Errorf("WithToken changed its argument: %q", env)
	}
}
