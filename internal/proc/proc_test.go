//go:build linux

package proc

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/claude-relay/claude-relay/internal/testkit/poll"
)

func TestLookupSelf(t *testing.T) {
	p, err := Lookup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if want := f[22-3]; fmt.Sprint(p.StartTime) != want {
		t.Errorf("StartTime = %d, want %s", p.StartTime, want)
	}
	if !Alive(p) {
		t.Error("Alive(self) = false")
	}
}

func TestLookupMissing(t *testing.T) {
	// 1<<22 is the largest pid_max Linux allows, so this pid never exists.
	for _, pid := range []int{-1, 0, 1<<22 + 1} {
		if _, err := Lookup(pid); !errors.Is(err, ErrNotFound) {
			t.Errorf("Lookup(%d) error = %v, want ErrNotFound", pid, err)
		}
		if Alive(Proc{PID: pid}) {
			t.Errorf("Alive(pid %d) = true", pid)
		}
	}
}

func TestAliveZombie(t *testing.T) {
	c := start(t, modeSleep, nil)
	if !Alive(c.proc) {
		t.Fatal("Alive = false for a running child")
	}
	if err := syscall.Kill(c.proc.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Not reaped yet: the child stays a zombie, which must count as dead.
	poll.Until(t, deathWait, "the child to die", func() bool { return !Alive(c.proc) })
	s, err := readStat(c.proc.PID)
	if err != nil {
		t.Fatal(err)
	}
	if s.state != 'Z' {
		t.Errorf("state = %c, want Z", s.state)
	}
	if got := (Tree{Root: c.proc}).Members(); len(got) != 0 {
		t.Errorf("Members of a zombie = %v, want none", got)
	}
	if n := (Tree{Root: c.proc}).Signal(syscall.SIGKILL); n != 0 {
		t.Errorf("Signal to a zombie signalled %d", n)
	}
	_ = c.wait()
}

func TestStartTimeMismatch(t *testing.T) {
	c := start(t, modeSleep, &syscall.SysProcAttr{Setpgid: true})
	fake := Proc{PID: c.proc.PID, StartTime: c.proc.StartTime + 1}
	if Alive(fake) {
		t.Error("Alive = true for a wrong start time")
	}
	tree := Tree{Root: fake}
	if got := tree.Members(); len(got) != 0 {
		t.Errorf("Members = %v, want none", got)
	}
	if n := tree.Signal(syscall.SIGKILL); n != 0 {
		t.Errorf("Signal signalled %d processes, want 0", n)
	}
	if err := signalProc(fake, syscall.SIGKILL); !errors.Is(err, errStale) {
		t.Errorf("signalProc error = %v, want errStale", err)
	}
	if !Alive(c.proc) {
		t.Error("the real process was killed")
	}
}

func TestSignalNeverSelf(t *testing.T) {
	self := mustSelf()
	// SIGCONT is harmless should the guard fail.
	if n := (Tree{Root: self, PGID: syscall.Getpgrp()}).Signal(syscall.SIGCONT); n != 0 {
		t.Errorf("Signal reached %d processes of our own tree", n)
	}
	if got := (Tree{Root: self}).Members(); slices.Contains(pids(got), os.Getpid()) {
		t.Errorf("Members %v include the calling process", got)
	}
}

func TestDescendants(t *testing.T) {
	c := start(t, modeSpawn, nil)
	gc := c.readPids(t)[0]
	got := Descendants(c.proc.PID)
	if !slices.Equal(got, []Proc{gc}) {
		t.Errorf("Descendants = %v, want [%v]", got, gc)
	}
	if got := Descendants(gc.PID); len(got) != 0 {
		t.Errorf("Descendants of a leaf = %v", got)
	}
}

func TestFindMarked(t *testing.T) {
	runID := newRunID(t)
	marked := start(t, modeSpawn, nil, MarkerEnvEntry(runID))
	gc := marked.readPids(t)[0]
	unmarked := start(t, modeSleep, nil)
	longer := start(t, modeSleep, nil, MarkerEnvEntry(runID+"x"))
	shorter := start(t, modeSleep, nil, MarkerEnvEntry(runID[:len(runID)-1]))
	other := start(t, modeSleep, nil, "X"+MarkerEnvEntry(runID))

	got, err := FindMarked(runID)
	if err != nil {
		t.Fatal(err)
	}
	want := []Proc{marked.proc, gc}
	sortProcs(want)
	if !slices.Equal(got, want) {
		t.Errorf("FindMarked = %v, want %v (unmarked %v, near misses %v %v %v)",
			got, want, unmarked.proc, longer.proc, shorter.proc, other.proc)
	}
	// The grandchild really left the group, as the Bash tool's commands do.
	if s, _ := readStat(gc.PID); s.pgrp != gc.PID {
		t.Errorf("grandchild pgrp = %d, want its own %d", s.pgrp, gc.PID)
	}
}

func TestFindMarkedSkipsSelf(t *testing.T) {
	runID := newRunID(t)
	c := start(t, modeFindMarked, nil, MarkerEnvEntry(runID), "RUN_ID="+runID)
	line, err := c.out.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if line != "[]\n" {
		t.Errorf("a marked process found %q, want only others", line)
	}
}

func TestFindMarkedEmptyRunID(t *testing.T) {
	if _, err := FindMarked(""); !errors.Is(err, ErrInvalidRunID) {
		t.Errorf("error = %v, want ErrInvalidRunID", err)
	}
}

func TestMembers(t *testing.T) {
	runID := newRunID(t)
	root := start(t, modeSpawn, SysProcAttr(), MarkerEnvEntry(runID))
	gc := root.readPids(t)[0]
	// Same group as root, neither descendant nor marked.
	peer := start(t, modeSleep, &syscall.SysProcAttr{Setpgid: true, Pgid: root.proc.PID})
	// Marked, but in no other relation.
	loner := start(t, modeSleep, nil, MarkerEnvEntry(runID))

	tests := []struct {
		name string
		tree Tree
		want []Proc
	}{
		{"all", Tree{Root: root.proc, PGID: root.proc.PID, RunID: runID}, []Proc{root.proc, gc, peer.proc, loner.proc}},
		{"root", Tree{Root: root.proc}, []Proc{root.proc, gc}},
		{"group", Tree{PGID: root.proc.PID}, []Proc{root.proc, peer.proc}},
		{"marker", Tree{RunID: runID}, []Proc{root.proc, gc, loner.proc}},
		{"empty", Tree{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sortProcs(tt.want)
			if got := tt.tree.Members(); !slices.Equal(got, tt.want) {
				t.Errorf("Members = %v, want %v", got, tt.want)
			}
		})
	}
}
