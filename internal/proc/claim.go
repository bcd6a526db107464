package proc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A claim is a record file renamed to <record name>.<pid>-<start>.claimed,
// the pid and start time of the process that holds it. rename(2) of one
// path succeeds for exactly one process, so exactly one process posts a
// dead run's end however many helpers start at once; a claim whose holder
// died is taken over the same way.
const claimExt = ".claimed"

// Claim is the run of a dead helper that this process claimed in order to
// post the run's end: no other process claims it while this one is alive,
// and after Done nobody does. A Claim this process neither finishes nor
// gives back is taken over by a start after this process has exited.
type Claim struct {
	Record
	// StoppedAt is when nothing of the run was found alive any more.
	StoppedAt time.Time
	path      string // the claim file
}

// Done ends a claim once the run's end is safely posted (spooled): the
// record is gone for good. It is idempotent.
func (c *Claim) Done() error {
	if err := os.Remove(c.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return &RecordError{File: c.path, RunID: c.RunID, Err: fmt.Errorf("remove claimed record: %w", err)}
	}
	return nil
}

// ClaimDead claims the runs of dead helpers that have a Spool key, for the
// caller to post their end: each record of a dead helper (and each claim
// whose holder died) for which may says yes is claimed atomically, what is
// left of its run is stopped as Cleanup stops it, and the claims come back
// in file-name order. may is asked before claiming, so a process that could
// not post a run (it does not hold the run's spool) leaves it to one that
// can. A run that still has live processes after the stop is given back as
// a record, for the next start's Cleanup, and reported in the error, as is
// a dead holder's claim that cannot be read (it is removed).
func (r Registry) ClaimDead(ctx context.Context, gap time.Duration, may func(Record) bool) ([]*Claim, error) {
	if r.Dir == "" {
		return nil, errNoDir
	}
	entries, err := os.ReadDir(r.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("proc: list run registry: %w", err)
	}
	self, err := Lookup(os.Getpid())
	if err != nil {
		return nil, fmt.Errorf("proc: who am I (the holder of claims): %w", err)
	}
	var (
		claims []*Claim
		errs   []error
	)
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), tmpPrefix) {
			continue
		}
		c, err := r.claimOne(e.Name(), self, may)
		if err != nil {
			errs = append(errs, err)
		}
		if c != nil {
			claims = append(claims, c)
		}
	}
	claims, stopErrs := r.stopClaimed(ctx, gap, claims)
	return claims, errors.Join(append(errs, stopErrs...)...)
}

// claimOne claims the record or the dead claim in file name, if it is a
// dead helper's run that may is willing to post; nil when it is not (or
// another process was faster).
func (r Registry) claimOne(name string, self Proc, may func(Record) bool) (*Claim, error) {
	path := filepath.Join(r.Dir, name)
	recName := name
	if strings.HasSuffix(name, claimExt) {
		var holder Proc
		var ok bool
		if recName, holder, ok = parseClaim(name); !ok || holder == self || Alive(holder) {
			return nil, nil
		}
	} else if !strings.HasSuffix(name, recordExt) {
		return nil, nil
	}
	rec, err := readRecordAs(path, recName)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil // claimed or removed meanwhile
	case err != nil && recName == name:
		return nil, nil // a corrupt record: Cleanup's to report and remove
	case err != nil:
		// A dead holder's claim nobody can read: nobody can post it either.
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return nil, errors.Join(err, &RecordError{File: path, Err: fmt.Errorf("remove: %w", rerr)})
		}
		return nil, err
	case rec.Spool == (SpoolKey{}) || Alive(rec.Helper) || !may(rec):
		return nil, nil
	}
	mine := filepath.Join(r.Dir, claimName(recName, self))
	if _, err := os.Lstat(mine); err == nil {
		return nil, nil // we hold a claim of another run of this ID: one at a time
	}
	if err := os.Rename(path, mine); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil // another process claimed it first
		}
		return nil, &RecordError{File: path, RunID: rec.RunID, Err: fmt.Errorf("claim: %w", err)}
	}
	// What we renamed may be a record written after we read it: a live
	// helper that registered a run of the same (client-chosen) ID.
	rec, err = readRecordAs(mine, recName)
	if err != nil {
		return nil, err
	}
	c := &Claim{Record: rec, path: mine}
	if Alive(rec.Helper) {
		return nil, r.giveBack(c)
	}
	return c, nil
}

// stopClaimed stops what is left of each claimed run, all at once as
// Cleanup does, and keeps the claims whose run is gone.
func (r Registry) stopClaimed(ctx context.Context, gap time.Duration, claims []*Claim) ([]*Claim, []error) {
	stopErrs := make([]error, len(claims))
	var wg sync.WaitGroup
	for i, c := range claims {
		wg.Go(func() {
			if _, err := killAll(ctx, staleTree(c.Record), gap); err != nil {
				stopErrs[i] = &RecordError{File: c.path, RunID: c.RunID, Err: fmt.Errorf("stop leftover processes (record kept for the next start): %w", err)}
				return
			}
			c.StoppedAt = time.Now()
		})
	}
	wg.Wait()
	var (
		kept []*Claim
		errs []error
	)
	for i, c := range claims {
		if stopErrs[i] == nil {
			kept = append(kept, c)
			continue
		}
		errs = append(errs, stopErrs[i])
		if err := r.giveBack(c); err != nil {
			errs = append(errs, err)
		}
	}
	return kept, errs
}

// giveBack turns a claim into a record again, unless a newer record of the
// same run ID appeared meanwhile: that one is the run's now, and the
// claimed one is dropped.
func (r Registry) giveBack(c *Claim) error {
	name, err := fileName(c.RunID)
	if err != nil {
		return err
	}
	err = os.Link(c.path, filepath.Join(r.Dir, name))
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return &RecordError{File: c.path, RunID: c.RunID, Err: fmt.Errorf("give the claim back (it is retried after this process exits): %w", err)}
	}
	return c.Done()
}

// claimName is the name of the claim of record file name by holder.
func claimName(name string, holder Proc) string {
	return name + "." + strconv.Itoa(holder.PID) + "-" + strconv.FormatUint(holder.StartTime, 10) + claimExt
}

// parseClaim splits a claim file name into the record file name and the
// holder; ok is false for a name claimName did not make.
func parseClaim(claim string) (name string, holder Proc, ok bool) {
	rest := strings.TrimSuffix(claim, claimExt)
	i := strings.LastIndexByte(rest, '.')
	if i < 0 {
		return "", Proc{}, false
	}
	name = rest[:i]
	pid, start, found := strings.Cut(rest[i+1:], "-")
	if !found || !strings.HasSuffix(name, recordExt) {
		return "", Proc{}, false
	}
	p, err1 := strconv.Atoi(pid)
	s, err2 := strconv.ParseUint(start, 10, 64)
	if err1 != nil || err2 != nil || p <= 0 {
		return "", Proc{}, false
	}
	return name, Proc{PID: p, StartTime: s}, true
}
