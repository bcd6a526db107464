package backend

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/claude-relay/claude-relay/internal/dashboard"
)

// CookieName is the dashboard's session cookie.
const CookieName = "claude_relay_session"

// cookieMaxAge keeps a dashboard login for 30 days; rotating the token ends
// it sooner, since the cookie is derived from the token.
const cookieMaxAge = 30 * 24 * time.Hour

// cookieContext separates the cookie MAC from any other use of the token.
const cookieContext = "claude-relay dashboard session v1"

// noTokenLogEvery throttles the warning about refusing requests because no
// token is configured.
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

// authenticate lets a request through when it carries a configured token:
// as a Bearer header on any route, or as the login cookie on GET/HEAD only,
// so a cross-site form can never post events with a browser's cookie.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			next.ServeHTTP(w, r)
			return
		}
		tokens := s.validTokens()
		if len(tokens) == 0 {
			s.warnNoTokens(r)
			s.unauthorized(w, r, true)
			return
		}
		if public(r) || s.bearerOK(r, tokens) || (isRead(r) && s.cookieOK(r, tokens)) {
			next.ServeHTTP(w, r)
			return
		}
		s.metrics.authFailures.Inc()
		s.log.Debug("backend: unauthorized", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr,
			"bearer", r.Header.Get("Authorization") != "")
		s.unauthorized(w, r, false)
	})
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

const noTokensMessage = "this server has no tokens configured, so it refuses every request; set serve.tokens (or CLAUDE_RELAY_SERVE_TOKENS) and reload"

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
	now := time.Now().UnixNano()
	last := s.lastNoTokenLog.Load()
	if now-last < int64(noTokenLogEvery) || !s.lastNoTokenLog.CompareAndSwap(last, now) {
		return
	}
	s.log.Warn("backend: refusing request: no serve tokens configured (set serve.tokens or CLAUDE_RELAY_SERVE_TOKENS)",
		"method", r.Method, "path", r.URL.Path)
}

// validTokens returns the configured non-empty tokens.
func (s *Server) validTokens() []string {
	var out []string
	for _, t := range s.tokens() {
		if v := t.Reveal(); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// bearerOK checks the Authorization header against every token.
func (s *Server) bearerOK(r *http.Request, tokens []string) bool {
	h := r.Header.Get("Authorization")
	scheme, got, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return matchAny(strings.TrimSpace(got), tokens, identity)
}

// cookieOK checks the login cookie against the MAC of every token.
func (s *Server) cookieOK(r *http.Request, tokens []string) bool {
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" {
		return false
	}
	return matchAny(c.Value, tokens, cookieValue)
}

// matchAny reports whether got equals derive(t) for some token.
func matchAny(got string, tokens []string, derive func(string) string) bool {
	return matchIndex(got, tokens, derive) >= 0
}

// matchIndex returns the index of the token t with derive(t) == got, or -1.
// It compares in constant time: both sides are hashed first so lengths leak
// nothing, and the loop never stops early.
func matchIndex(got string, tokens []string, derive func(string) string) int {
	g := sha256.Sum256([]byte(got))
	idx := -1
	for i, t := range tokens {
		w := sha256.Sum256([]byte(derive(t)))
		idx = subtle.ConstantTimeSelect(subtle.ConstantTimeCompare(g[:], w[:]), i, idx)
	}
	return idx
}

func identity(s string) string { return s }

// cookieValue derives the cookie from a token: a MAC, so the cookie is not
// the token (it cannot post events or be replayed as a Bearer header), it
// survives restarts, and rotating the token logs browsers out.
func cookieValue(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(cookieContext))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// loginData is the token form going to next, naming where the default
// token lives (the path only, never the token).
func (s *Server) loginData(next string) dashboard.LoginData {
	return dashboard.LoginData{Next: next, TokenFile: s.tokenFile}
}

func (s *Server) handleLoginForm(w http.ResponseWriter, r *http.Request) {
	dashboard.WriteLogin(w, http.StatusOK, s.loginData(safeNext(r.URL.Query().Get("next"))))
}

// handleLogin checks the form's token and sets the cookie.
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		data := s.loginData("/")
		data.Error = "The form could not be read; try again."
		dashboard.WriteLogin(w, http.StatusBadRequest, data)
		return
	}
	next := safeNext(r.PostFormValue("next"))
	token := strings.TrimSpace(r.PostFormValue("token"))
	tokens := s.validTokens()
	i := matchIndex(token, tokens, identity)
	if token == "" || i < 0 {
		s.metrics.authFailures.Inc()
		s.log.Info("backend: dashboard login failed", "remote", r.RemoteAddr)
		data := s.loginData(next)
		data.Error = "Wrong token."
		dashboard.WriteLogin(w, http.StatusUnauthorized, data)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name:     CookieName,
		Value:    cookieValue(tokens[i]),
		Path:     "/",
		MaxAge:   int(cookieMaxAge / time.Second),
		HttpOnly: true,
		Secure:   r.TLS != nil,
		SameSite: http.SameSiteStrictMode,
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
	})
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
