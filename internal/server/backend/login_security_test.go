package backend

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/config"
	relaywire "github.com/claude-relay/claude-relay/internal/wire"
)

// formHdr are the headers of the login form as a browser posts it from
// this dashboard's own page.
func (e *env) formHdr() map[string]string {
	return map[string]string{"Authorization": "", "Content-Type": "application/x-www-form-urlencoded",
		"Origin": e.ts.URL, "Sec-Fetch-Site": "same-origin"}
}

// cookieOf is "name=value" of the one cookie resp sets.
func cookieOf(t *testing.T, resp *http.Response) *http.Cookie {
	t.Helper()
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("login: %d %v", resp.StatusCode, resp.Cookies())
	}
	return resp.Cookies()[0]
}

func loginForm(token string) []byte {
	return []byte(url.Values{"token": {token}, "next": {"/"}}.Encode())
}

// testClock is a clock tests move by hand.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock { return &testClock{t: time.Unix(1_800_000_000, 0)} }

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// whoamiWith is the status of GET /api/whoami with only cookie.
func (e *env) whoamiWith(cookie string) int {
	e.t.Helper()
	return e.call("GET", "/api/whoami", nil, map[string]string{"Authorization": "", "Cookie": cookie}, nil)
}

// TestLoginCookieSecureWithHTTPS: with an https serve.public_url the
// cookie is Secure and __Host- prefixed (and only that name is read);
// over plain http it keeps its name and is not Secure. Both expire.
func TestLoginCookieSecureWithHTTPS(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.PublicURL = "https://relay.example" })
	c := cookieOf(t, e.do("POST", "/login", loginForm(testToken), e.formHdr()))
	if c.Name != "__Host-"+CookieName || !c.Secure || c.Path != "/" || c.Domain != "" || !c.HttpOnly ||
		c.SameSite != http.SameSiteStrictMode || c.MaxAge != int(cookieMaxAge/time.Second) {
		t.Errorf("cookie %+v: want __Host-, Secure, HttpOnly, SameSite=Strict, Path=/, no Domain, Max-Age 30 days", c)
	}
	if code := e.whoamiWith(c.Name + "=" + c.Value); code != 200 {
		t.Errorf("the secure cookie: %d", code)
	}
	if code := e.whoamiWith(CookieName + "=" + c.Value); code != 401 {
		t.Errorf("the same value under the plain name (settable by a plain-http page): %d, want 401", code)
	}
	plain := newEnv(t)
	c = cookieOf(t, plain.do("POST", "/login", loginForm(testToken), plain.formHdr()))
	if c.Name != CookieName || c.Secure || c.MaxAge != int(cookieMaxAge/time.Second) {
		t.Errorf("plain-http cookie %+v", c)
	}
}

// TestLoginCookieExpires: the server refuses a cookie older than
// cookieMaxAge whatever the browser does, and a cookie whose issue time
// was moved (to make it young again) at once.
func TestLoginCookieExpires(t *testing.T) {
	clock := newTestClock()
	e := newEnv(t, func(o *Options) { o.now = clock.now })
	c := cookieOf(t, e.do("POST", "/login", loginForm(testToken), e.formHdr()))
	cookie := c.Name + "=" + c.Value
	clock.add(cookieMaxAge - time.Hour)
	if code := e.whoamiWith(cookie); code != 200 {
		t.Fatalf("a 29-day-old cookie: %d, want 200", code)
	}
	clock.add(2 * time.Hour)
	if code := e.whoamiWith(cookie); code != 401 {
		t.Errorf("a cookie past its 30 days: %d, want 401", code)
	}
	// Move the issue time forward: the signature no longer matches.
	parts := strings.Split(c.Value, ".")
	issued, _ := strconv.ParseInt(parts[len(parts)-3], 10, 64)
	parts[len(parts)-3] = strconv.FormatInt(issued+int64(2*time.Hour/time.Second), 10)
	if code := e.whoamiWith(c.Name + "=" + strings.Join(parts, ".")); code != 401 {
		t.Errorf("a cookie with its issue time moved: %d, want 401", code)
	}
}

