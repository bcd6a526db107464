package forwarder

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/claude-relay/claude-relay/internal/fsutil"
)

// Files in a session's spool directory.
const (
	segPrefix   = "seg-"
	segSuffix   = ".log"
	ackFile     = "ack"      // the acknowledged position
	seqFile     = "seq.json" // seq counters as of the current segment's start
	idFile      = "session"  // the session ID, since the directory name is escaped
	lockFile    = "lock"
	maxSegBytes = 8 << 20 // small segments keep recovery scans and GC cheap
)

// ErrSessionLocked means another live helper owns this session's spool.
var ErrSessionLocked = errors.New("session spool is in use by another claude-relay process")

// errIdle means adopt found another backend's spool with nothing waiting:
// nothing to deliver, and it stays that backend's until someone writes.
var errIdle = errors.New("idle session spool of another backend")

// pos is a position in a session's spool.
type pos struct {
	seg int64
	off int64
}

func (p pos) less(q pos) bool { return p.seg < q.seg || (p.seg == q.seg && p.off < q.off) }

// sessionSpool is one session's durable queue. mu guards the writer side;
// the delivery goroutine reads committed bytes without it.
type sessionSpool struct {
	id   string
	dir  string
	lock *os.File

	mu      sync.Mutex
	cur     *os.File // current segment, append-only
	curSeg  int64
	curSize int64 // committed bytes of the current segment
	seqs    map[string]int64
	dirty   bool   // written since the last fsync
	buf     []byte // reused frame buffer
	segs    []int64
	ack     pos
	ackFile *os.File

	lastErrorWritten atomic.Bool            // a last_error file was written; cleared on the next delivery
	lastNote         atomic.Pointer[string] // the last transient error written
	bytes            int64                  // unacknowledged bytes
	corrupt          int                    // corrupt stretches seen
	lastCorruption   error                  // the latest of them, for reportRecovered
	wake             chan struct{}          // poked on append
	movedFrom        string                 // the destination it was taken over from (spool flush --to), if any

	notBackend atomic.Bool // a foreign answer was reported; cleared on the next delivery
}

func segName(n int64) string { return fmt.Sprintf("%s%012d%s", segPrefix, n, segSuffix) }

// escapeID makes a session ID safe as a directory name.
func escapeID(id string) string {
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || (c == '.' && i > 0) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	if b.Len() > 120 {
		return fmt.Sprintf("h%08x-%s", crc32.ChecksumIEEE([]byte(id)), b.String()[:100])
	}
	return b.String()
}

// maxSiblings bounds the spools one session may have side by side.
const maxSiblings = 32

// openSessionAny opens the session's spool, or a sibling spool of the same
// session when another live process holds the first (a visible-terminal run
// and an extension helper may write one session at once), or when the
// first waits for another backend. seq is counted per interaction, and an
// interaction never spans processes, so numbering holds.
func openSessionAny(root, id string, policy destPolicy) (*sessionSpool, error) {
	base := escapeID(id)
	var err error
	for i := range maxSiblings {
		name := base
		if i > 0 {
			name = fmt.Sprintf("%s~%d", base, i)
		}
		var s *sessionSpool
		if s, err = openSessionDir(root, name, id, policy, false); !errors.Is(err, ErrSessionLocked) && !errors.Is(err, ErrOtherBackend) {
			return s, err
		}
	}
	return nil, fmt.Errorf("session %s has %d spools, all busy or waiting for other backends (the last: %w); "+
		"see `claude-relay spool status`", id, maxSiblings, err)
}

// openSessionDir opens (creating if needed) and recovers a session spool,
// taking its lock. It reads the seq snapshot and the current segment only.
// A spool whose events wait for another backend than policy's is left alone
// (OtherBackendError) unless policy moves it, or nothing in it waits and it is
// opened to write (not adopting: adopt leaves such a spool be, errIdle);
// either way it is then recorded for policy's backend.
func openSessionDir(root, name, id string, policy destPolicy, adopting bool) (*sessionSpool, error) {
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("spool directory: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("spool lock: %w", err)
	}
	if busy, err := tryLock(lock); busy || err != nil {
		lock.Close()
		if busy {
			return nil, fmt.Errorf("%w: %s", ErrSessionLocked, id)
		}
		return nil, fmt.Errorf("spool lock: %w", err)
	}
	// Under the lock: no other process delivers or moves it meanwhile.
	rec, moved := readDest(dir), ""
	if rec != "" && rec != policy.dest {
		waiting := unackedBytes(dir) > 0
		switch {
		case waiting && policy.move != nil && policy.move(rec):
			moved = rec
		case waiting:
			lock.Close()
			return nil, &OtherBackendError{SessionID: id, Backend: rec}
		case adopting:
			lock.Close()
			return nil, errIdle
		}
	}
	s := &sessionSpool{id: id, dir: dir, lock: lock, seqs: map[string]int64{}, wake: make(chan struct{}, 1), movedFrom: moved}
	if err := s.recover(); err != nil {
		s.close()
		return nil, err
	}
	if rec != policy.dest {
		if err := writeDest(dir, policy.dest); err != nil {
			s.close()
			return nil, err
		}
	}
	return s, nil
}

