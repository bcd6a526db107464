package forwarder

import (
	"github.com/claude-relay/claude-relay/internal/wire"

	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ledger is a backend that stores events idempotently by event_id and keeps
// every commit with its identity, so a test can check numbering per
// (session, interaction) and not only per session.
type ledger struct {
	srv *httptest.Server

	mu      sync.Mutex
	commits []Envelope     // first arrival of each event_id, in commit order, without event_data
	posts   map[string]int // arrivals per event_id, duplicates included
}

func newLedger(t *testing.T) *ledger {
	l := &ledger{posts: map[string]int{}}
	l.srv = httptest.NewServer(http.HandlerFunc(l.serve))
	t.Cleanup(l.srv.Close)
	return l
}

func (l *ledger) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // a producer killed mid-request
	}
	batch := strings.HasSuffix(r.URL.Path, "/batch")
	var envs []Envelope
	if batch {
		var b struct{ Events []Envelope }
		err = json.Unmarshal(body, &b)
		envs = b.Events
	} else {
		var e Envelope
		err = json.Unmarshal(body, &e)
		envs = []Envelope{e}
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	results := make([]wire.BatchResult, len(envs))
	l.mu.Lock()
	for i, e := range envs {
		l.posts[e.EventID]++
		res := wire.BatchResult{EventID: e.EventID, Status: http.StatusOK, Duplicate: true}
		if l.posts[e.EventID] == 1 {
			e.EventData = nil
			l.commits = append(l.commits, e)
			res.Status, res.Duplicate = http.StatusCreated, false
		}
		results[i] = res
	}
	l.mu.Unlock()
	if batch {
		_ = json.NewEncoder(w).Encode(wire.BatchResponse{Results: results})
		return
	}
	w.WriteHeader(results[0].Status)
	_ = json.NewEncoder(w).Encode(results[0])
}

// resent counts arrivals beyond the first, over all events.
func (l *ledger) resent() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.posts {
		n += c - 1
	}
	return n
}

func (l *ledger) snapshot() []Envelope {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Envelope(nil), l.commits...)
}

// accepted is one line a producer printed after Enqueue returned.
type accepted struct {
	id, session, interaction string
	seq                      int64
}

// producer is one run of the test binary as a producer process.
type producer struct {
	cmd     *exec.Cmd
	stderr  bytes.Buffer
	watch   string // the session whose first accepted event closes started
	started chan struct{}
	done    chan struct{} // closed when stdout is read to the end
	lines   []accepted
	bad     []string // lines that did not parse
}

func startProducer(t *testing.T, cfg producerConfig) *producer {
	t.Helper()
	env, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := &producer{watch: cfg.Sessions[0], started: make(chan struct{}), done: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], "-test.run=^$")
	p.cmd.Env = append(os.Environ(), producerEnv+"="+string(env))
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.cmd.Stderr = &p.stderr
	// The producer exits when its stdin closes: a test that dies cannot
	// leave it running. Wait closes this pipe.
	if _, err := p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.kill() }) // a no-op once killed and waited for
	go p.read(stdout)
	return p
}

func (p *producer) read(r io.Reader) {
	defer close(p.done)
	started := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 4096) // lines are ~100 bytes; longer is an error below
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 {
			p.bad = append(p.bad, sc.Text())
			continue
		}
		seq, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			p.bad = append(p.bad, sc.Text())
			continue
		}
		if f[2] == p.watch && !started {
			close(p.started)
			started = true
		}
		p.lines = append(p.lines, accepted{id: f[0], seq: seq, session: f[2], interaction: f[3]})
	}
	if err := sc.Err(); err != nil {
		p.bad = append(p.bad, "read: "+err.Error())
		_, _ = io.Copy(io.Discard, r) // let the producer die rather than block on a full pipe
	}
}

// kill SIGKILLs the producer's process group, reads its stdout to the end,
// then reaps it. It reports whether the producer was still running, as a
// killed producer must be.
func (p *producer) kill() (killed bool, err error) {
	if p.cmd.ProcessState != nil {
		return false, nil
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
	err = p.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true, nil
		}
	}
	return false, fmt.Errorf("producer ended on its own (%v); stderr:\n%s", err, p.stderr.String())
}

