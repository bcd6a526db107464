package backend

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// TestLoginNamesTokenFile: every token form says where the generated
// default token lives, so a user who never set serve.tokens knows what to
// paste, and never shows a token.
func TestLoginNamesTokenFile(t *testing.T) {
	const file = "/home/dev/.local/share/claude-relay/serve.token"
	e := newEnv(t, func(o *Options) { o.TokenFile = file })
	noAuth := map[string]string{"Authorization": ""}
	hint := regexp.MustCompile(`<p id="token-hint">[^<]*<code>` + regexp.QuoteMeta(file) + `</code>`)
	wrong := []byte(url.Values{"token": {"wrong"}, "next": {"/"}}.Encode())

	for _, tc := range []struct {
		name, method, path string
		body               []byte
		hdr                map[string]string
		status             int
	}{
		{"GET /login", "GET", "/login", nil, noAuth, 200},
		{"a page without the cookie", "GET", "/sessions/s1", nil, map[string]string{"Authorization": "", "Accept": "text/html"}, 401},
		{"a wrong token", "POST", "/login", wrong, e.formHdr(), 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.do(tc.method, tc.path, tc.body, tc.hdr)
			body := readAll(t, resp)
			if resp.StatusCode != tc.status || !hint.MatchString(body) {
				t.Errorf("%d (want %d), page does not name %s:\n%s", resp.StatusCode, tc.status, file, body)
			}
			if strings.Contains(body, testToken) {
				t.Error("the login page shows the token itself")
			}
		})
	}

	// Without a token file (tokens only from the configuration) there is
	// nothing to name.
	plain := newEnv(t)
	body := readAll(t, plain.do("GET", "/login", nil, noAuth))
	if strings.Contains(body, `id="token-hint"`) {
		t.Errorf("no TokenFile, yet the page has a hint:\n%s", body)
	}
	// With no token at all the page explains that instead; the file (which
	// is not accepted then) is not offered.
	e.setTokens()
	body = readAll(t, e.do("GET", "/", nil, map[string]string{"Authorization": "", "Accept": "text/html"}))
	if !strings.Contains(body, "no tokens configured") || strings.Contains(body, `id="token-hint"`) {
		t.Errorf("page with no tokens:\n%s", body)
	}
}
