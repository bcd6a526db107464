package proc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/claude-relay/claude-relay/internal/fsutil"
)

// Record is what the registry keeps about one live run: enough to find and
// kill its processes after the helper that started it has died.
type Record struct {
	RunID string `json:"runID"`
	// Token is the run's TokenEnv value: only processes carrying it too are
	// the run's. Records written before tokens existed have none; their
	// runs are found by the run ID alone.
	Token   string    `json:"token,omitempty"`
	Helper  Proc      `json:"helper"` // the helper process that owns the run
	CLI     Proc      `json:"cli"`
	PGID    int       `json:"pgid"`
	Started time.Time `json:"started"`
	// Spool is where the run's events go. When the helper dies while the
	// run is live, the next start posts the run's end there (ClaimDead);
	// a record without one (written before this existed, or of a run with
	// nowhere to post) is removed once its processes are stopped.
	Spool SpoolKey `json:"spool,omitzero"`
}

// SpoolKey is where a run's events go in the spool: the session (the
// forwarder keeps one spool per session) and the interaction of the turn
// that runs now (the forwarder numbers seq per interaction). Never a
// credential: whoever posts for a dead helper posts with its own.
type SpoolKey struct {
	SessionID     string `json:"sessionID"`
	InteractionID string `json:"interactionID"`
}

// Registry keeps one file per live run in Dir (for example <data_dir>/runs),
// so the next helper start can kill what a crashed helper left behind.
type Registry struct {
	Dir string
}

// RecordError is a problem with one record found by Cleanup.
type RecordError struct {
	File  string // path of the record file
	RunID string // empty if the file could not be read
	Err   error
}

func (e *RecordError) Error() string {
	if e.RunID == "" {
		return fmt.Sprintf("proc: run record %s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("proc: run record %s (run %q): %v", e.File, e.RunID, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }

// CleanupReport says what Cleanup found and did.
type CleanupReport struct {
	Examined int // record files looked at
	Stale    int // records whose helper was dead
	Killed   int // processes signalled while stopping stale runs
	Errors   []error
}

const (
	recordExt = ".json"
	// tmpPrefix starts the temp files of fsutil.WriteFileAtomic, which
	// Cleanup must not take for records.
	tmpPrefix = "."
	// maxRunIDFile keeps the escaped name, extension and temp suffix under the
	// usual 255-byte limit on a file name.
	maxRunIDFile = 200
	// tmpMaxAge is how old a temp file of an interrupted Register must be
	// before Cleanup removes it: younger ones may belong to a live helper.
	tmpMaxAge = time.Hour
)

// errNoDir is returned by a Registry without a directory: writing records
// into the working directory would hide them from the next start.
var errNoDir = errors.New("proc: run registry has no directory (set Registry.Dir)")

// Register writes the record of a run to <Dir>/<runID>.json (mode 0600,
// creating Dir with 0700), replacing any earlier one for the same run. The
// file appears complete or not at all.
func (r Registry) Register(rec Record) error {
	if r.Dir == "" {
		return errNoDir
	}
	name, err := fileName(rec.RunID)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("proc: encode record of run %q: %w", rec.RunID, err)
	}
	if err := os.MkdirAll(r.Dir, 0o700); err != nil {
		return fmt.Errorf("proc: create run registry: %w", err)
	}
	// The file appears complete or not at all, so Cleanup never reads half a
	// record.
	if err := fsutil.WriteFileAtomic(filepath.Join(r.Dir, name), b); err != nil {
		return fmt.Errorf("proc: write the record of run %q in %s (is the data dir writable?): %w", rec.RunID, r.Dir, err)
	}
	return nil
}

// Unregister removes the record of a run. A missing record is not an error.
func (r Registry) Unregister(runID string) error {
	if r.Dir == "" {
		return errNoDir
	}
	name, err := fileName(runID)
	if err != nil {
		return err
	}
	err = os.Remove(filepath.Join(r.Dir, name))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("proc: remove record of run %q: %w", runID, err)
	}
	return nil
}

// Cleanup stops the runs of helpers that are no longer alive and removes
// their records; records of live helpers, including another helper running
// now, are left alone. Each stale run is stopped with KillAll (gap apart, all
// runs at once) using only what can still be proven to be the run's:
//   - the CLI, if it is alive with the recorded start time;
//   - the group, if the CLI leads it or a marked process is in it;
//   - every process carrying the run's marker.
//
// A record is removed once nothing of its run is alive, and kept for the next
// Cleanup if something survived. A record with a Spool key stays after its
// run was stopped, for ClaimDead: the backend must still hear that the run
// ended, and only a process that holds the run's spool can tell it.
// Unreadable or corrupt record files are reported in the report's Errors
// and removed. The error is for a registry
// that cannot be listed; a missing directory is an empty registry.
func (r Registry) Cleanup(ctx context.Context, gap time.Duration) (CleanupReport, error) {
	var rep CleanupReport
	if r.Dir == "" {
		return rep, errNoDir
	}
	entries, err := os.ReadDir(r.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return rep, nil
	}
	if err != nil {
		return rep, fmt.Errorf("proc: list run registry: %w", err)
	}
	var stale []string
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(r.Dir, name)
		switch {
		case e.IsDir():
			continue
		case strings.HasPrefix(name, tmpPrefix):
			removeOldTemp(path, e)
			continue
		case !strings.HasSuffix(name, recordExt):
			continue
		}
		rep.Examined++
		rec, err := readRecord(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed by another helper meanwhile
		}
		if err != nil {
			rep.Errors = append(rep.Errors, err)
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				rep.Errors = append(rep.Errors, &RecordError{File: path, Err: fmt.Errorf("remove: %w", err)})
			}
			continue
		}
		if Alive(rec.Helper) {
			continue
		}
		rep.Stale++
		stale = append(stale, path)
	}
	results := make([]stopResult, len(stale))
	var wg sync.WaitGroup
	for i, path := range stale {
		wg.Go(func() { results[i] = stopStale(ctx, path, gap) })
	}
	wg.Wait()
	for _, res := range results {
		rep.Killed += res.killed
		if res.err != nil {
			rep.Errors = append(rep.Errors, res.err)
		}
	}
	return rep, nil
}

