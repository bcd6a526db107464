package backend

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/server/dashboard"
	"github.com/claude-relay/claude-relay/internal/tokens"
)

// CookieName is the dashboard's session cookie.
const CookieName = "claude_relay_session"

// cookieMaxAge keeps a dashboard login for 30 days, in the browser
// (Max-Age) and on the server (the cookie's signed issue time, login.go);
// logging out, or revoking or rotating the token, ends it sooner.
const cookieMaxAge = 30 * 24 * time.Hour

// DashboardHeader must be "1" on a decision the dashboard posts with its
// cookie. A cross-site form cannot set a header, and a cross-site fetch
// that does needs a CORS preflight this server never grants.
const DashboardHeader = "X-Claude-Relay"

// noTokenLogEvery throttles the warnings about refusing requests because no
// token is configured, and about an unreadable token file.
const noTokenLogEvery = time.Minute

// Routes that need no token: the health check, and the login/logout pages
// (which are how a browser gets and drops the cookie).
func public(r *http.Request) bool {
	switch r.URL.Path {
	case "/healthz":
		return true
	case "/login":
		return r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodPost
	case "/logout":
		return r.Method == http.MethodPost
	}
	return false
}

// principal is who sent a request: the token it came with.
type principal struct {
	id     string // the credential's, as the cookie names it
	name   string
	scopes tokens.Set
	cookie bool // the dashboard's login cookie, not a Bearer header
}

// by is how a decision records who made it: "dashboard:<token name>" from
// the dashboard's login, "api:<token name>" from a Bearer token.
func (p *principal) by() string {
	if p.cookie {
		return "dashboard:" + p.name
	}
	return "api:" + p.name
}

type principalKey struct{}

// principalOf is the authenticated caller; nil on public routes.
func principalOf(r *http.Request) *principal {
	p, _ := r.Context().Value(principalKey{}).(*principal)
	return p
}

// credential is one accepted token as the server compares it: digests
// only, so tokens from the configuration and hashed ones from the token
// file are checked the same way.
type credential struct {
	id, name string
	scopes   tokens.Set
	token    [sha256.Size]byte // tokens.Digest of the token
	cookie   [sha256.Size]byte // tokens.Digest of its cookie MAC
}

// derivedCache keeps the digests of configured tokens, which would
// otherwise be recomputed (three hashes each) on every request.
type derivedCache struct {
	mu sync.Mutex
	m  map[string][2][sha256.Size]byte
}

// maxDerived bounds the cache; reloads that rotate tokens add entries.
const maxDerived = 256

func (c *derivedCache) get(token string) (tok, cookie [sha256.Size]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.m[token]; ok {
		return d[0], d[1]
	}
	if c.m == nil || len(c.m) >= maxDerived {
		c.m = make(map[string][2][sha256.Size]byte)
	}
	d := [2][sha256.Size]byte{tokens.Digest(token), tokens.Digest(tokens.CookieMAC(token))}
	c.m[token] = d
	return d[0], d[1]
}

// credentials are the tokens accepted now: Options.ServeTokens,
// Options.Tokens and the token file, each asked on every request so that a
// reload, a create or a revoke counts from the next request.
func (s *Server) credentials() []credential {
	named, plain := s.serveTokens(), s.tokens()
	out := make([]credential, 0, len(named)+len(plain))
	n := 0
	add := func(name, token string, scopes tokens.Set) {
		tok, cookie := s.derived.get(token)
		out = append(out, credential{id: "c-" + name, name: name, scopes: scopes, token: tok, cookie: cookie})
	}
	for _, t := range named {
		if t.Token.Reveal() == "" {
			continue
		}
		n++
		name := t.Name
		if name == "" {
			name = "serve-token-" + strconv.Itoa(n)
		}
		add(name, t.Token.Reveal(), tokens.SetOf(t.Scopes))
	}
	for _, t := range plain {
		if t.Reveal() == "" {
			continue
		}
		n++
		add("serve-token-"+strconv.Itoa(n), t.Reveal(), tokens.SetOf(nil))
	}
	if s.issued == nil {
		return out
	}
	entries, err := s.issued.Entries()
	if err != nil {
		// Fail closed: none of the file's tokens, so a damaged file can
		// never bring a revoked token back.
		s.throttled(&s.lastTokenFileLog, func() {
			s.log.Warn("backend: cannot read the token file; its tokens are refused until it is fixed", "err", err)
		})
	}
	for i := range entries {
		e := &entries[i]
		c := credential{id: "f-" + e.ID, name: e.Name, scopes: tokens.SetOf(e.Scopes)}
		// The entry compares in constant time itself; copying the digests
		// out keeps one matching loop for every source.
		c.token, c.cookie = e.Digests()
		out = append(out, c)
	}
	return out
}

