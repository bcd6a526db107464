package dashboard

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestPagesEmbedded: every page Register routes to is embedded (servePage
// looks a page up on the first request, not when it is registered).
func TestPagesEmbedded(t *testing.T) {
	mux := http.NewServeMux()
	Register(mux, Pages{})
	for _, path := range []string{"/", "/sessions/abc", "/cost", "/approvals"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "<html") {
			t.Errorf("%s: %d %.80q", path, rec.Code, rec.Body.String())
		}
	}
}

func TestPagesAndAssets(t *testing.T) {
	mux := http.NewServeMux()
	Register(mux, Pages{})
	for _, tt := range []struct {
		path, ctype string
		status      int
	}{
		{"/", "text/html; charset=utf-8", 200},
		{"/sessions/abc", "text/html; charset=utf-8", 200},
		{"/static/app.css", "text/css; charset=utf-8", 200},
		{"/static/session.js", "text/javascript; charset=utf-8", 200},
		{"/static/index.html", "", 404}, // pages only at their routes
		{"/static/nope.js", "", 404},
	} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", tt.path, nil))
		if rec.Code != tt.status {
			t.Errorf("%s: %d, want %d", tt.path, rec.Code, tt.status)
			continue
		}
		if tt.status != 200 {
			continue
		}
		h := rec.Header()
		if h.Get("Content-Type") != tt.ctype || !strings.Contains(h.Get("Content-Security-Policy"), "script-src 'self'") ||
			h.Get("X-Content-Type-Options") != "nosniff" || h.Get("ETag") == "" {
			t.Errorf("%s: headers %v", tt.path, h)
		}
		// A revalidation with the ETag is a 304.
		req := httptest.NewRequest("GET", tt.path, nil)
		req.Header.Set("If-None-Match", h.Get("ETag"))
		rec = httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if rec.Code != http.StatusNotModified {
			t.Errorf("%s revalidated: %d, want 304", tt.path, rec.Code)
		}
	}
}

// TestNotFoundPages: an unknown session and an unknown path get the
// dashboard's own 404 page, with what was not found (escaped), a search box
// and a way back; a known session gets its page.
func TestNotFoundPages(t *testing.T) {
	mux := http.NewServeMux()
	Register(mux, Pages{SessionExists: func(_ *http.Request, id string) (bool, error) { return id == "known", nil }})
	for _, tt := range []struct {
		path   string
		status int
		want   []string
	}{
		{"/sessions/known", 200, []string{"claude-relay: session"}},
		{"/sessions/typo%3Cb%3E", 404, []string{"No session “typo&lt;b&gt;”", `name="q" value="typo&lt;b&gt;"`, `href="/" id="nf-back"`}},
		{"/nope/<x>", 404, []string{"Nothing at /nope/&lt;x&gt;", `href="/" id="nf-back"`}},
	} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", tt.path, nil))
		body := rec.Body.String()
		if rec.Code != tt.status {
			t.Errorf("%s: %d, want %d", tt.path, rec.Code, tt.status)
		}
		for _, w := range tt.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s: page lacks %q:\n%s", tt.path, w, body)
			}
		}
		if strings.Contains(body, "<b>") || strings.Contains(body, "<x>") {
			t.Errorf("%s: unescaped input in the page", tt.path)
		}
	}
}

// No script may put data into the page as HTML: the XSS guarantee rests on
// every insertion being textContent (the CSP is the second line).
// TestScriptsNeverInsertHTML: event content reaches the pages as text; the
// one HTML sink is the assistant's Markdown, rendered and sanitised on the
// server (internal/server/markdown), parsed inertly and checked again by
// session-view.js's setMarkdown. Any other sink fails here.
func TestScriptsNeverInsertHTML(t *testing.T) {
	bad := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function|parseFromString|createContextualFragment`)
	allowed := map[string]int{"session-view.js:parseFromString": 1}
	for name, f := range files() {
		if !strings.HasSuffix(name, ".js") {
			continue
		}
		for i, line := range strings.Split(string(f.data), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "//") {
				continue
			}
			m := bad.FindString(line)
			if m == "" {
				continue
			}
			if key := name + ":" + m; allowed[key] > 0 {
				allowed[key]--
				continue
			}
			t.Errorf("%s:%d uses an HTML sink: %s", name, i+1, strings.TrimSpace(line))
		}
	}
}

func TestWriteLogin(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteLogin(rec, http.StatusUnauthorized, LoginData{Error: "<b>bad</b>", Next: `/x"><script>alert(1)</script>`})
	body := rec.Body.String()
	if rec.Code != 401 {
		t.Errorf("status %d", rec.Code)
	}
	if strings.Contains(body, "<script>") || strings.Contains(body, "<b>bad") {
		t.Errorf("login page does not escape its data:\n%s", body)
	}
	csp := rec.Header().Get("Content-Security-Policy")
	m := regexp.MustCompile(`nonce-([0-9a-f]+)`).FindStringSubmatch(csp)
	if m == nil || !strings.Contains(body, `nonce="`+m[1]+`"`) {
		t.Errorf("style nonce missing: CSP %q", csp)
	}
	rec = httptest.NewRecorder()
	WriteLogin(rec, http.StatusUnauthorized, LoginData{Error: "no tokens", Disabled: true})
	if strings.Contains(rec.Body.String(), "<form") {
		t.Error("a disabled login still shows the form")
	}
}
