package backend

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The dashboard login (auth.go has the handlers). A successful POST /login
// sets a cookie that names the credential, proves the token (its CookieMAC,
// which cannot be replayed as a Bearer token), and carries an ID of its own
// and its issue time, all signed with a key only the server has:
//
//	<credential id>.<cookie id>.<issued, unix seconds>.<CookieMAC(token)>.<HMAC-SHA256(key, all four)>
//
// So a cookie ends when its token is revoked or rotated (the MAC no longer
// matches a credential), after cookieMaxAge (the signed issue time; the
// holder cannot move it), and at logout (its ID goes on the logout list).
// Forging one needs both the key and the CookieMAC: tokens.json (digests
// only) gives neither.
//
// With Options.StateDir (the data dir) the key and the logout list are
// files there, shared by the data dir's serve and embedded backends (one
// browser cookie reaches both: cookies ignore ports) and kept across
// restarts; without, they live in memory and end with the Server.

// Files in Options.StateDir.
const (
	LoginKeyFile = "dashboard.key"     // the cookie signing key, 0600
	LogoutsFile  = "dashboard-logouts" // "<cookie id> <refused until>" lines, 0600
)

// SecureCookieName is the cookie when serve.public_url is https (or the
// request came over TLS): the __Host- prefix makes the browser refuse it
// unless Secure, for this host only and path /, so neither a subdomain nor
// a plain-http page can plant or overwrite it.
const SecureCookieName = "__Host-" + CookieName

// Login throttling per client address (a /64 for IPv6): the first
// loginFreeFailures failures cost nothing, each one after locks the
// address out for loginBaseLockout doubled per failure, up to
// loginMaxLockout; an address with no failure for loginForget starts over.
const (
	loginFreeFailures = 5
	loginBaseLockout  = time.Second
	loginMaxLockout   = 15 * time.Minute
	loginForget       = time.Hour
	loginMaxClients   = 10000 // addresses remembered at once
	// cookieClockSkew is how far in the future an issue time may be
	// (several servers on one data dir with clocks apart).
	cookieClockSkew = time.Minute
	// loginFailLogEvery throttles the "login failed" log line.
	loginFailLogEvery = time.Minute
)

// loginState is the dashboard login's state: the key that signs cookies,
// the logouts, and the failed-login throttle.
type loginState struct {
	key     []byte
	logouts *logoutList
	guard   loginGuard
	secure  bool // serve.public_url is https: Secure and __Host- cookies
	now     func() time.Time

	lastHostLog   atomic.Int64 // unix nanos; throttles the refused-Host warning
	lastFailLog   atomic.Int64 // same, for failed logins
	failsSinceLog atomic.Int64 // failed logins not logged yet
	lastLockLog   atomic.Int64 // same, for addresses locked out
	lastListLog   atomic.Int64 // same, for an unreadable logout list
}

func newLoginState(opts Options, publicURL string, log *slog.Logger) *loginState {
	l := &loginState{now: opts.now, guard: loginGuard{m: map[string]*loginFailures{}}}
	if l.now == nil {
		l.now = time.Now
	}
	if u, err := url.Parse(publicURL); err == nil && strings.EqualFold(u.Scheme, "https") {
		l.secure = true
	}
	l.logouts = &logoutList{mem: map[string]int64{}}
	if opts.StateDir != "" {
		l.logouts.path = filepath.Join(opts.StateDir, LogoutsFile)
		key, err := loadLoginKey(filepath.Join(opts.StateDir, LoginKeyFile))
		if err != nil {
			log.Warn("backend: cannot keep the dashboard login key in the data dir; logins end when this process does, "+
				"and other backends of the data dir do not accept them (fix the data dir's permissions)", "err", err)
		}
		l.key = key
	}
	if l.key == nil {
		l.key = newLoginKey()
	}
	return l
}

func newLoginKey() []byte {
	k := make([]byte, sha256.Size)
	_, _ = rand.Read(k) // never fails (crypto/rand panics instead)
	return k
}

// loadLoginKey reads the key at path, creating it (0600, written aside and
// linked into place so that a backend starting at the same moment never
// reads half of it) when missing.
func loadLoginKey(path string) ([]byte, error) {
	for range 20 {
		b, err := os.ReadFile(path)
		if err == nil {
			k, derr := hex.DecodeString(strings.TrimSpace(string(b)))
			if derr == nil && len(k) == sha256.Size {
				return k, nil
			}
			return nil, fmt.Errorf("%s is not %d hex-encoded bytes: delete it to make a new key (every dashboard login ends)", path, sha256.Size)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, err
		}
		f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
		if err != nil {
			return nil, err
		}
		_, err = f.WriteString(hex.EncodeToString(newLoginKey()) + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Link(f.Name(), path) // fails if another backend won: then read theirs
		}
		os.Remove(f.Name())
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("cannot create %s", path)
}

// cookieName is the login cookie's name for r.
func (l *loginState) cookieName(r *http.Request) string {
	if l.secureFor(r) {
		return SecureCookieName
	}
	return CookieName
}

func (l *loginState) secureFor(r *http.Request) bool { return l.secure || r.TLS != nil }

// cookie is the Set-Cookie of value for r; maxAge < 0 deletes it.
func (l *loginState) cookie(r *http.Request, value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name:     l.cookieName(r),
		Value:    value,
		Path:     "/",
		MaxAge:   maxAge,
		HttpOnly: true,
		Secure:   l.secureFor(r),
		SameSite: http.SameSiteStrictMode,
	}
}