// match returns the credential whose digest (token or cookie, as pick
// says) equals sum, or nil. Constant time over the list: every digest is
// compared, and lengths leak nothing since both sides are digests.
//
// The first match wins: configured entries come before the data dir's
// token (localbackend), so when one token is both, its configured scopes
// apply.
func match(creds []credential, sum [sha256.Size]byte, pick func(*credential) *[sha256.Size]byte) *credential {
	idx := -1
	for i := len(creds) - 1; i >= 0; i-- {
		idx = subtle.ConstantTimeSelect(subtle.ConstantTimeCompare(sum[:], pick(&creds[i])[:]), i, idx)
	}
	if idx < 0 {
		return nil
	}
	return &creds[idx]
}

func tokenDigest(c *credential) *[sha256.Size]byte  { return &c.token }
func cookieDigest(c *credential) *[sha256.Size]byte { return &c.cookie }

// identify finds who sent r: a Bearer token, else the login cookie
// (login.go: signed, not expired, not logged out, and its CookieMAC
// matching the credential it names).
func (s *Server) identify(r *http.Request, creds []credential) *principal {
	if scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		if got = strings.TrimSpace(got); got != "" {
			if c := match(creds, tokens.Digest(got), tokenDigest); c != nil {
				return &principal{id: c.id, name: c.name, scopes: c.scopes}
			}
		}
	}
	c, _ := s.loginOf(r, creds)
	if c == nil {
		return nil
	}
	return &principal{id: c.id, name: c.name, scopes: c.scopes, cookie: true}
}

// loginOf is the credential of r's login cookie and the cookie, or nil.
func (s *Server) loginOf(r *http.Request, creds []credential) (*credential, loginCookie) {
	ck, err := r.Cookie(s.login.cookieName(r))
	if err != nil {
		return nil, loginCookie{}
	}
	lc, ok := s.login.open(ck.Value)
	if !ok {
		if err := s.login.logouts.err(); err != nil {
			s.throttled(&s.login.lastListLog, func() { s.log.Warn("backend: "+err.Error(), "path", s.login.logouts.path) })
		}
		return nil, loginCookie{}
	}
	c := match(creds, tokens.Digest(lc.cmac), cookieDigest)
	if c == nil || subtle.ConstantTimeCompare([]byte(c.id), []byte(lc.id)) != 1 {
		return nil, loginCookie{}
	}
	return c, lc
}

// requiredScope is what a route needs (CONTRACT §10): ingest to post
// events, approve to decide, read for everything else; /api/whoami only
// needs a valid token.
func requiredScope(r *http.Request) tokens.Scope {
	switch {
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/api/sessions/"):
		return tokens.Ingest
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/api/approvals/"):
		return tokens.Approve
	case r.URL.Path == "/api/approvals/decisions":
		return tokens.Decisions
	case r.URL.Path == "/api/whoami", r.URL.Path == policyPath: // policy: any helper scope (policy.go)
		return ""
	case r.URL.Path == "/api/budgets":
		return "" // ingest or read: handleBudgets checks (budgets.go)
	case r.URL.Path == "/api/audit":
		return tokens.Audit // not read: the trail is for a SIEM, and read is every helper's default
	}
	return tokens.Read
}

// isDecisionPost reports a POST /api/approvals/{id}/decision.
func isDecisionPost(r *http.Request) bool {
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/approvals/")
	id, ok2 := strings.CutSuffix(rest, "/decision")
	return r.Method == http.MethodPost && ok && ok2 && id != "" && !strings.Contains(id, "/")
}

