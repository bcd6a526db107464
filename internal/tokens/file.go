package tokens

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/claude-relay/claude-relay/internal/fsutil"
)

// FileName is the token file in the data dir.
const FileName = "tokens.json"

// Path is dataDir's token file.
func Path(dataDir string) string { return filepath.Join(dataDir, FileName) }

// Prefix starts every token this package issues, so people and secret
// scanners recognise one.
const Prefix = "crly_"

// fileVersion is the format Create writes; a file of another version is
// refused rather than half-understood.
const fileVersion = 1

// Errors of the token file.
var (
	ErrNoToken   = errors.New("no such token")
	ErrNameTaken = errors.New("token name already used")
	ErrBadName   = errors.New("bad token name")
	ErrNoScopes  = errors.New("a token needs at least one scope")
	ErrBadFile   = errors.New("unreadable token file")
)

// Entry is one issued token, as the file keeps it: never the token itself.
type Entry struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Scopes    []Scope   `json:"scopes"`
	CreatedAt time.Time `json:"created_at"`
	// Hex SHA-256 of the token, and of CookieMAC(token).
	TokenSHA256  string `json:"token_sha256"`
	CookieSHA256 string `json:"cookie_sha256"`

	tokenSum, cookieSum [sha256.Size]byte // decoded on load
}

// Digests are the decoded digests of the entry's token and of its cookie
// MAC: what a Bearer token or a dashboard cookie is compared with.
func (e *Entry) Digests() (token, cookie [sha256.Size]byte) { return e.tokenSum, e.cookieSum }

// Digest is the SHA-256 of a token or a cookie, as the file stores it.
func Digest(secret string) [sha256.Size]byte { return sha256.Sum256([]byte(secret)) }

// cookieContext separates the cookie MAC from any other use of the token.
const cookieContext = "claude-relay dashboard session v1"

// CookieMAC derives the dashboard cookie's secret from a token: a MAC keyed
// by the token, so the cookie is not the token (it cannot be replayed as a
// Bearer header), it survives restarts, and revoking or rotating the token
// ends it.
func CookieMAC(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(cookieContext))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// fileBody is the JSON of the file.
type fileBody struct {
	Version int     `json:"version"`
	Tokens  []Entry `json:"tokens"`
}

// File is the token file at one path. Its methods are safe for concurrent
// use; several processes may use the same path (see the package doc).
type File struct {
	path string

	mu      sync.Mutex
	seen    os.FileInfo // of the version cached below; nil: not read yet or absent
	entries []Entry
	err     error
}

// Open returns the token file at path; it need not exist yet.
func Open(path string) *File { return &File{path: path} }

// Path is the file's path.
func (f *File) Path() string { return f.path }

// Entries returns the issued tokens. It stats the file on every call and
// re-reads it when it changed, so a create or revoke by another process
// counts from the next call. A missing file has no entries; a file that
// cannot be read or parsed is an error (callers accept none of its tokens
// then: failing closed keeps a revoked token revoked). The slice is shared:
// do not modify it.
func (f *File) Entries() ([]Entry, error) {
	fi, err := os.Stat(f.path)
	f.mu.Lock()
	defer f.mu.Unlock()
	if errors.Is(err, fs.ErrNotExist) {
		f.seen, f.entries, f.err = nil, nil, nil
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrBadFile, f.path, err)
	}
	if f.seen != nil && sameVersion(f.seen, fi) {
		return f.entries, f.err
	}
	fi, entries, err := readFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		f.seen, f.entries, f.err = nil, nil, nil
		return nil, nil
	}
	f.seen, f.entries, f.err = fi, entries, err
	return entries, err
}

// sameVersion: a replaced file is a new inode, an edited one has a new
// size or modification time.
func sameVersion(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// readFile reads and checks the file; fi is the stat of what was read.
func readFile(path string) (os.FileInfo, []Entry, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("%w %s: %w", ErrBadFile, path, err)
	}
	b, err := io.ReadAll(io.LimitReader(fh, 16<<20))
	if err != nil {
		return fi, nil, fmt.Errorf("%w %s: %w", ErrBadFile, path, err)
	}
	entries, err := parse(b)
	if err != nil {
		return fi, nil, fmt.Errorf("%w %s: %w (fix or remove the file; `claude-relay token create` writes a new one)", ErrBadFile, path, err)
	}
	return fi, entries, nil
}

// parse decodes and checks the file's content.
func parse(b []byte) ([]Entry, error) {
	var body fileBody
	if err := json.Unmarshal(b, &body); err != nil {
		return nil, err
	}
	if body.Version != fileVersion {
		return nil, fmt.Errorf("version %d, this claude-relay reads version %d", body.Version, fileVersion)
	}
	for i := range body.Tokens {
		e := &body.Tokens[i]
		if e.ID == "" {
			return nil, fmt.Errorf("token %d has no id", i+1)
		}
		if err := decodeSum(e.TokenSHA256, &e.tokenSum); err != nil {
			return nil, fmt.Errorf("token %s: token_sha256: %w", e.ID, err)
		}
		if err := decodeSum(e.CookieSHA256, &e.cookieSum); err != nil {
			return nil, fmt.Errorf("token %s: cookie_sha256: %w", e.ID, err)
		}
		for _, s := range e.Scopes {
			if !slices.Contains(All, s) {
				return nil, fmt.Errorf("token %s: %w %q (allowed: %s)", e.ID, ErrUnknownScope, s, Allowed())
			}
		}
		if len(e.Scopes) == 0 {
			return nil, fmt.Errorf("token %s: %w", e.ID, ErrNoScopes)
		}
	}
	return body.Tokens, nil
}

