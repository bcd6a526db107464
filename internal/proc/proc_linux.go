//go:build linux

package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

var errStale = errors.New("proc: pid now belongs to another process")

func procPath(pid int, file string) string {
	return "/proc/" + strconv.Itoa(pid) + "/" + file
}

func readStat(pid int) (stat, error) {
	b, err := os.ReadFile(procPath(pid, "stat"))
	if err != nil {
		// ESRCH: the process exited between open and read.
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			return stat{}, fmt.Errorf("%w: pid %d", ErrNotFound, pid)
		}
		return stat{}, fmt.Errorf("proc: read stat of pid %d: %w", pid, err)
	}
	s, err := parseStat(b)
	if err != nil {
		return stat{}, fmt.Errorf("proc: pid %d: %w", pid, err)
	}
	return s, nil
}

// Lookup returns the identity of the process with the pid. A zombie still has
// one (its pid is not reusable until it is reaped), but Alive reports it dead.
func Lookup(pid int) (Proc, error) {
	if pid <= 0 {
		return Proc{}, fmt.Errorf("%w: pid %d", ErrNotFound, pid)
	}
	s, err := readStat(pid)
	if err != nil {
		return Proc{}, err
	}
	return Proc{PID: pid, StartTime: s.startTime}, nil
}

// Alive reports whether p is still running: false if its pid is gone, is a
// zombie, or now belongs to a process with another start time.
func Alive(p Proc) bool {
	if p.PID <= 0 {
		return false
	}
	s, err := readStat(p.PID)
	return err == nil && s.matches(p)
}

func (s stat) matches(p Proc) bool { return !s.dead() && s.startTime == p.StartTime }

// scan reads the stat of every process once. Processes that exit during the
// scan are left out.
func scan() (map[int]stat, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, fmt.Errorf("proc: list processes: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("proc: list processes: %w", err)
	}
	all := make(map[int]stat, len(names))
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 {
			continue
		}
		if s, err := readStat(pid); err == nil {
			all[pid] = s
		}
	}
	return all, nil
}

// FindMarked returns the live processes whose environment holds
// MarkerEnvEntry(runID) exactly, sorted by pid. Processes whose environment
// cannot be read (exited, or another user's without privileges), zombies and
// the calling process are left out.
func FindMarked(runID string) ([]Proc, error) {
	if runID == "" {
		return nil, fmt.Errorf("%w: empty", ErrInvalidRunID)
	}
	all, err := scan()
	if err != nil {
		return nil, err
	}
	return marked(all, runID, ""), nil
}

// marked returns the live processes carrying MarkerEnvEntry(runID) and, if
// token is not empty, TokenEnvEntry(token).
func marked(all map[int]stat, runID, token string) []Proc {
	entry := MarkerEnvEntry(runID)
	self := os.Getpid()
	var out []Proc
	for pid, s := range all {
		if pid == self || s.dead() {
			continue
		}
		env, err := os.ReadFile(procPath(pid, "environ"))
		if err != nil || !hasEnvEntry(env, entry) || token != "" && !hasEnvEntry(env, TokenEnvEntry(token)) {
			continue
		}
		// The pid may have been reused between the two reads: only keep it if
		// the environment we read belongs to the process we scanned.
		p := Proc{PID: pid, StartTime: s.startTime}
		if Alive(p) {
			out = append(out, p)
		}
	}
	sortProcs(out)
	return out
}

// Descendants returns the live processes below root by parent pid
// (children, grandchildren, ...), sorted by pid. A process that left by
// setsid is still found here while its parent lives; once reparented it is
// only found by its marker.
func Descendants(root int) []Proc {
	all, err := scan()
	if err != nil {
		return nil
	}
	return descendants(all, root)
}

func descendants(all map[int]stat, root int) []Proc {
	rs, ok := all[root]
	if !ok {
		return nil
	}
	children := make(map[int][]int)
	for pid, s := range all {
		children[s.ppid] = append(children[s.ppid], pid)
	}
	var out []Proc
	type node struct {
		pid   int
		start uint64
	}
	queue := []node{{root, rs.startTime}}
	seen := map[int]bool{root: true}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, c := range children[n.pid] {
			cs := all[c]
			// A child cannot start before its parent: if it seems to, one of the
			// two pids was reused during the scan.
			if seen[c] || cs.startTime < n.start {
				continue
			}
			seen[c] = true
			queue = append(queue, node{c, cs.startTime})
			if !cs.dead() {
				out = append(out, Proc{PID: c, StartTime: cs.startTime})
			}
		}
	}
	sortProcs(out)
	return out
}

func members(t Tree) []Proc {
	all, err := scan()
	if err != nil {
		// Without a process list only the root can be checked.
		if Alive(t.Root) && t.Root.PID != os.Getpid() {
			return []Proc{t.Root}
		}
		return nil
	}
	set := make(map[int]Proc)
	add := func(ps ...Proc) {
		for _, p := range ps {
			set[p.PID] = p
		}
	}
	if s, ok := all[t.Root.PID]; ok && t.Root.PID > 0 && s.matches(t.Root) {
		add(t.Root)
		add(descendants(all, t.Root.PID)...)
	}
	if groupSignallable(t.PGID) {
		for pid, s := range all {
			if s.pgrp == t.PGID && !s.dead() {
				add(Proc{PID: pid, StartTime: s.startTime})
			}
		}
	}
	if t.RunID != "" {
		add(marked(all, t.RunID, t.Token)...)
	}
	delete(set, os.Getpid())
	out := make([]Proc, 0, len(set))
	for _, p := range set {
		out = append(out, p)
	}
	sortProcs(out)
	return out
}

// pgrpOf returns the process group of p if p is still alive.
func pgrpOf(p Proc) (int, bool) {
	s, err := readStat(p.PID)
	if err != nil || !s.matches(p) {
		return 0, false
	}
	return s.pgrp, true
}

// signalProc sends sig to p unless p is gone or its pid now belongs to
// another process. A pidfd pins the process while its start time is checked,
// so the signal cannot reach a process that reused the pid in between.
func signalProc(p Proc, sig syscall.Signal) error {
	if p.PID <= 0 || p.PID == os.Getpid() {
		return errNotSignallable
	}
	fd, err := unix.PidfdOpen(p.PID, 0)
	if errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("%w: pid %d", ErrNotFound, p.PID)
	}
	if err != nil {
		// No pidfd (kernel before 5.3, or a seccomp filter): check, then
		// kill, accepting the tiny window between the two.
		if !Alive(p) {
			return errStale
		}
		return syscall.Kill(p.PID, sig)
	}
	defer unix.Close(fd)
	if !Alive(p) {
		return errStale
	}
	return unix.PidfdSendSignal(fd, sig, nil, 0)
}

func sortProcs(ps []Proc) {
	slices.SortFunc(ps, func(a, b Proc) int { return a.PID - b.PID })
}