// TestLogoutRevokesCookie: after logout a copy of the cookie is refused,
// also by a backend started later on the same data dir (the logout list is
// a file there), while another login's cookie still works there (the
// signing key is a file there too).
func TestLogoutRevokesCookie(t *testing.T) {
	dir := t.TempDir()
	state := func(o *Options) { o.StateDir = dir }
	e := newEnv(t, state)
	out := cookieOf(t, e.do("POST", "/login", loginForm(testToken), e.formHdr()))
	kept := cookieOf(t, e.do("POST", "/login", loginForm(testToken), e.formHdr()))
	outCookie, keptCookie := out.Name+"="+out.Value, kept.Name+"="+kept.Value
	if code := e.whoamiWith(outCookie); code != 200 {
		t.Fatalf("before logout: %d", code)
	}
	hdr := e.formHdr()
	hdr["Cookie"] = outCookie
	resp := e.do("POST", "/logout", nil, hdr)
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 || resp.Cookies()[0].MaxAge >= 0 {
		t.Fatalf("logout: %d %v", resp.StatusCode, resp.Cookies())
	}
	if code := e.whoamiWith(outCookie); code != 401 {
		t.Errorf("the logged-out cookie replayed: %d, want 401", code)
	}
	if code := e.whoamiWith(keptCookie); code != 200 {
		t.Errorf("another login's cookie after one logout: %d, want 200", code)
	}
	for _, name := range []string{LoginKeyFile, LogoutsFile} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want it 0600", name, err, fi)
		}
	}
	restarted := newEnv(t, state)
	if code := restarted.whoamiWith(outCookie); code != 401 {
		t.Errorf("the logged-out cookie after a restart: %d, want 401", code)
	}
	if code := restarted.whoamiWith(keptCookie); code != 200 {
		t.Errorf("a live login after a restart: %d, want 200", code)
	}
	// Without a state dir the logout holds in the process.
	mem := newEnv(t)
	c := cookieOf(t, mem.do("POST", "/login", loginForm(testToken), mem.formHdr()))
	hdr = mem.formHdr()
	hdr["Cookie"] = c.Name + "=" + c.Value
	mem.do("POST", "/logout", nil, hdr).Body.Close()
	if code := mem.whoamiWith(c.Name + "=" + c.Value); code != 401 {
		t.Errorf("in memory: the logged-out cookie replayed: %d, want 401", code)
	}
}

// TestLoginCrossSiteRefused: a login or logout form posted from another
// site (or with neither Origin nor Sec-Fetch-Site) is refused with 403, and
// sets or ends nothing.
func TestLoginCrossSiteRefused(t *testing.T) {
	e := newEnv(t)
	c := cookieOf(t, e.do("POST", "/login", loginForm(testToken), e.formHdr()))
	cookie := c.Name + "=" + c.Value
	// Our pages have Referrer-Policy: no-referrer, so Chromium posts their
	// forms with Origin: null beside Sec-Fetch-Site: same-origin.
	cookieOf(t, e.do("POST", "/login", loginForm(testToken), map[string]string{"Authorization": "",
		"Content-Type": "application/x-www-form-urlencoded", "Origin": "null", "Sec-Fetch-Site": "same-origin"}))
	for _, tc := range []struct {
		name string
		hdr  map[string]string
		want string
	}{
		{"evil origin", map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": ""}, "is not this dashboard"},
		{"cross-site", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": ""}, "cross-site request"},
		{"no origin at all", map[string]string{"Origin": "", "Sec-Fetch-Site": ""}, "needs an Origin or Sec-Fetch-Site header"},
		{"opaque origin, no fetch metadata", map[string]string{"Origin": "null", "Sec-Fetch-Site": ""}, "is not this dashboard"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/login", "/logout"} {
				hdr := e.formHdr()
				hdr["Cookie"] = cookie
				for k, v := range tc.hdr {
					hdr[k] = v
				}
				resp := e.do("POST", path, loginForm(testToken), hdr)
				body := readAll(t, resp)
				if resp.StatusCode != 403 || len(resp.Cookies()) != 0 || !strings.Contains(body, tc.want) {
					t.Errorf("%s: %d %v, want 403 saying %q:\n%s", path, resp.StatusCode, resp.Cookies(), tc.want, body)
				}
			}
			if code := e.whoamiWith(cookie); code != 200 {
				t.Errorf("the cookie after a cross-site logout: %d, want it to still work", code)
			}
		})
	}
}

// serveFrom serves one request from remote (ip:port) to e's handler.
func (e *env) serveFrom(remote string, method, path string, body []byte, hdr map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.RemoteAddr = remote
	req.Host = "127.0.0.1:8787"
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(rec, req)
	return rec
}