func (s *sessionSpool) recover() error {
	if err := writeFileIfMissing(filepath.Join(s.dir, idFile), []byte(s.id)); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(s.dir, lastErrorFile)); err == nil {
		s.lastErrorWritten.Store(true) // an earlier process's error: cleared by our first delivery
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("read spool directory: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if n, ok := strings.CutPrefix(name, segPrefix); ok {
			if v, err := strconv.ParseInt(strings.TrimSuffix(n, segSuffix), 10, 64); err == nil {
				s.segs = append(s.segs, v)
			}
		}
	}
	slices.Sort(s.segs)
	if b, err := os.ReadFile(filepath.Join(s.dir, seqFile)); err == nil {
		_ = json.Unmarshal(b, &s.seqs) // a bad snapshot is rebuilt from the segment below
	}
	if s.ackFile, err = os.OpenFile(filepath.Join(s.dir, ackFile), os.O_CREATE|os.O_RDWR, 0o600); err != nil {
		return fmt.Errorf("spool ack file: %w", err)
	}
	s.ack = readAck(s.ackFile)
	// Segments wholly before the acknowledged one were delivered; a crash
	// may have left them.
	for len(s.segs) > 1 && s.segs[0] < s.ack.seg {
		os.Remove(filepath.Join(s.dir, segName(s.segs[0])))
		s.segs = s.segs[1:]
	}
	if len(s.segs) == 0 {
		return s.roll(1)
	}
	last := s.segs[len(s.segs)-1]
	size, clean, err := s.scanForSeqs(last)
	if err != nil {
		return err
	}
	if s.ack.seg < s.segs[0] {
		s.ack = pos{seg: s.segs[0]}
	}
	for _, n := range s.segs {
		if fi, err := os.Stat(filepath.Join(s.dir, segName(n))); err == nil {
			s.bytes += fi.Size()
		}
	}
	if s.ack.seg >= s.segs[0] {
		s.bytes -= s.ack.off
	}
	s.bytes = max(s.bytes, 0)
	if !clean {
		// Never append after bad bytes: a new segment keeps the old one's
		// valid records readable and the new ones cleanly framed.
		return s.roll(last + 1)
	}
	f, err := os.OpenFile(filepath.Join(s.dir, segName(last)), os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open spool segment: %w", err)
	}
	s.cur, s.curSeg, s.curSize = f, last, size
	return nil
}