// authenticate lets a request through when it carries an accepted token
// with the scope its route needs: as a Bearer header on any route, or as
// the login cookie on GET/HEAD, and on a decision the dashboard posts from
// its own origin with DashboardHeader (so a cross-site form can never post
// with a browser's cookie). No token: 401; a token without the scope: 403.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			next.ServeHTTP(w, r)
			return
		}
		creds := s.credentials()
		if len(creds) == 0 {
			s.warnNoTokens(r)
			s.unauthorized(w, r, true)
			return
		}
		if public(r) {
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), credentialsKey{}, creds)))
			return
		}
		p := s.identify(r, creds)
		if p != nil && p.cookie && !isRead(r) && !isDecisionPost(r) {
			p = nil // the cookie is for reading, and for the dashboard's decisions only
		}
		if p == nil {
			s.metrics.authFailures.Inc()
			s.log.Debug("backend: unauthorized", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr,
				"bearer", r.Header.Get("Authorization") != "")
			s.unauthorized(w, r, false)
			return
		}
		if p.cookie && !isRead(r) {
			if err := s.checkDashboardPost(r); err != nil {
				s.log.Info("backend: refused a cookie POST", "path", r.URL.Path, "remote", r.RemoteAddr, "why", err)
				writeError(w, http.StatusForbidden, err.Error())
				return
			}
		}
		if need := requiredScope(r); need != "" && !p.scopes.Has(need) {
			s.forbidden(w, r, p, need)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// credentialsKey passes the credentials authenticate read to the login
// handler, so both see the same list.
type credentialsKey struct{}

// forbidden answers 403: who the caller is, what it lacks, how to get it.
func (s *Server) forbidden(w http.ResponseWriter, r *http.Request, p *principal, need tokens.Scope) {
	s.log.Info("backend: token lacks the scope of the route", "method", r.Method, "path", r.URL.Path,
		"token", p.name, "scopes", p.scopes.String(), "needs", need)
	writeError(w, http.StatusForbidden, scopeMessage(r, p, need))
}

func scopeMessage(r *http.Request, p *principal, need tokens.Scope) string {
	what := map[tokens.Scope]string{
		tokens.Ingest:  "posting events",
		tokens.Read:    r.Method + " " + r.URL.Path,
		tokens.Approve: "deciding an approval",
		tokens.Audit:   "reading the audit trail",
	}[need]
	return what + " needs the " + string(need) + " scope; create a token with `claude-relay token create --scope " +
		string(need) + "` and use it (or give a serve.tokens entry that scope); token " + strconv.Quote(p.name) +
		" has " + p.scopes.String()
}

// errNoDashboardHeader is why a decision posted with the cookie but not by
// the dashboard's script was refused.
var errNoDashboardHeader = errors.New("refused: a decision sent with the dashboard's cookie needs the header " +
	DashboardHeader + ": 1, which the dashboard sends (a cross-site form cannot); from a script, send a Bearer token instead")

// checkDashboardPost allows a POST with the cookie only from a page of this
// dashboard: DashboardHeader set, and the browser's Sec-Fetch-Site and
// Origin (at least one present) both saying same origin.
func (s *Server) checkDashboardPost(r *http.Request) error {
	if r.Header.Get(DashboardHeader) != "1" {
		return errNoDashboardHeader
	}
	return s.checkSameSite(r, "a decision sent with the dashboard's cookie", "decide from this dashboard's own page")
}

// checkSameSite allows a browser's POST (what, "a login") only from a page
// of this server: Sec-Fetch-Site and Origin, at least one present, both
// saying same origin. fix says what to do instead.
func (s *Server) checkSameSite(r *http.Request, what, fix string) error {
	site, origin := r.Header.Get("Sec-Fetch-Site"), r.Header.Get("Origin")
	if origin == "null" && site == "same-origin" {
		// A form posted from a page with Referrer-Policy: no-referrer (all
		// of ours) says Origin: null; Sec-Fetch-Site still names the site.
		origin = ""
	}
	if site == "" && origin == "" {
		return errors.New("refused: " + what + " needs an Origin or Sec-Fetch-Site header naming this dashboard " +
			"(browsers send them); from a script, send a Bearer token instead")
	}
	if site != "" && site != "same-origin" {
		return errors.New("refused: cross-site request (Sec-Fetch-Site: " + strconv.Quote(clip(site)) + "); " + fix)
	}
	if origin != "" && !s.sameOrigin(origin, r) {
		return errors.New("refused: Origin " + strconv.Quote(clip(origin)) + " is not this dashboard (" + clip(r.Host) +
			"); " + fix + ", or set serve.public_url to the address people use")
	}
	return nil
}

// sameOrigin reports whether origin is this server as the browser reached
// it (its Host) or as serve.public_url names it. The scheme is not compared
// with r's: behind a TLS-terminating proxy the browser says https while the
// request here is http; host and port are what tell sites apart here.
func (s *Server) sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	if s.publicURL == "" {
		return false
	}
	p, err := url.Parse(s.publicURL)
	return err == nil && strings.EqualFold(p.Scheme, u.Scheme) && strings.EqualFold(p.Host, u.Host)
}

