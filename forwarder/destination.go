package forwarder

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/claude-relay/claude-relay/internal/fsutil"
)

// Every session spool records the backend its events were spooled for, its
// destination, in a file beside its segments: the base URL of a backend
// (scheme, host and path; never credentials, a query or a token), or
// "local:<data dir>" for a data dir's own backend, whose loopback port
// changes with every embedded start. A forwarder delivers only the spools
// of its own destination; it leaves the others where they are (Open counts
// them: Elsewhere) unless Options.Move takes them over, which re-records
// them for its destination (`spool flush --to`). A spool with nothing
// waiting belongs to whoever opens it next. A spool written before
// destinations were recorded has none: the first forwarder to open it
// records its own, so it is delivered as before, once.

// destFile holds a session spool's destination.
const destFile = "backend"

// localPrefix begins the destination of a data dir's own backend.
const localPrefix = "local:"

// ErrOtherBackend means a session spool waits for another backend than the
// forwarder's.
var ErrOtherBackend = errors.New("session spool waits for another backend")

// OtherBackendError says which backend a session spool waits for.
type OtherBackendError struct {
	SessionID string
	Backend   string // its destination
}

func (e *OtherBackendError) Error() string {
	return fmt.Sprintf("session %s: its spooled events wait for %s", e.SessionID, e.Backend)
}

func (e *OtherBackendError) Unwrap() error { return ErrOtherBackend }

// LocalDestination is the destination of dataDir's own backend: the
// embedded default or that data dir's serve, whatever port it has now.
func LocalDestination(dataDir string) string {
	if abs, err := filepath.Abs(dataDir); err == nil {
		dataDir = abs
	}
	return localPrefix + filepath.Clean(dataDir)
}

// URLDestination is the destination of the backend at base: the URL with
// scheme and host in lower case, without a default port, user
// information, query, fragment or trailing slash, so that spellings of one
// backend compare equal and no credential reaches the disk.
func URLDestination(base string) string {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil || u.Scheme == "" || u.Host == "" {
		return strings.TrimRight(strings.TrimSpace(base), "/")
	}
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	if p := u.Port(); (u.Scheme == "http" && p == "80") || (u.Scheme == "https" && p == "443") {
		u.Host = strings.TrimSuffix(u.Host, ":"+p)
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	u.Path, u.RawPath = strings.TrimRight(u.Path, "/"), ""
	return u.String()
}

// IsLocalDestination reports whether dest is a data dir's own backend, and
// which data dir.
func IsLocalDestination(dest string) (dataDir string, ok bool) {
	return strings.CutPrefix(dest, localPrefix)
}

// destPolicy is where a forwarder delivers and which other destinations'
// spools it takes over.
type destPolicy struct {
	dest string
	move func(from string) bool
}

// readDest returns the destination recorded in a session spool; "" when
// none is (an older spool, or a new one).
func readDest(sdir string) string {
	b, err := os.ReadFile(filepath.Join(sdir, destFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func writeDest(sdir, dest string) error {
	if err := fsutil.WriteFileAtomic(filepath.Join(sdir, destFile), []byte(dest)); err != nil {
		return fmt.Errorf("record the spool's backend: %w", err)
	}
	return nil
}

// unackedBytes is how many spooled bytes of a session spool wait for
// delivery, from the ack file and the segments' sizes alone.
func unackedBytes(sdir string) int64 {
	var n int64
	for _, u := range unackedSegments(sdir) {
		n += max(u.size-u.start, 0)
	}
	return n
}
