package backend

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/claude-relay/claude-relay/internal/fsutil"
)

// logoutList is the IDs of logged-out cookies, each refused until its
// cookie would have expired anyway. With a path it is also a file, which
// every backend of the data dir appends to and reads (stat on each check,
// re-read when it changed), so a logout holds across restarts and for the
// data dir's other backends; without, it is this process's memory only.
//
// The file is append-only lines "<cookie id> <unix seconds>": appends take a
// shared flock on it, and the rewrite that drops expired lines (once the
// file passes compactAt) an exclusive one, so no append is lost to it.
type logoutList struct {
	path string

	mu        sync.Mutex
	mem       map[string]int64 // this process's logouts: always honoured
	file      map[string]int64 // the file's, as last read
	seen      os.FileInfo      // the file version read into file
	readErr   error            // why the file could not be read (fail closed)
	compactAt int64            // file size that triggers a rewrite
}

// logoutsCompactAt is the smallest file size worth rewriting (about 1,800
// logouts).
const logoutsCompactAt = 64 << 10

// add records sid's logout until until.
func (l *logoutList) add(sid string, until, now time.Time) error {
	l.mu.Lock()
	for k, u := range l.mem {
		if u < now.Unix() {
			delete(l.mem, k)
		}
	}
	l.mem[sid] = until.Unix()
	l.mu.Unlock()
	if l.path == "" {
		return nil
	}
	size, err := l.appendLine(sid + " " + strconv.FormatInt(until.Unix(), 10) + "\n")
	if err != nil {
		return fmt.Errorf("record the logout in %s: %w (it holds in this process only)", l.path, err)
	}
	l.mu.Lock()
	compact := size > max(l.compactAt, logoutsCompactAt)
	l.mu.Unlock()
	if compact {
		return l.compact(now)
	}
	return nil
}

func (l *logoutList) appendLine(line string) (size int64, err error) {
	unlock, err := fsutil.Lock(l.path+".lock", false) // the lock file is never replaced, unlike l.path
	if err != nil {
		return 0, err
	}
	defer unlock()
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return 0, err
	}
	_, err = f.WriteString(line) // one write: appends of other processes never interleave with it
	if err == nil {
		err = f.Sync()
	}
	var fi os.FileInfo
	if err == nil {
		fi, err = f.Stat()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// compact rewrites the file without the expired lines.
func (l *logoutList) compact(now time.Time) error {
	unlock, err := fsutil.Lock(l.path+".lock", true)
	if err != nil {
		return err
	}
	defer unlock()
	b, err := os.ReadFile(l.path)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	for sid, until := range parseLogouts(b) {
		if until >= now.Unix() {
			out.WriteString(sid + " " + strconv.FormatInt(until, 10) + "\n")
		}
	}
	if err := fsutil.WriteFileAtomic(l.path, out.Bytes()); err != nil {
		return err
	}
	l.mu.Lock()
	l.compactAt = 2 * int64(out.Len())
	l.mu.Unlock()
	return nil
}

// revoked reports whether sid was logged out. A file that cannot be read
// refuses every cookie (see err), rather than bring a logged-out one back.
func (l *logoutList) revoked(sid string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if u, ok := l.mem[sid]; ok && u >= now.Unix() {
		return true
	}
	if l.path == "" {
		return false
	}
	l.refresh()
	if l.readErr != nil {
		return true
	}
	u, ok := l.file[sid]
	return ok && u >= now.Unix()
}

// err is why the file cannot be read now, or nil.
func (l *logoutList) err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.readErr
}

// refresh re-reads the file when it changed. Called with mu held.
func (l *logoutList) refresh() {
	fi, err := os.Stat(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		l.file, l.seen, l.readErr = nil, nil, nil
		return
	}
	if err == nil && l.seen != nil && os.SameFile(fi, l.seen) && fi.Size() == l.seen.Size() && fi.ModTime().Equal(l.seen.ModTime()) {
		return
	}
	var b []byte
	if err == nil {
		b, err = os.ReadFile(l.path)
	}
	if err != nil {
		l.readErr = fmt.Errorf("read the dashboard's logouts %s: %w (dashboard logins are refused until it can be read)", l.path, err)
		return
	}
	l.file, l.seen, l.readErr = parseLogouts(b), fi, nil
}

// parseLogouts reads the file's lines, skipping any it cannot (a torn
// last line of a crash).
func parseLogouts(b []byte) map[string]int64 {
	m := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		sid, until, ok := strings.Cut(sc.Text(), " ")
		n, err := strconv.ParseInt(until, 10, 64)
		if !ok || err != nil || sid == "" {
			continue
		}
		m[sid] = max(m[sid], n)
	}
	return m
}