// scanForSeqs reads the last segment to bring the seq counters up to date.
func (s *sessionSpool) scanForSeqs(n int64) (size int64, clean bool, err error) {
	f, err := os.Open(filepath.Join(s.dir, segName(n)))
	if err != nil {
		return 0, false, fmt.Errorf("open spool segment: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, false, fmt.Errorf("stat spool segment: %w", err)
	}
	r := newSegmentReader(f, 0, fi.Size())
	var env struct {
		InteractionID string `json:"interaction_id"`
		Seq           int64  `json:"seq"`
	}
	for {
		payload, _, err := r.next()
		if err != nil {
			break
		}
		if json.Unmarshal(payload, &env) == nil && env.Seq > s.seqs[env.InteractionID] {
			s.seqs[env.InteractionID] = env.Seq
		}
	}
	if r.corrupt > 0 {
		s.corrupt += r.corrupt
		s.lastCorruption = fmt.Errorf("session %s segment %d: %w", s.id, n, r.lastErr)
	}
	return fi.Size(), r.corrupt == 0, nil
}

// roll starts segment n, first saving the seq counters so that recovery
// needs only the snapshot and the newest segment.
func (s *sessionSpool) roll(n int64) error {
	b, _ := json.Marshal(s.seqs)
	if err := fsutil.WriteFileAtomic(filepath.Join(s.dir, seqFile), b); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(s.dir, segName(n)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("create spool segment: %w", err)
	}
	if s.cur != nil {
		s.cur.Sync() // the old segment must be whole before we move on
		s.cur.Close()
	}
	s.cur, s.curSeg, s.curSize = f, n, 0
	if len(s.segs) == 0 || s.segs[len(s.segs)-1] != n {
		s.segs = append(s.segs, n)
	}
	syncDir(s.dir)
	return nil
}

// append frames payload and writes it with one write(2). seq is assigned by
// the caller under s.mu.
func (s *sessionSpool) appendLocked(payload []byte) (int64, error) {
	if len(payload) > maxRecord {
		// A reader would take the frame for corrupt bytes and skip it.
		return 0, fmt.Errorf("%w: %d bytes, the spool's limit is %d", ErrTooLarge, len(payload), maxRecord)
	}
	if s.curSize >= maxSegBytes {
		if err := s.roll(s.curSeg + 1); err != nil {
			return 0, err
		}
	}
	s.buf = appendFrame(s.buf[:0], payload)
	n, err := s.cur.Write(s.buf)
	if err != nil {
		// A partial write leaves a torn record; move on to a fresh segment so
		// later records stay readable, and report the failure (disk full).
		if n > 0 {
			s.curSize += int64(n)
			_ = s.roll(s.curSeg + 1)
		}
		return 0, fmt.Errorf("write spool: %w", err)
	}
	s.curSize += int64(n)
	s.bytes += int64(n)
	s.dirty = true
	if len(s.buf) > 1<<20 {
		s.buf = nil // do not pin a large frame buffer
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return int64(n), nil
}

// sync fsyncs the current segment if written since the last sync.
func (s *sessionSpool) sync() error {
	s.mu.Lock()
	f := s.cur
	if !s.dirty || f == nil {
		s.mu.Unlock()
		return nil
	}
	s.dirty = false
	s.mu.Unlock()
	// fsync without the lock: Enqueue and delivery must not wait for the
	// disk. roll and close sync the file themselves before closing it.
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrClosed) {
		s.mu.Lock()
		s.dirty = true
		s.mu.Unlock()
		return fmt.Errorf("fsync spool: %w", err)
	}
	return nil
}

// committed is where readable data ends in segment n.
func (s *sessionSpool) committed(n int64) (limit int64, last bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n == s.curSeg {
		return s.curSize, true
	}
	fi, err := os.Stat(filepath.Join(s.dir, segName(n)))
	if err != nil {
		return 0, false
	}
	return fi.Size(), false
}

// nextSeg returns the segment after n, if any.
func (s *sessionSpool) nextSeg(n int64) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.segs {
		if v > n {
			return v, true
		}
	}
	return 0, false
}

// acknowledge records that everything before p was delivered (or dead-
// lettered), and deletes segments now wholly behind it.
func (s *sessionSpool) acknowledge(p pos, bytes int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ack = p
	s.bytes = max(s.bytes-bytes, 0)
	var b [20]byte
	binary.LittleEndian.PutUint64(b[0:], uint64(p.seg))
	binary.LittleEndian.PutUint64(b[8:], uint64(p.off))
	binary.LittleEndian.PutUint32(b[16:], crc32.Checksum(b[:16], castagnoli))
	// No fsync: a stale ack after a crash only re-sends events, which the
	// backend de-duplicates by event_id.
	if _, err := s.ackFile.WriteAt(b[:], 0); err != nil {
		return fmt.Errorf("write spool ack: %w", err)
	}
	for len(s.segs) > 1 && s.segs[0] < p.seg {
		if err := os.Remove(filepath.Join(s.dir, segName(s.segs[0]))); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("delete delivered segment: %w", err)
		}
		s.segs = s.segs[1:]
	}
	return nil
}

func readAck(f *os.File) pos {
	var b [20]byte
	if _, err := f.ReadAt(b[:], 0); err != nil && !errors.Is(err, io.EOF) {
		return pos{}
	}
	if crc32.Checksum(b[:16], castagnoli) != binary.LittleEndian.Uint32(b[16:]) {
		return pos{} // none yet, or torn: re-deliver from the first segment
	}
	return pos{seg: int64(binary.LittleEndian.Uint64(b[0:])), off: int64(binary.LittleEndian.Uint64(b[8:]))}
}

func (s *sessionSpool) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil {
		s.cur.Sync()
		s.cur.Close()
		s.cur = nil
	}
	if s.ackFile != nil {
		s.ackFile.Sync()
		s.ackFile.Close()
		s.ackFile = nil
	}
	if s.lock != nil {
		s.lock.Close() // releases the flock
		s.lock = nil
	}
}

func writeFileIfMissing(path string, b []byte) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	return fsutil.WriteFileAtomic(path, b)
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