// mint is a new login cookie's value for credential id, whose token's
// CookieMAC is cmac.
func (l *loginState) mint(id, cmac string) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	sid := base64.RawURLEncoding.EncodeToString(b)
	issued := strconv.FormatInt(l.now().Unix(), 10)
	return id + "." + sid + "." + issued + "." + cmac + "." + l.sign(id, sid, issued, cmac)
}

// sign is the MAC over a cookie's fields.
func (l *loginState) sign(id, sid, issued, cmac string) string {
	m := hmac.New(sha256.New, l.key)
	m.Write([]byte("claude-relay dashboard login v2"))
	for _, p := range []string{id, sid, issued, cmac} {
		m.Write([]byte{0})
		m.Write([]byte(p))
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// loginCookie is a cookie whose signature and age check out; its
// credential is still to be matched.
type loginCookie struct {
	id, sid, cmac string
	issued        time.Time
}

// open checks value's signature and age, and that it was not logged out.
func (l *loginState) open(value string) (loginCookie, bool) {
	// From the right: the credential id may hold dots, the rest cannot.
	parts := make([]string, 0, 5)
	rest := value
	for range 4 {
		i := strings.LastIndexByte(rest, '.')
		if i <= 0 {
			return loginCookie{}, false
		}
		parts = append(parts, rest[i+1:])
		rest = rest[:i]
	}
	sig, cmac, issued, sid, id := parts[0], parts[1], parts[2], parts[3], rest
	if !hmac.Equal([]byte(sig), []byte(l.sign(id, sid, issued, cmac))) {
		return loginCookie{}, false
	}
	sec, err := strconv.ParseInt(issued, 10, 64)
	if err != nil {
		return loginCookie{}, false
	}
	c := loginCookie{id: id, sid: sid, cmac: cmac, issued: time.Unix(sec, 0)}
	now := l.now()
	if now.Sub(c.issued) > cookieMaxAge || c.issued.Sub(now) > cookieClockSkew {
		return loginCookie{}, false
	}
	return c, !l.logouts.revoked(sid, now)
}

// logout refuses the cookie with ID sid from now until it would have
// expired anyway.
func (l *loginState) logout(c loginCookie) error {
	return l.logouts.add(c.sid, c.issued.Add(cookieMaxAge+cookieClockSkew), l.now())
}

// clientKey is whom the throttle counts a request against: its address, or
// its /64 for IPv6 (one host has a whole /64 to hop between).
func clientKey(r *http.Request) string {
	host := stripPort(r.RemoteAddr)
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// loginGuard counts failed logins per client and locks clients out.
type loginGuard struct {
	mu sync.Mutex
	m  map[string]*loginFailures
}

type loginFailures struct {
	n     int
	last  time.Time // of the last failure
	until time.Time // locked out until then
}

// locked is how long client must still wait; 0: it may try.
func (g *loginGuard) locked(client string, now time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f := g.m[client]; f != nil && now.Before(f.until) {
		return f.until.Sub(now)
	}
	return 0
}

// fail counts a failed login of client; it returns the lockout it starts
// (0: none yet).
func (g *loginGuard) fail(client string, now time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.m[client]
	if f != nil && now.Sub(f.last) > loginForget {
		f = nil
	}
	if f == nil {
		g.makeRoom(now)
		f = &loginFailures{}
		g.m[client] = f
	}
	f.n++
	f.last = now
	if f.n < loginFreeFailures {
		return 0
	}
	lock := loginMaxLockout
	if shift := f.n - loginFreeFailures; shift < 20 {
		lock = min(loginBaseLockout<<shift, loginMaxLockout)
	}
	f.until = now.Add(lock)
	return lock
}

// succeed forgets client's failures.
func (g *loginGuard) succeed(client string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.m, client)
}

// makeRoom drops forgotten clients when the map is full, and else the one
// whose last failure is oldest, so memory stays bounded whoever knocks.
func (g *loginGuard) makeRoom(now time.Time) {
	if len(g.m) < loginMaxClients {
		return
	}
	var oldest string
	var at time.Time
	for k, f := range g.m {
		if now.Sub(f.last) > loginForget && now.After(f.until) {
			delete(g.m, k)
			continue
		}
		if oldest == "" || f.last.Before(at) {
			oldest, at = k, f.last
		}
	}
	if len(g.m) >= loginMaxClients {
		delete(g.m, oldest)
	}
}

// retryAfter is d in whole seconds, at least 1, for a Retry-After header.
func retryAfter(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}
