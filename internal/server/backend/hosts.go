package backend

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// DNS rebinding: a page on evil.example whose name the attacker then points
// at 127.0.0.1 is same-origin with this server as far as the browser
// knows, so it can post to /login (guessing tokens from the victim's
// machine) and read what the answers say. The browser sends the name it
// used in Host, so checkHost refuses a Host that is not a name of this
// server: IP literals (no DNS to rebind), localhost and *.localhost (which
// browsers resolve to loopback themselves), serve.public_url's host, and
// serve.allowed_hosts. The cookie is never at risk (the browser keeps it
// for the real name), but every public route is.

// hostAllowlist is the names a Host header may carry besides IP literals
// and loopback names.
type hostAllowlist struct {
	exact    map[string]bool
	suffixes []string // ".example.com" for "*.example.com"
}

// newHostAllowlist accepts the hosts of allowed (bare names, "*.name", or
// host:port and URLs, whose port and scheme are ignored) and publicURL's.
func newHostAllowlist(allowed []string, publicURL string) hostAllowlist {
	h := hostAllowlist{exact: map[string]bool{}}
	if u, err := url.Parse(publicURL); err == nil && u.Hostname() != "" {
		h.exact[normalHost(u.Hostname())] = true
	}
	for _, a := range allowed {
		name := allowedHostName(a)
		switch {
		case name == "":
		case strings.HasPrefix(name, "*."):
			h.suffixes = append(h.suffixes, name[1:])
		default:
			h.exact[name] = true
		}
	}
	return h
}

// allowedHostName is an allowed_hosts entry as checkHost compares it:
// lower case, without scheme, port or trailing dot; "" when it names no
// host.
func allowedHostName(entry string) string {
	e := strings.TrimSpace(entry)
	if strings.Contains(e, "://") {
		u, err := url.Parse(e)
		if err != nil {
			return ""
		}
		e = u.Host
	}
	return normalHost(stripPort(e))
}

// allows reports whether a request's Host may be served.
func (h hostAllowlist) allows(host string) bool {
	name := normalHost(stripPort(host))
	switch {
	case name == "":
		// HTTP/1.0 without Host: no browser sends that.
		return host == ""
	case isIPLiteral(name), name == "localhost", strings.HasSuffix(name, ".localhost"), h.exact[name]:
		return true
	}
	for _, s := range h.suffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// stripPort drops a ":port" and IPv6 brackets.
func stripPort(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
}

func normalHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

// isIPLiteral reports an IPv4 or IPv6 address (with or without a zone).
func isIPLiteral(h string) bool {
	_, err := netip.ParseAddr(h)
	return err == nil
}

// checkHost refuses, with 421, a request whose Host is not one of this
// server's names. /healthz is exempt (a load balancer may probe by any
// name), and so is a request with a Bearer token to a route that needs
// one: a rebinding page cannot know the token, authenticate refuses it
// without, and the helpers of a backend reached by a name nobody listed
// keep delivering.
func (s *Server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.hosts.allows(r.Host) || r.URL.Path == "/healthz" || (hasBearer(r) && !public(r)) {
			next.ServeHTTP(w, r)
			return
		}
		s.throttled(&s.login.lastHostLog, func() {
			s.log.Warn("backend: refused a request for a host name this server does not answer to (DNS rebinding?); add it to serve.allowed_hosts if people use it",
				"host", clip(r.Host), "path", r.URL.Path, "remote", r.RemoteAddr)
		})
		writeError(w, http.StatusMisdirectedRequest, hostMessage(r.Host))
	})
}

// hostMessage says why a Host was refused and which key to set.
func hostMessage(host string) string {
	return "refused: this server does not answer to the host name " + strconv.Quote(clip(host)) +
		" (a page on another site can point its own name at this address); if this is how people reach it, " +
		"add it to serve.allowed_hosts (or set serve.public_url to this address), or use the IP address or localhost"
}

// hasBearer reports an Authorization: Bearer header with a token in it.
func hasBearer(r *http.Request) bool {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	return ok && strings.EqualFold(scheme, "Bearer") && strings.TrimSpace(tok) != ""
}