// TestCrashKeepsAcceptedEventsExactlyOnce SIGKILLs producer processes at
// random moments, each continuing on the spool of the last, then drains the
// spool with a clean Forwarder. Every event a producer reported accepted
// must reach the backend exactly once with the seq it was given, and per
// (session, interaction) the committed seqs must be 1..N in commit order. A
// kill between write(2) and the producer's print can leave an event
// committed but never reported accepted: allowed, as its seq is still unique
// and gap-free among the committed.
func TestCrashKeepsAcceptedEventsExactlyOnce(t *testing.T) {
	const kills = 6
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	backend := newLedger(t)
	cfg := producerConfig{Dir: t.TempDir(), URL: backend.srv.URL,
		Sessions:     []string{"s-1", "s/2", "s%ü.3"}, // IDs that need escaping on disk
		Interactions: []string{"i1", "i2"}}
	var acc []accepted
	for round := range kills {
		cfg.Seed = seed + uint64(round)
		cfg.FirstPad = 0
		if round < 3 {
			cfg.FirstPad = 3 << 20 // three of these roll the first session's segment
		}
		p := startProducer(t, cfg)
		select {
		case <-p.started:
		case <-p.done:
		case <-time.After(20 * time.Second):
			t.Error("producer accepted nothing in 20s")
		}
		time.Sleep(time.Duration(50+rng.IntN(251)) * time.Millisecond)
		killed, err := p.kill()
		if err != nil || !killed {
			t.Fatalf("round %d: %v", round, err)
		}
		if len(p.bad) > 0 {
			t.Fatalf("round %d: bad producer output %q", round, p.bad)
		}
		t.Logf("round %d: %d events accepted before SIGKILL", round, len(p.lines))
		acc = append(acc, p.lines...)
	}
	segs := newestSegments(t, cfg.Dir)
	if segs[escapeID(cfg.Sessions[0])] < 2 {
		t.Errorf("session %s never rolled a segment (%v): the seq snapshot went untested", cfg.Sessions[0], segs)
	}
	if len(segs) != len(cfg.Sessions) {
		t.Errorf("spools %v for %d sessions: a killed producer's lock outlived it", segs, len(cfg.Sessions))
	}

	f, err := Open(producerOpts(cfg.Dir, backend.srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	f.Start()
	if err := f.Stop(ctxTimeout(t, 30*time.Second)); err != nil {
		t.Fatalf("draining the crashed spool: %v", err)
	}
	checkCrashLedger(t, acc, backend.snapshot(), kills*len(cfg.Sessions))
	t.Logf("%d events re-sent after a crash (de-duplicated by the backend)", backend.resent())
}

// newestSegments lists each session's newest segment number: above 1, the
// spool rolled and recovery relied on the seq snapshot.
func newestSegments(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	root := filepath.Join(dir, "sessions")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, e := range entries {
		segs, _ := filepath.Glob(filepath.Join(root, e.Name(), segPrefix+"*"+segSuffix))
		for _, s := range segs {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(s), segPrefix), segSuffix), 10, 64)
			out[e.Name()] = max(out[e.Name()], n)
		}
	}
	return out
}

// checkCrashLedger checks commits against what producers accepted;
// maxUnreported bounds events committed without being reported accepted
// (at most one per enqueueing goroutine per kill).
func checkCrashLedger(t *testing.T, acc []accepted, commits []Envelope, maxUnreported int) {
	t.Helper()
	type key struct{ session, interaction string }
	byID := map[string]Envelope{}
	next := map[key]int64{}
	for i, c := range commits {
		byID[c.EventID] = c
		k := key{c.SessionID, c.InteractionID}
		if c.Seq != next[k]+1 {
			t.Fatalf("commit %d: %s/%s seq %d after %d (gap, duplicate or out of order)", i, k.session, k.interaction, c.Seq, next[k])
		}
		next[k] = c.Seq
	}
	seen := map[string]bool{}
	for _, a := range acc {
		if seen[a.id] {
			t.Fatalf("event %s accepted twice", a.id)
		}
		seen[a.id] = true
		c, ok := byID[a.id]
		switch {
		case !ok:
			t.Errorf("accepted event %s (%s/%s seq %d) never reached the backend", a.id, a.session, a.interaction, a.seq)
		case c.SessionID != a.session || c.InteractionID != a.interaction || c.Seq != a.seq:
			t.Errorf("accepted event %s as %s/%s seq %d, committed as %s/%s seq %d",
				a.id, a.session, a.interaction, a.seq, c.SessionID, c.InteractionID, c.Seq)
		}
	}
	unreported := len(commits) - len(seen)
	if unreported < 0 || unreported > maxUnreported {
		t.Errorf("%d events committed but never reported accepted (at most %d kills can cause)", unreported, maxUnreported)
	}
	t.Logf("%d events accepted, %d committed (%d without an accepted line), %d (session, interaction) streams",
		len(acc), len(commits), unreported, len(next))
}