type stopResult struct {
	killed int
	err    error
}

// stopStale kills the run of a stale record and removes the record. It
// reads the record again so that a record a helper re-registered meanwhile
// is judged on its new contents.
func stopStale(ctx context.Context, path string, gap time.Duration) stopResult {
	rec, err := readRecord(path)
	if errors.Is(err, fs.ErrNotExist) {
		return stopResult{} // another helper cleaned it up
	}
	if err != nil {
		return stopResult{err: err}
	}
	if Alive(rec.Helper) {
		return stopResult{}
	}
	signalled, err := killAll(ctx, staleTree(rec), gap)
	res := stopResult{killed: len(signalled)}
	if err != nil {
		res.err = &RecordError{File: path, RunID: rec.RunID, Err: fmt.Errorf("stop leftover processes (record kept for the next start): %w", err)}
		return res
	}
	if rec.Spool != (SpoolKey{}) {
		return res // the run's end is still to be posted: ClaimDead's
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		res.err = &RecordError{File: path, RunID: rec.RunID, Err: fmt.Errorf("remove: %w", err)}
	}
	return res
}

// staleTree builds the tree of a run whose helper is gone, keeping only what
// still provably belongs to the run: a recorded pid or group may have been
// reused since.
func staleTree(rec Record) Tree {
	t := Tree{RunID: rec.RunID, Token: rec.Token}
	cliAlive := Alive(rec.CLI)
	if cliAlive {
		t.Root = rec.CLI
	}
	if cliAlive && rec.CLI.PID == rec.PGID {
		t.PGID = rec.PGID
		return t
	}
	// The marked members only (no root, no group yet); none on platforms
	// that cannot find marked processes.
	marked := Tree{RunID: rec.RunID, Token: rec.Token}.Members()
	for _, p := range marked {
		if g, ok := pgrpOf(p); ok && g == rec.PGID {
			t.PGID = rec.PGID
			break
		}
	}
	return t
}

func readRecord(path string) (Record, error) {
	return readRecordAs(path, filepath.Base(path))
}

// readRecordAs reads the record in path, which must be that of the record
// file name (a claim file holds the record it was renamed from).
func readRecordAs(path, name string) (Record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Record{}, err
		}
		return Record{}, &RecordError{File: path, Err: err}
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return Record{}, &RecordError{File: path, Err: fmt.Errorf("corrupt record: %w", err)}
	}
	// The file name must be the one Register would have used, which also
	// rejects an empty run ID (it would match every empty marker).
	if want, err := fileName(rec.RunID); err != nil || want != name {
		return Record{}, &RecordError{File: path, RunID: rec.RunID, Err: errors.New("corrupt record: run ID does not match the file name")}
	}
	return rec, nil
}

func removeOldTemp(path string, e fs.DirEntry) {
	if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > tmpMaxAge {
		os.Remove(path)
	}
}

// fileName returns the record file name of a run. Run IDs come from the
// client, so every byte outside [A-Za-z0-9._-], and a leading '.', is
// escaped as %XX: names stay readable for the usual UUIDs, and distinct run
// IDs never share a file.
func fileName(runID string) (string, error) {
	if runID == "" || strings.IndexByte(runID, 0) >= 0 {
		return "", fmt.Errorf("%w: %q (empty or contains NUL)", ErrInvalidRunID, runID)
	}
	var b strings.Builder
	for i := 0; i < len(runID); i++ {
		c := runID[i]
		if c == '-' || c == '_' || c == '.' && i > 0 || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	if b.Len() > maxRunIDFile {
		return "", fmt.Errorf("%w: %q is too long for a file name", ErrInvalidRunID, runID)
	}
	return b.String() + recordExt, nil
}

// KillOwn sends SIGKILL, once, to the whole tree of every run this process
// recorded: the last resort of a forced exit, which cannot wait for the
// graceful stop. It returns how many runs it found.
func (r Registry) KillOwn() int {
	entries, err := os.ReadDir(r.Dir)
	if err != nil {
		return 0
	}
	self, err := Lookup(os.Getpid())
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), recordExt) || strings.HasPrefix(e.Name(), tmpPrefix) {
			continue
		}
		rec, err := readRecord(filepath.Join(r.Dir, e.Name()))
		if err != nil || rec.Helper != self {
			continue
		}
		KillNow(staleTree(rec))
		n++
	}
	return n
}