// TestLoginThrottle: after loginFreeFailures failures from one address,
// its logins get 429 with Retry-After, doubling, without the token being
// looked at; other addresses are not affected; a success after the wait
// starts over; tokens shorter than config.MinTokenLen never log in; the
// failure log line is throttled.
func TestLoginThrottle(t *testing.T) {
	clock := newTestClock()
	logs := &syncBuffer{}
	e := newEnv(t, func(o *Options) {
		o.now = clock.now
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	const attacker, other = "192.0.2.7:40000", "198.51.100.9:40000"
	hdr := map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Sec-Fetch-Site": "same-origin"}
	login := func(remote, token string) *httptest.ResponseRecorder {
		return e.serveFrom(remote, "POST", "/login", loginForm(token), hdr)
	}
	for i := 1; i <= loginFreeFailures; i++ {
		if rec := login(attacker, "wrong-token-0123456789"); rec.Code != 401 {
			t.Fatalf("failure %d: %d, want 401", i, rec.Code)
		}
	}
	rec := login(attacker, testToken)
	if rec.Code != 429 || rec.Header().Get("Retry-After") != "1" || !strings.Contains(rec.Body.String(), "Too many failed logins") {
		t.Fatalf("the right token while locked out: %d Retry-After %q, want 429 and 1s:\n%s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	if rec := login(other, testToken); rec.Code != 303 {
		t.Errorf("another address: %d, want 303", rec.Code)
	}
	clock.add(time.Second)
	if rec := login(attacker, "wrong-token-0123456789"); rec.Code != 401 {
		t.Fatalf("after the wait: %d, want 401", rec.Code)
	}
	if rec := login(attacker, testToken); rec.Code != 429 || rec.Header().Get("Retry-After") != "2" {
		t.Errorf("after the 6th failure: %d Retry-After %q, want 429 and 2s", rec.Code, rec.Header().Get("Retry-After"))
	}
	clock.add(2 * time.Second)
	if rec := login(attacker, testToken); rec.Code != 303 {
		t.Errorf("the right token after the wait: %d, want 303", rec.Code)
	}
	if rec := login(attacker, "wrong-token-0123456789"); rec.Code != 401 {
		t.Errorf("a failure after a success starts over: %d, want 401", rec.Code)
	}
	// IPv6: one /64 is one client.
	for i := range loginFreeFailures {
		login("[2001:db8::"+strconv.Itoa(i+1)+"]:1", "wrong-token-0123456789")
	}
	if rec := login("[2001:db8::99]:1", testToken); rec.Code != 429 {
		t.Errorf("another address of the same /64: %d, want 429", rec.Code)
	}
	// A configured token too short to be safe never logs in.
	e.setTokens("short-tok")
	if rec := login("203.0.113.1:1", "short-tok"); rec.Code != 401 {
		t.Errorf("a 9-character token: %d, want 401", rec.Code)
	}
	if n := strings.Count(logs.String(), "dashboard login failed"); n != 1 {
		t.Errorf("%d 'login failed' lines, want 1 (throttled):\n%s", n, logs)
	}
	// A minute on, the next failure is logged with the count since.
	clock.add(loginFailLogEvery)
	login("203.0.113.1:1", "wrong-token-0123456789")
	if n := strings.Count(logs.String(), "dashboard login failed"); n != 2 || !strings.Contains(logs.String(), "failures=") {
		t.Errorf("%d 'login failed' lines after a minute, want 2 counting the failures:\n%s", n, logs)
	}
}

// TestLoginGuardForgetsAndStaysBounded: failures older than loginForget
// no longer count, and the table never grows past loginMaxClients.
func TestLoginGuardForgetsAndStaysBounded(t *testing.T) {
	g := loginGuard{m: map[string]*loginFailures{}}
	now := time.Unix(1_800_000_000, 0)
	for range loginFreeFailures - 1 {
		g.fail("a", now)
	}
	if lock := g.fail("a", now.Add(loginForget+time.Second)); lock != 0 {
		t.Errorf("a failure an hour after the others locked: %v", lock)
	}
	for i := range loginMaxClients + 10 {
		g.fail(strconv.Itoa(i), now)
	}
	if n := len(g.m); n > loginMaxClients {
		t.Errorf("%d clients remembered, want at most %d", n, loginMaxClients)
	}
	for range 40 {
		g.fail("b", now)
	}
	if d := g.locked("b", now); d != loginMaxLockout {
		t.Errorf("lockout after 40 failures: %v, want the cap %v", d, loginMaxLockout)
	}
}

// do with an explicit Host header.
func (e *env) doHost(host, method, path string, hdr map[string]string) *http.Response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.ts.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Host = host
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

// statusHost is doHost's status, the body read and closed.
func (e *env) statusHost(host, method, path string, hdr map[string]string) int {
	e.t.Helper()
	resp := e.doHost(host, method, path, hdr)
	readAll(e.t, resp)
	return resp.StatusCode
}

// TestHostAllowlist: a request naming a host this server does not answer
// to (DNS rebinding) gets 421 saying which key to set; IP literals,
// localhost, serve.public_url's host and serve.allowed_hosts pass, and so
// do /healthz and a Bearer request to an authenticated route.
func TestHostAllowlist(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.PublicURL = "https://relay.example.com"
		o.AllowedHosts = []string{"box.lan", "*.tail1234.ts.net"}
	})
	noAuth := map[string]string{"Accept": "text/html"}
	for _, host := range []string{"evil.example", "evil.example:8787", "relay.example.com.evil.example", "tail1234.ts.net", "box.lan.evil"} {
		resp := e.doHost(host, "GET", "/login", noAuth)
		body := readAll(t, resp)
		if resp.StatusCode != http.StatusMisdirectedRequest || !strings.Contains(body, "serve.allowed_hosts") {
			t.Errorf("Host %s: %d, want 421 naming serve.allowed_hosts:\n%s", host, resp.StatusCode, body)
		}
	}
	for _, host := range []string{"127.0.0.1:8787", "[::1]:8787", "10.1.2.3", "localhost:8787", "app.localhost",
		"relay.example.com", "RELAY.example.com.", "box.lan:8787", "me.tail1234.ts.net"} {
		if code := e.statusHost(host, "GET", "/login", noAuth); code != 200 {
			t.Errorf("Host %s: %d, want 200", host, code)
		}
	}
	if code := e.statusHost("evil.example", "GET", "/healthz", nil); code != 200 {
		t.Errorf("/healthz by any name: %d", code)
	}
	if code := e.statusHost("evil.example", "GET", "/api/sessions", bearer(testToken)); code != 200 {
		t.Errorf("a Bearer API request by an unlisted name: %d, want 200", code)
	}
	if code := e.statusHost("evil.example", "GET", "/api/sessions", bearer("wrong-token-0123456789")); code != 401 {
		t.Errorf("a wrong Bearer token by an unlisted name: %d, want 401", code)
	}
	if code := e.statusHost("evil.example", "POST", "/login", bearer(testToken)); code != 421 {
		t.Errorf("a login with a Bearer header by an unlisted name: %d, want 421", code)
	}
}

// TestPushBodyLeavesTheCommandOut: by default a push names the tool and
// the project, not the command (a secret in it reaches the push service
// otherwise); with serve.notify_include_input the command comes with every
// credential shape redacted.
func TestPushBodyLeavesTheCommandOut(t *testing.T) {
	const command = "GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789 mysql -u root -pHunter2 shop < dump.sql"
	secrets := []string{"ghp_", "Hunter2", "dump.sql"}
	for _, include := range []bool{false, true} {
		t.Run("include_input="+strconv.FormatBool(include), func(t *testing.T) {
			e := newApprovalEnv(t, func(o *Options) { o.NotifyIncludeInput = include })
			e.post("s1", envelope("s1", 1, relaywire.TypeRunStarted, relaywire.RunStarted{RunID: "r1", Cwd: "/home/dev/shop", PromptRecord: relaywire.RecordPrompt("go", nil)}))
			e.request("a1", "tool", "Bash", command)
			m := e.push.next(t)
			want := "Bash\nin shop"
			if include {
				want = "GITHUB_TOKEN=*** mysql -u root -p*** shop < dump.sql\nin shop"
				secrets = secrets[:2]
			}
			if m.Body != want || m.Title != "Claude wants to run Bash" {
				t.Errorf("push %+v, want body %q", m, want)
			}
			for _, s := range secrets {
				if strings.Contains(m.Title+m.Body+m.ClickURL, s) {
					t.Errorf("the push carries %q: %+v", s, m)
				}
			}
		})
	}
}

// TestMinTokenLenMatchesConfig: the login refuses what config refuses.
func TestMinTokenLenMatchesConfig(t *testing.T) {
	if config.MinTokenLen < 16 {
		t.Errorf("MinTokenLen %d", config.MinTokenLen)
	}
}

// TestLogoutListFile: two lists on one file (two backends of a data dir)
// see each other's logouts; a rewrite drops only the expired lines; a file
// that cannot be read refuses every cookie rather than bring one back.
func TestLogoutListFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), LogoutsFile)
	a, b := &logoutList{path: path, mem: map[string]int64{}}, &logoutList{path: path, mem: map[string]int64{}}
	now := time.Unix(1_800_000_000, 0)
	if err := a.add("old", now.Add(time.Minute), now); err != nil {
		t.Fatal(err)
	}
	if err := a.add("live", now.Add(48*time.Hour), now); err != nil {
		t.Fatal(err)
	}
	if !b.revoked("live", now) || !b.revoked("old", now) || b.revoked("other", now) {
		t.Fatal("the other backend does not see the logouts")
	}
	later := now.Add(time.Hour)
	if b.revoked("old", later) {
		t.Error("a logout past its cookie's expiry still counts")
	}
	if err := b.compact(later); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), "old") || !strings.Contains(string(data), "live") {
		t.Errorf("after the rewrite: %q", data)
	}
	if !a.revoked("live", later) {
		t.Error("a live logout lost in the rewrite")
	}
	if err := os.Chmod(path, 0); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() != 0 { // root reads it anyway
		if c := (&logoutList{path: path, mem: map[string]int64{}}); !c.revoked("anything", later) || c.err() == nil {
			t.Error("an unreadable logout list lets cookies through")
		}
	}
}