func isRead(r *http.Request) bool { return r.Method == http.MethodGet || r.Method == http.MethodHead }

// unauthorized answers 401: the login form for a browser asking for a page,
// JSON for everything else.
func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request, noTokens bool) {
	if wantsPage(r) {
		data := s.loginData(r.URL.RequestURI())
		if noTokens {
			data.Error = noTokensMessage
			data.Disabled = true
		}
		dashboard.WriteLogin(w, http.StatusUnauthorized, data)
		return
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="claude-relay"`)
	msg := "missing or invalid token: send Authorization: Bearer <token>"
	if noTokens {
		msg = noTokensMessage
	}
	writeError(w, http.StatusUnauthorized, msg)
}

const noTokensMessage = "this server has no tokens configured, so it refuses every request; set serve.tokens (or CLAUDE_RELAY_SERVE_TOKENS) and reload, or create one with `claude-relay token create --scope read`"

// wantsPage reports a browser navigation to a dashboard page (not the API,
// not a script fetching JSON).
func wantsPage(r *http.Request) bool {
	if !isRead(r) && !(r.Method == http.MethodPost && r.URL.Path == "/login") {
		return false
	}
	if strings.HasPrefix(r.URL.Path, "/api/") || r.URL.Path == "/metrics" {
		return false
	}
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

func (s *Server) warnNoTokens(r *http.Request) {
	s.throttled(&s.lastNoTokenLog, func() {
		s.log.Warn("backend: refusing request: no serve tokens configured (set serve.tokens or CLAUDE_RELAY_SERVE_TOKENS)",
			"method", r.Method, "path", r.URL.Path)
	})
}

// throttled runs log at most once per noTokenLogEvery per last.
func (s *Server) throttled(last *atomic.Int64, log func()) {
	throttledAt(last, noTokenLogEvery, time.Now(), log)
}

// throttledAt runs log at most once per every per last, at the time at.
func throttledAt(last *atomic.Int64, every time.Duration, at time.Time, log func()) {
	now := at.UnixNano()
	prev := last.Load()
	if now-prev < int64(every) || !last.CompareAndSwap(prev, now) {
		return
	}
	log()
}

// loginData is the token form going to next, naming where the default
// token lives (the path only, never the token).
func (s *Server) loginData(next string) dashboard.LoginData {
	return dashboard.LoginData{Next: next, TokenFile: s.tokenFile}
}

func (s *Server) handleLoginForm(w http.ResponseWriter, r *http.Request) {
	dashboard.WriteLogin(w, http.StatusOK, s.loginData(safeNext(r.URL.Query().Get("next"))))
}

// handleLogin checks the form's token and sets the cookie, which names the
// token's credential so that its scopes apply to the dashboard. It takes
// the form from this dashboard's own page only, refuses tokens shorter than
// config.MinTokenLen unread, and locks out an address after repeated
// failures (login.go).
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	if err := s.checkSameSite(r, "a login", "log in from this dashboard's own login page"); err != nil {
		s.log.Info("backend: refused a login form from another site", "remote", r.RemoteAddr, "why", err)
		data := s.loginData("/")
		data.Error = err.Error()
		dashboard.WriteLogin(w, http.StatusForbidden, data)
		return
	}
	client := clientKey(r)
	if wait := s.login.guard.locked(client, s.login.now()); wait > 0 {
		s.loginLocked(w, r, wait)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		data := s.loginData("/")
		data.Error = "The form could not be read; try again."
		dashboard.WriteLogin(w, http.StatusBadRequest, data)
		return
	}
	next := safeNext(r.PostFormValue("next"))
	token := strings.TrimSpace(r.PostFormValue("token"))
	creds, _ := r.Context().Value(credentialsKey{}).([]credential)
	var c *credential
	if len(token) >= config.MinTokenLen {
		c = match(creds, tokens.Digest(token), tokenDigest)
	}
	if c == nil {
		s.loginFailed(r, client)
		data := s.loginData(next)
		data.Error = "Wrong token."
		dashboard.WriteLogin(w, http.StatusUnauthorized, data)
		return
	}
	s.login.guard.succeed(client)
	if !c.scopes.Has(tokens.Read) {
		s.log.Info("backend: dashboard login with a token that cannot read", "token", c.name, "scopes", c.scopes.String())
		data := s.loginData(next)
		data.Error = "This token (" + c.name + ") has the scopes " + c.scopes.String() + " only; the dashboard needs read. " +
			"Create one with: claude-relay token create --scope read (or --scope approve to decide approvals too)."
		dashboard.WriteLogin(w, http.StatusForbidden, data)
		return
	}
	http.SetCookie(w, s.login.cookie(r, s.login.mint(c.id, tokens.CookieMAC(token)), int(cookieMaxAge/time.Second)))
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// loginFailed counts a failed login against client and logs it, at most
// once a minute with the count since the last line, so a guessing script
// cannot flood the log.
func (s *Server) loginFailed(r *http.Request, client string) {
	s.metrics.authFailures.Inc()
	s.login.failsSinceLog.Add(1)
	if lock := s.login.guard.fail(client, s.login.now()); lock > 0 {
		throttledAt(&s.login.lastLockLog, loginFailLogEvery, s.login.now(), func() {
			s.log.Warn("backend: too many failed dashboard logins from one address; refusing its logins for a while",
				"client", client, "for", lock.Round(time.Second))
		})
	}
	throttledAt(&s.login.lastFailLog, loginFailLogEvery, s.login.now(), func() {
		s.log.Info("backend: dashboard login failed", "remote", r.RemoteAddr, "failures", s.login.failsSinceLog.Swap(0))
	})
}

// loginLocked answers a login from a locked-out address: 429, with how
// long to wait, without looking at the token.
func (s *Server) loginLocked(w http.ResponseWriter, r *http.Request, wait time.Duration) {
	s.metrics.authFailures.Inc()
	secs := retryAfter(wait)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	data := s.loginData("/")
	data.Error = "Too many failed logins from your address: wait " + strconv.Itoa(secs) +
		" seconds, then try again with the token from serve.tokens (or the file named below)."
	dashboard.WriteLogin(w, http.StatusTooManyRequests, data)
}

// handleLogout ends the login: the browser drops the cookie, and the
// server refuses it from now on even if a copy is replayed (login.go).
func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) {
	if err := s.checkSameSite(r, "a logout", "log out from this dashboard's own page"); err != nil {
		s.log.Info("backend: refused a logout from another site", "remote", r.RemoteAddr, "why", err)
		writeError(w, http.StatusForbidden, err.Error())
		return
	}
	creds, _ := r.Context().Value(credentialsKey{}).([]credential)
	if c, lc := s.loginOf(r, creds); c != nil {
		if err := s.login.logout(lc); err != nil {
			s.log.Warn("backend: "+err.Error(), "token", c.name)
		}
	}
	http.SetCookie(w, s.login.cookie(r, "", -1))
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// safeNext keeps a post-login redirect on this site: a local absolute path,
// not "//host" or "/\host" (which browsers treat as another origin).
func safeNext(next string) string {
	if next == "" || next[0] != '/' || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") ||
		strings.HasPrefix(next, "/login") || strings.ContainsAny(next, "\r\n") {
		return "/"
	}
	if u, err := url.Parse(next); err != nil || u.Host != "" || u.Scheme != "" {
		return "/"
	}
	return next
}
