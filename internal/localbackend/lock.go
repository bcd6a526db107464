package localbackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HeldError is Acquire refused because another serve holds the data dir.
type HeldError struct {
	DataDir string
	PID     int    // the holder's; 0 if it has not written it yet
	URL     string // where it listens; "" until it advertises
}

func (e *HeldError) Error() string {
	who := "another serve"
	switch {
	case e.PID != 0 && e.URL != "":
		who = fmt.Sprintf("another serve (pid %d, %s)", e.PID, e.URL)
	case e.PID != 0:
		who = fmt.Sprintf("another serve (pid %d, still starting)", e.PID)
	}
	return fmt.Sprintf("%s already uses data dir %s; stop it, or give this serve its own with --data-dir", who, e.DataDir)
}

// errLockBusy: serve.lock has an exclusive holder, another serve.
var errLockBusy = errors.New("serve lock held")

// Lock makes its process the data dir's one serve until Close.
type Lock struct {
	dir  string
	f    *os.File
	once sync.Once
}

// Acquire makes this process dir's one serve: an exclusive flock on
// serve.lock, which the kernel drops when the process dies (so a SIGKILLed
// serve never blocks the next), with our pid written inside for the
// commands that look for us. Another serve holding it is a *HeldError. The
// file itself is never removed: a removal would let two serves lock two
// different files of that name.
//
// A serve takes the lock before anything else: it must not open the
// database, listen, or touch serve.json before it knows it is the only one.
func Acquire(ctx context.Context, dir string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the serve lock %s: %w", path, err)
	}
	if err := flockExclusive(ctx, f); err != nil {
		defer f.Close()
		if errors.Is(err, errLockBusy) {
			e := &HeldError{DataDir: dir, PID: lockPID(f)}
			if info, err := ReadInfo(dir); err == nil && e.PID != 0 && info.PID == e.PID {
				e.URL = info.URL
			}
			return nil, e
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, fmt.Errorf("write the serve lock %s: %w", path, err)
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("write the serve lock %s: %w", path, err)
	}
	return &Lock{dir: dir, f: f}, nil
}

// Advertise writes serve.json naming url and this process, so commands of
// the data dir use this serve whatever its address: otherwise they would
// start the embedded default beside it, on the same database, and its
// dashboard would not show their events live.
func (l *Lock) Advertise(url string) error {
	return writeInfo(l.dir, Info{URL: url, PID: os.Getpid(), Started: time.Now().UTC()})
}

// Close withdraws serve.json and then releases the lock, in that order: once
// the lock is free the next serve may advertise, and we must not remove its
// serve.json. It is idempotent.
func (l *Lock) Close() error {
	var err error
	l.once.Do(func() {
		// Only the holder removes it: a refused serve never got a Lock.
		if rerr := os.Remove(filepath.Join(l.dir, InfoFile)); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = fmt.Errorf("remove %s: %w", InfoFile, rerr)
		}
		err = errors.Join(err, l.f.Close())
	})
	return err
}

// lockSettle bounds how long Acquire waits out probes' shared locks.
const lockSettle = 5 * time.Second

// flockExclusive takes f's exclusive flock without waiting on a serve: an
// exclusive holder (another serve) is errLockBusy at once. Commands probing
// for a serve (lockHolder) hold a shared lock for an instant; those are
// waited out, so a probe never makes a lone serve refuse to start.
func flockExclusive(ctx context.Context, f *os.File) error {
	fd := int(f.Fd())
	ctx, cancel := context.WithTimeout(ctx, lockSettle)
	defer cancel()
	for {
		err := flock(fd, lockEx|lockNb)
		if !errors.Is(err, errWouldBlock) {
			return err
		}
		// Held: a shared lock we can join means only probes hold it.
		switch err := flock(fd, lockSh|lockNb); {
		case errors.Is(err, errWouldBlock):
			return errLockBusy
		case err != nil:
			return err
		}
		// Let go before retrying, so two serves starting together cannot
		// keep each other out by both holding shared locks.
		if err := flock(fd, lockUn); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("still held by commands looking for a serve after %s: %w", lockSettle, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// lockHolder says whether a serve holds dir's lock, and its pid. The probe
// takes a shared lock for an instant when the lock is free; a serve
// starting at that moment waits it out (flockExclusive).
func lockHolder(dir string) (pid int, held bool) {
	f, err := os.Open(filepath.Join(dir, LockFile))
	if err != nil {
		return 0, false // no serve ever ran on this data dir
	}
	defer f.Close()
	switch err := flock(int(f.Fd()), lockSh|lockNb); {
	case err == nil:
		flock(int(f.Fd()), lockUn) //nolint:errcheck // closing releases it anyway
		return 0, false
	case !errors.Is(err, errWouldBlock):
		return 0, false
	}
	return lockPID(f), true
}

// lockPID reads the pid a serve wrote into its lock file; 0 if it has not
// yet.
func lockPID(f *os.File) int {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// writeInfo writes serve.json aside and renames it into place, so readers
// see the old file or the new one, never half of one.
func writeInfo(dir string, info Info) error {
	b, err := json.Marshal(info)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, InfoFile)
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
