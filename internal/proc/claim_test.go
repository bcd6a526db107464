//go:build linux

package proc

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func claimDead(t *testing.T, r Registry, may func(Record) bool) []*Claim {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	claims, err := r.ClaimDead(ctx, 100*time.Millisecond, may)
	if err != nil {
		t.Fatal(err)
	}
	return claims
}

func anyRun(Record) bool { return true }

// deadHelper is the identity of a helper that is gone: our pid with another
// start time, as a pid reused after the helper died looks.
func deadHelper() Proc {
	self := mustSelf()
	return Proc{PID: self.PID, StartTime: self.StartTime + 1}
}

func files(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// A helper that names its run's spool is SIGKILLed mid-run: the next start's
// Cleanup stops the orphans but keeps the record, ClaimDead hands the run
// over once, and Done removes it for good.
func TestClaimDeadCrashedHelper(t *testing.T) {
	r := Registry{Dir: t.TempDir()}
	runID := newRunID(t)
	h := start(t, modeHelper, nil, "REGISTRY_DIR="+r.Dir, "RUN_ID="+runID, "HELPER_IGNORE=1",
		"SPOOL_SESSION=sess-1", "SPOOL_INTERACTION=inter-2")
	ps := h.readPids(t)
	if err := syscall.Kill(h.proc.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = h.wait()

	if rep := cleanup(t, r); rep.Stale != 1 || rep.Killed < 2 || len(rep.Errors) != 0 {
		t.Errorf("Cleanup report = %+v, want 1 stale, >= 2 killed, no errors", rep)
	}
	if Alive(ps[0]) || Alive(ps[1]) {
		t.Fatalf("orphans survived Cleanup: cli %v, tool %v", Alive(ps[0]), Alive(ps[1]))
	}
	if !exists(t, filepath.Join(r.Dir, runID+".json")) {
		t.Fatal("Cleanup removed the record of a run whose end is not posted yet")
	}

	before := time.Now()
	claims := claimDead(t, r, anyRun)
	if len(claims) != 1 {
		t.Fatalf("claimed %d runs, want 1", len(claims))
	}
	c := claims[0]
	if c.RunID != runID || c.Helper != h.proc || c.Spool != (SpoolKey{SessionID: "sess-1", InteractionID: "inter-2"}) {
		t.Errorf("claim = %+v, want run %s of helper %v in sess-1/inter-2", c.Record, runID, h.proc)
	}
	if c.StoppedAt.Before(before) {
		t.Errorf("StoppedAt %v is before the claim began (%v)", c.StoppedAt, before)
	}
	if again := claimDead(t, r, anyRun); len(again) != 0 {
		t.Errorf("a held claim was claimed again: %+v", again)
	}
	if err := c.Done(); err != nil {
		t.Fatal(err)
	}
	if names := files(t, r.Dir); len(names) != 0 {
		t.Errorf("registry holds %v after Done, want nothing", names)
	}
	if err := c.Done(); err != nil {
		t.Errorf("second Done: %v", err)
	}
}

// What ClaimDead leaves alone: live helpers' runs, runs with no spool key
// (Cleanup's alone), runs may refuses (another process holds their spool),
// and claims of a live holder. A dead holder's claim is taken over.
func TestClaimDeadChoosesRuns(t *testing.T) {
	r := Registry{Dir: t.TempDir()}
	other := start(t, modeSleep, nil)
	key := SpoolKey{SessionID: "s", InteractionID: "i"}
	records := []Record{
		{RunID: "live", Helper: mustSelf(), Spool: key},
		{RunID: "no-key", Helper: deadHelper()},
		{RunID: "refused", Helper: deadHelper(), Spool: SpoolKey{SessionID: "held-elsewhere", InteractionID: "i"}},
		{RunID: "dead", Helper: deadHelper(), Spool: key},
	}
	for _, rec := range records {
		if err := r.Register(rec); err != nil {
			t.Fatal(err)
		}
	}
	// Claims as a crashed claimer and a live one left them.
	for holder, runID := range map[Proc]string{deadHelper(): "taken-over", other.proc: "held"} {
		if err := r.Register(Record{RunID: runID, Helper: deadHelper(), Spool: key}); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(r.Dir, runID+".json"), filepath.Join(r.Dir, claimName(runID+".json", holder))); err != nil {
			t.Fatal(err)
		}
	}
	claims := claimDead(t, r, func(rec Record) bool { return rec.Spool.SessionID != "held-elsewhere" })
	var got []string
	for _, c := range claims {
		got = append(got, c.RunID)
		if err := c.Done(); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"dead", "taken-over"}; !slices.Equal(got, want) {
		t.Errorf("claimed %v, want %v", got, want)
	}
	want := []string{claimName("held.json", other.proc), "live.json", "no-key.json", "refused.json"}
	if names := files(t, r.Dir); !slices.Equal(names, want) {
		t.Errorf("registry holds %v, want %v", names, want)
	}
}

// Helpers start at once after a crash: each run of the dead helper is
// claimed by exactly one of them.
func TestClaimDeadOnce(t *testing.T) {
	r := Registry{Dir: t.TempDir()}
	var runIDs []string
	for i := range 20 {
		id := fmt.Sprintf("run-%02d", i)
		runIDs = append(runIDs, id)
		if err := r.Register(Record{RunID: id, Helper: deadHelper(), Spool: SpoolKey{SessionID: "s", InteractionID: id}}); err != nil {
			t.Fatal(err)
		}
	}
	type claimer struct {
		cmd *exec.Cmd
		in  io.WriteCloser
		out *bufio.Reader
	}
	var cs []claimer
	for range 4 {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), helperEnv+"="+modeClaim, "REGISTRY_DIR="+r.Dir)
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		cs = append(cs, claimer{cmd, in, bufio.NewReader(out)})
	}
	for _, c := range cs { // all started: go
		if _, err := io.WriteString(c.in, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, c := range cs {
		line, err := c.out.ReadString('\n')
		if err != nil {
			t.Fatalf("claimer: %v", err)
		}
		got = append(got, strings.Fields(line)...)
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("claimer: %v", err)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, runIDs) {
		t.Errorf("claimed %v, want each of %v exactly once", got, runIDs)
	}
	if names := files(t, r.Dir); len(names) != 0 {
		t.Errorf("registry holds %v, want nothing", names)
	}
}

// claimHelper is modeClaim: wait for the word, claim, finish, report.
func claimHelper(dir string) int {
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fmt.Fprintln(os.Stderr, "claim: read stdin:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	claims, err := Registry{Dir: dir}.ClaimDead(ctx, 10*time.Millisecond, func(Record) bool { return true })
	if err != nil {
		fmt.Fprintln(os.Stderr, "claim:", err)
		return 1
	}
	var ids []string
	for _, c := range claims {
		if err := c.Done(); err != nil {
			fmt.Fprintln(os.Stderr, "claim:", err)
			return 1
		}
		ids = append(ids, c.RunID)
	}
	fmt.Println(strings.Join(ids, " "))
	return 0
}

// A record of a live helper written after ClaimDead read the dead one's
// (a run ID reused at once) is given back, not claimed.
func TestClaimDeadGivesBackLiveRecord(t *testing.T) {
	r := Registry{Dir: t.TempDir()}
	key := SpoolKey{SessionID: "s", InteractionID: "i"}
	if err := r.Register(Record{RunID: "r", Helper: deadHelper(), Spool: key}); err != nil {
		t.Fatal(err)
	}
	live := Record{RunID: "r", Helper: mustSelf(), Spool: key}
	claims := claimDead(t, r, func(Record) bool {
		// Between ClaimDead's read and its rename, a live helper starts
		// a run of the same ID.
		if err := r.Register(live); err != nil {
			t.Error(err)
		}
		return true
	})
	if len(claims) != 0 {
		t.Errorf("claimed %+v, want nothing", claims)
	}
	rec, err := readRecord(filepath.Join(r.Dir, "r.json"))
	if err != nil || rec != live {
		t.Errorf("record = %+v, %v; want the live one back", rec, err)
	}
	if names := files(t, r.Dir); !slices.Equal(names, []string{"r.json"}) {
		t.Errorf("registry holds %v, want only r.json", names)
	}
}

func TestParseClaim(t *testing.T) {
	p := Proc{PID: 4321, StartTime: 987654}
	for _, name := range []string{"r.json", "a.b%2Fc.json", "run-1.json"} {
		got, holder, ok := parseClaim(claimName(name, p))
		if !ok || got != name || holder != p {
			t.Errorf("parseClaim(claimName(%q)) = %q, %v, %v", name, got, holder, ok)
		}
	}
	for _, bad := range []string{"r.json.claimed", "r.json.12.claimed", "r.txt.1-2.claimed", "r.json.x-2.claimed", "r.json.0-2.claimed", ".claimed"} {
		if _, _, ok := parseClaim(bad); ok {
			t.Errorf("parseClaim(%q) accepted it", bad)
		}
	}
}

// A corrupt record is Cleanup's; a dead holder's corrupt claim is reported
// once and removed.
func TestClaimDeadCorruptFiles(t *testing.T) {
	r := Registry{Dir: t.TempDir()}
	corrupt := map[string]string{
		"bad.json":                           "{not json",
		claimName("gone.json", deadHelper()): "{not json",
	}
	for name, content := range corrupt {
		if err := os.WriteFile(filepath.Join(r.Dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	claims, err := r.ClaimDead(ctx, time.Millisecond, anyRun)
	if len(claims) != 0 || err == nil || !strings.Contains(err.Error(), "gone.json") || strings.Contains(err.Error(), "bad.json") {
		t.Errorf("ClaimDead = %v, %v; want no claims and an error about the corrupt claim only", claims, err)
	}
	if names := files(t, r.Dir); !slices.Equal(names, []string{"bad.json"}) {
		t.Errorf("registry holds %v, want only bad.json (for Cleanup)", names)
	}
}
