//go:build linux

package proc

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRegistryRegister(t *testing.T) {
	r := Registry{Dir: filepath.Join(t.TempDir(), "runs")}
	rec := Record{
		RunID:   "run-1",
		Helper:  Proc{PID: 10, StartTime: 20},
		CLI:     Proc{PID: 11, StartTime: 21},
		PGID:    11,
		Started: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
	}
	if err := r.Register(rec); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(r.Dir, "run-1.json")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got Record
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got != rec {
		t.Errorf("stored %+v, want %+v", got, rec)
	}
	if entries, _ := os.ReadDir(r.Dir); len(entries) != 1 {
		t.Errorf("registry holds %d files, want 1 (no temp files left)", len(entries))
	}
	for range 2 { // the second time the record is already gone
		if err := r.Unregister("run-1"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("record still there after Unregister: %v", err)
	}
}

// A record that cannot be written fails Register with an error naming the
// run, and leaves no temp file that Cleanup would have to age out.
func TestRegistryRegisterFails(t *testing.T) {
	r := Registry{Dir: t.TempDir()}
	// A directory where the record goes makes the final rename fail.
	if err := os.Mkdir(filepath.Join(r.Dir, "run-1.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	err := r.Register(Record{RunID: "run-1"})
	if err == nil || !strings.Contains(err.Error(), `"run-1"`) || !strings.Contains(err.Error(), r.Dir) {
		t.Fatalf("Register error = %v, want one naming run \"run-1\" and %s", err, r.Dir)
	}
	if entries, _ := os.ReadDir(r.Dir); len(entries) != 1 {
		t.Errorf("registry holds %d entries, want only the directory (no temp files left)", len(entries))
	}
}

func TestFileName(t *testing.T) {
	tests := []struct {
		runID, want string
		err         bool
	}{
		{runID: "3f2a-B_c.d", want: "3f2a-B_c.d.json"},
		{runID: "../etc/x", want: "%2E.%2Fetc%2Fx.json"},
		{runID: "a b%", want: "a%20b%25.json"},
		{runID: "", err: true},
		{runID: "a\x00b", err: true},
		{runID: string(make([]byte, 300)), err: true},
	}
	for _, tt := range tests {
		got, err := fileName(tt.runID)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("fileName(%q) = %q, %v; want %q, error %v", tt.runID, got, err, tt.want, tt.err)
		}
		if err != nil && !errors.Is(err, ErrInvalidRunID) {
			t.Errorf("fileName(%q) error %v is not ErrInvalidRunID", tt.runID, err)
		}
	}
}

func cleanup(t *testing.T, r Registry) CleanupReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rep, err := r.Cleanup(ctx, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Stat(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// A helper is SIGKILLed with its CLI and a setsid'd tool command still
// running; the next helper's Cleanup must stop them.
func TestCleanupCrashedHelper(t *testing.T) {
	r := Registry{Dir: t.TempDir()}
	runID := newRunID(t)
	h := start(t, modeHelper, nil, "REGISTRY_DIR="+r.Dir, "RUN_ID="+runID, "HELPER_IGNORE=1")
	ps := h.readPids(t)
	cli, gc := ps[0], ps[1]

	if err := syscall.Kill(h.proc.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = h.wait()
	// Pdeathsig's SIGTERM is ignored by this CLI: both survive the helper.
	if !Alive(cli) || !Alive(gc) {
		t.Fatalf("orphans already gone (cli %v, tool %v): the test proves nothing", Alive(cli), Alive(gc))
	}

	rep := cleanup(t, r)
	if rep.Examined != 1 || rep.Stale != 1 || rep.Killed < 2 || len(rep.Errors) != 0 {
		t.Errorf("report = %+v, want 1 examined, 1 stale, >= 2 killed, no errors", rep)
	}
	if Alive(cli) || Alive(gc) {
		t.Errorf("survivors: cli %v, tool %v", Alive(cli), Alive(gc))
	}
	if ms, err := FindMarked(runID); err != nil || len(ms) != 0 {
		t.Errorf("marked processes after Cleanup: %v, %v", ms, err)
	}
	if exists(t, filepath.Join(r.Dir, runID+".json")) {
		t.Error("record not removed")
	}
}

func TestCleanupLeavesLiveHelpers(t *testing.T) {
	r := Registry{Dir: t.TempDir()}
	otherHelper := start(t, modeSleep, nil)
	for _, helper := range []Proc{mustSelf(), otherHelper.proc} {
		runID := newRunID(t)
		c := start(t, modeSleep, SysProcAttr(), MarkerEnvEntry(runID))
		rec := Record{RunID: runID, Helper: helper, CLI: c.proc, PGID: c.proc.PID, Started: time.Now()}
		if err := r.Register(rec); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if !Alive(c.proc) {
				t.Errorf("run of live helper %v was killed", helper)
			}
			if !exists(t, filepath.Join(r.Dir, runID+".json")) {
				t.Errorf("record of live helper %v removed", helper)
			}
		}()
	}
	rep := cleanup(t, r)
	if rep.Examined != 2 || rep.Stale != 0 || rep.Killed != 0 || len(rep.Errors) != 0 {
		t.Errorf("report = %+v, want 2 examined, nothing else", rep)
	}
}

// The recorded pids were reused by processes that are not the run's: nothing
// may be killed by pid or group.
func TestCleanupReusedPID(t *testing.T) {
	r := Registry{Dir: t.TempDir()}
	self := mustSelf()
	victim := start(t, modeSleep, &syscall.SysProcAttr{Setpgid: true})
	runID := newRunID(t)
	rec := Record{
		RunID:  runID,
		Helper: Proc{PID: self.PID, StartTime: self.StartTime + 1},
		CLI:    Proc{PID: victim.proc.PID, StartTime: victim.proc.StartTime + 1},
		PGID:   victim.proc.PID,
	}
	if err := r.Register(rec); err != nil {
		t.Fatal(err)
	}
	rep := cleanup(t, r)
	if rep.Examined != 1 || rep.Stale != 1 || rep.Killed != 0 || len(rep.Errors) != 0 {
		t.Errorf("report = %+v, want 1 examined, 1 stale, none killed", rep)
	}
	if !Alive(victim.proc) {
		t.Error("a process with a reused pid was killed")
	}
	if exists(t, filepath.Join(r.Dir, runID+".json")) {
		t.Error("stale record not removed")
	}
}

func TestCleanupCorruptRecords(t *testing.T) {
	r := Registry{Dir: t.TempDir()}
	files := map[string]string{
		"bad.json":      "{not json",
		"renamed.json":  `{"runID":"other"}`,
		"empty-id.json": `{"runID":""}`,
		"notes.txt":     "not a record",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(r.Dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rep := cleanup(t, r)
	if rep.Examined != 3 || rep.Stale != 0 || len(rep.Errors) != 3 {
		t.Errorf("report = %+v, want 3 examined, 3 errors", rep)
	}
	for _, err := range rep.Errors {
		if re := (*RecordError)(nil); !errors.As(err, &re) {
			t.Errorf("error %v is not a *RecordError", err)
		}
	}
	for name := range files {
		if want := name == "notes.txt"; exists(t, filepath.Join(r.Dir, name)) != want {
			t.Errorf("%s exists = %v, want %v", name, !want, want)
		}
	}
}

func TestRegistryNoDir(t *testing.T) {
	var r Registry
	if err := r.Register(Record{RunID: "x"}); !errors.Is(err, errNoDir) {
		t.Errorf("Register error = %v, want errNoDir", err)
	}
	if _, err := r.Cleanup(context.Background(), 0); !errors.Is(err, errNoDir) {
		t.Errorf("Cleanup error = %v, want errNoDir", err)
	}
}

func TestCleanupMissingDir(t *testing.T) {
	rep := cleanup(t, Registry{Dir: filepath.Join(t.TempDir(), "none")})
	if rep.Examined != 0 {
		t.Errorf("report = %+v, want empty", rep)
	}
}
