package forwarder

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

const lastErrorFile = "last_error"

// SessionStatus is what `spool status` shows for one session.
type SessionStatus struct {
	SessionID    string    `json:"session_id"`
	Backend      string    `json:"backend"` // the destination its events wait for; "" when not recorded (an older spool)
	Pending      int64     `json:"pending"`
	PendingBytes int64     `json:"pending_bytes"`
	DeadLettered int64     `json:"dead_lettered"` // Oversize included
	Oversize     int64     `json:"oversize"`      // kept whole after a 413; the backend has a stand-in
	LastError    string    `json:"last_error,omitempty"`
	LastErrorAt  time.Time `json:"last_error_at,omitzero"`
	Delivering   bool      `json:"delivering"` // a live process holds the session
}

// Inspect reads a spool without changing it, whether or not a helper is
// delivering from it. It counts pending records by reading them, so it is
// for diagnostics, not for hot paths.
func Inspect(dir string) ([]SessionStatus, error) {
	root := filepath.Join(dir, "sessions")
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read spool %s: %w", dir, err)
	}
	var out []SessionStatus
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		sdir := filepath.Join(root, e.Name())
		id, err := os.ReadFile(filepath.Join(sdir, idFile))
		if err != nil {
			continue
		}
		st := SessionStatus{SessionID: string(id), Backend: readDest(sdir), Delivering: locked(sdir)}
		st.Pending, st.PendingBytes = countPending(sdir)
		if !strings.Contains(e.Name(), "~") {
			st.Oversize = countLines(filepath.Join(dir, "dead", e.Name()+oversizeSuffix))
			st.DeadLettered = countLines(filepath.Join(dir, "dead", e.Name()+".jsonl")) + st.Oversize
		}
		if b, err := os.ReadFile(filepath.Join(sdir, lastErrorFile)); err == nil {
			ts, msg, _ := strings.Cut(string(b), " ")
			st.LastErrorAt, _ = time.Parse(time.RFC3339, ts)
			st.LastError = msg
		}
		if st.Pending > 0 || st.DeadLettered > 0 || st.LastError != "" {
			out = append(out, st)
		}
	}
	slices.SortFunc(out, func(a, b SessionStatus) int {
		return cmp.Or(strings.Compare(a.SessionID, b.SessionID), strings.Compare(a.Backend, b.Backend))
	})
	return out, nil
}

func locked(sdir string) bool {
	f, err := os.Open(filepath.Join(sdir, lockFile))
	if err != nil {
		return false
	}
	defer f.Close()
	return lockedElsewhere(f)
}

func countPending(sdir string) (n, size int64) {
	for _, u := range unackedSegments(sdir) {
		f, err := os.Open(u.path)
		if err != nil {
			continue
		}
		r := newSegmentReader(io.NewSectionReader(f, u.start, u.size-u.start), u.start, u.size)
		for {
			if _, _, err := r.next(); err != nil {
				break
			}
			n++
		}
		size += u.size - u.start
		f.Close()
	}
	return n, size
}

// unacked is a segment file with records not yet acknowledged: those from
// start (the ack's offset in the ack's own segment, else 0) to size.
type unacked struct {
	path        string
	start, size int64
}

// unackedSegments lists a session spool's segments at or after its ack,
// from the ack file and the directory alone.
func unackedSegments(sdir string) []unacked {
	var ack pos
	if f, err := os.Open(filepath.Join(sdir, ackFile)); err == nil {
		ack = readAck(f)
		f.Close()
	}
	entries, _ := os.ReadDir(sdir)
	var out []unacked
	for _, e := range entries {
		num, ok := strings.CutPrefix(e.Name(), segPrefix)
		if !ok {
			continue
		}
		seg, err := strconv.ParseInt(strings.TrimSuffix(num, segSuffix), 10, 64)
		if err != nil || seg < ack.seg {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		u := unacked{path: filepath.Join(sdir, e.Name()), size: fi.Size()}
		if seg == ack.seg {
			u.start = min(ack.off, u.size)
		}
		out = append(out, u)
	}
	return out
}

func countLines(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	var n int64
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxRecord+4096)
	for sc.Scan() {
		n++
	}
	return n
}

// RequeueDeadLetters puts dead-lettered events back at the end of their
// sessions' spools, unchanged (same event_id and seq, so the backend still
// de-duplicates), and removes them from the dead-letter files. It returns
// how many. Only dead letters of this forwarder's destination are
// re-queued (and those of destinations Options.Move takes, and those that
// name none, from before destinations were recorded); the others stay.
// Events kept after a 413 stay where they are: the backend holds their
// stand-ins under their event_ids, so it would take them as duplicates.
func (f *Forwarder) RequeueDeadLetters() (int, error) {
	dead := filepath.Join(f.opts.Dir, "dead")
	entries, err := os.ReadDir(dead)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read dead letters: %w", err)
	}
	total := 0
	for _, e := range entries {
		path := filepath.Join(dead, e.Name())
		n, err := f.requeueFile(path)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func (f *Forwarder) requeueFile(path string) (int, error) {
	if strings.Contains(filepath.Base(path), ".requeue-") {
		return 0, nil // another process is re-queueing this one
	}
	if strings.HasSuffix(path, oversizeSuffix) {
		return 0, nil
	}
	// Take the file away first: dead letters written meanwhile start a new
	// file instead of being read twice or deleted unread.
	taken := fmt.Sprintf("%s.requeue-%d", path, os.Getpid())
	if err := os.Rename(path, taken); err != nil {
		return 0, fmt.Errorf("take dead letters: %w", err)
	}
	fh, err := os.Open(taken)
	if err != nil {
		return 0, fmt.Errorf("open dead letters: %w", err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64<<10), maxRecord+4096)
	n := 0
	var kept [][]byte // dead letters of other backends: they go back
	for sc.Scan() {
		var d struct {
			Backend  string          `json:"backend"`
			Envelope json.RawMessage `json:"envelope"`
		}
		var env Envelope
		if json.Unmarshal(sc.Bytes(), &d) != nil || json.Unmarshal(d.Envelope, &env) != nil || env.SessionID == "" {
			continue
		}
		if d.Backend != "" && d.Backend != f.policy.dest && (f.policy.move == nil || !f.policy.move(d.Backend)) {
			kept = append(kept, bytes.Clone(sc.Bytes()))
			continue
		}
		s, err := f.session(env.SessionID)
		if err != nil {
			return n, err
		}
		s.mu.Lock()
		written, err := s.appendLocked(d.Envelope)
		s.mu.Unlock()
		if err != nil {
			return n, err
		}
		f.bytes.Add(written)
		f.pending.Add(1)
		n++
	}
	if err := sc.Err(); err != nil {
		return n, fmt.Errorf("read dead letters: %w", err)
	}
	for _, line := range kept {
		if err := appendLine(path, line); err != nil {
			return n, fmt.Errorf("keep the dead letters of other backends: %w (they are in %s)", err, taken)
		}
	}
	f.syncAll() // the re-queued events are durable before their only other copy goes
	return n, os.Remove(taken)
}

// noteError keeps a session's last error for `spool status`.
func noteError(sdir, msg string) {
	line := time.Now().UTC().Format(time.RFC3339) + " " + msg
	_ = os.WriteFile(filepath.Join(sdir, lastErrorFile), []byte(line), 0o600)
}