func decodeSum(h string, out *[sha256.Size]byte) error {
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != sha256.Size {
		return errors.New("not a hex SHA-256")
	}
	copy(out[:], b)
	return nil
}

// namePattern is what a token name may be: it shows in the timeline as
// "dashboard:<name>", so no ':' and no spaces. Compiled on first use: every
// claude-relay process links this package, few name a token.
var namePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`) })

// CheckName says whether name can name a token.
func CheckName(name string) error {
	if !namePattern().MatchString(name) {
		return fmt.Errorf("%w %q: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", ErrBadName, name)
	}
	return nil
}

// Create issues a token with scopes, named name ("" names it after its
// id), and records its digests. It returns the token, which exists nowhere
// else afterwards: show it once.
func (f *File) Create(name string, scopes []Scope, now time.Time) (string, Entry, error) {
	scopes = normalize(scopes)
	if len(scopes) == 0 {
		return "", Entry{}, fmt.Errorf("%w (one of %s)", ErrNoScopes, Allowed())
	}
	if name != "" {
		if err := CheckName(name); err != nil {
			return "", Entry{}, err
		}
	}
	var token string
	var e Entry
	err := f.update(func(entries []Entry) ([]Entry, error) {
		if name != "" && slices.ContainsFunc(entries, func(x Entry) bool { return x.Name == name }) {
			return nil, fmt.Errorf("%w: %q is the name of another token in %s; pick another --name or revoke that one first", ErrNameTaken, name, f.path)
		}
		id, err := newID(entries)
		if err != nil {
			return nil, err
		}
		raw := make([]byte, 32)
		if _, err := rand.Read(raw); err != nil {
			return nil, fmt.Errorf("generate a token: %w", err)
		}
		token = Prefix + base64.RawURLEncoding.EncodeToString(raw)
		ts, cs := Digest(token), Digest(CookieMAC(token))
		e = Entry{ID: id, Name: name, Scopes: scopes, CreatedAt: now.UTC().Truncate(time.Second),
			TokenSHA256: hex.EncodeToString(ts[:]), CookieSHA256: hex.EncodeToString(cs[:]), tokenSum: ts, cookieSum: cs}
		if e.Name == "" {
			e.Name = "token-" + id
		}
		return append(entries, e), nil
	})
	if err != nil {
		return "", Entry{}, err
	}
	return token, e, nil
}

// newID is a short random id, unique in entries: what `token list` shows
// and `token revoke` takes. It is not derived from the token.
func newID(entries []Entry) (string, error) {
	for range 100 {
		raw := make([]byte, 5)
		if _, err := rand.Read(raw); err != nil {
			return "", fmt.Errorf("generate a token id: %w", err)
		}
		id := hex.EncodeToString(raw)
		if !slices.ContainsFunc(entries, func(x Entry) bool { return x.ID == id }) {
			return id, nil
		}
	}
	return "", errors.New("cannot find a free token id")
}

// Revoke removes the token whose id, else whose name, is ref, and returns
// it. A request with it fails from the next one the backend answers.
func (f *File) Revoke(ref string) (Entry, error) {
	var gone Entry
	err := f.update(func(entries []Entry) ([]Entry, error) {
		i := slices.IndexFunc(entries, func(x Entry) bool { return x.ID == ref })
		if i < 0 {
			i = slices.IndexFunc(entries, func(x Entry) bool { return x.Name == ref })
		}
		if i < 0 {
			return nil, fmt.Errorf("%w with id or name %q in %s (`claude-relay token list` shows them)", ErrNoToken, ref, f.path)
		}
		gone = entries[i]
		return slices.Delete(entries, i, i+1), nil
	})
	return gone, err
}

// update runs change on the file's entries under the file lock and writes
// the result atomically (0600).
func (f *File) update(change func([]Entry) ([]Entry, error)) error {
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return fmt.Errorf("token file directory: %w", err)
	}
	unlock, err := lockFile(f.path + ".lock")
	if err != nil {
		return fmt.Errorf("lock %s: %w", f.path, err)
	}
	defer unlock()
	_, entries, err := readFile(f.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	entries, err = change(slices.Clone(entries))
	if err != nil {
		return err
	}
	if entries == nil {
		entries = []Entry{}
	}
	b, err := json.MarshalIndent(fileBody{Version: fileVersion, Tokens: entries}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", f.path, err)
	}
	return fsutil.WriteFileAtomic(f.path, append(b, '\n'))
}
