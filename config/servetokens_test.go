package config

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/internal/tokens"
)

// TestServeTokenForms: serve.tokens in each documented form, from the file
// and from the environment, with names and scopes.
func TestServeTokenForms(t *testing.T) {
	yaml := `serve:
  tokens:
    - plain-token-0123456789
    - token: phone-token-0123456789
      name: phone
      scopes: [approve]
    - {token: ops-token-0123456789, scopes: "ingest+read,approve"}
    - token: root-token-0123456789
      name: root
      scopes: admin
`
	for _, tc := range []struct {
		name string
		file string
		env  string
		want []ServeToken
	}{
		{name: "yaml list of strings and mappings", file: yaml, want: []ServeToken{
			{Token: "plain-token-0123456789"},
			{Name: "phone", Token: "phone-token-0123456789", Scopes: []tokens.Scope{tokens.Approve}},
			{Token: "ops-token-0123456789", Scopes: []tokens.Scope{tokens.Ingest, tokens.Read, tokens.Approve}},
			{Name: "root", Token: "root-token-0123456789", Scopes: []tokens.Scope{tokens.Admin}},
		}},
		{name: "env comma-separated", env: "a-token-0123456789, b-token-0123456789,,", want: []ServeToken{{Token: "a-token-0123456789"}, {Token: "b-token-0123456789"}}},
		{name: "env JSON array", env: `["a-token-0123456789",{"token":"p-token-0123456789","name":"phone","scopes":["approve","read"]}]`, want: []ServeToken{
			{Token: "a-token-0123456789"}, {Name: "phone", Token: "p-token-0123456789", Scopes: []tokens.Scope{tokens.Read, tokens.Approve}},
		}},
		{name: "env beats file", file: yaml, env: "only-token-0123456789", want: []ServeToken{{Token: "only-token-0123456789"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := LoadOptions{LookupEnv: envOf(map[string]string{"HOME": dir, "CLAUDE_RELAY_SERVE_TOKENS": tc.env})}
			if tc.env == "" {
				opts.LookupEnv = envOf(map[string]string{"HOME": dir})
			}
			if tc.file != "" {
				opts.File = writeFile(t, dir, tc.file)
			}
			l, err := Load(opts)
			if err != nil {
				t.Fatal(err)
			}
			got := l.Config.Serve.Tokens
			if !slices.EqualFunc(got, tc.want, func(a, b ServeToken) bool {
				return a.Name == b.Name && a.Token == b.Token && slices.Equal(a.Scopes, b.Scopes)
			}) {
				t.Errorf("tokens %+v, want %+v", reveal(got), reveal(tc.want))
			}
			if v := l.Value("serve.tokens"); v != "***" {
				t.Errorf("displayed as %q", v)
			}
			for _, tok := range got {
				if !slices.Contains(l.Config.Secrets(), tok.Token.Reveal()) {
					t.Errorf("%s is not redacted from logs", tok.Name)
				}
			}
		})
	}
}

func reveal(ts []ServeToken) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name+"/"+t.Token.Reveal()+"/"+tokens.SetOf(t.Scopes).String())
	}
	return out
}

// TestServeTokenErrors: each bad entry names the entry and what is
// allowed, and never the token.
func TestServeTokenErrors(t *testing.T) {
	for _, tc := range []struct{ env, want string }{
		{`[{"token":"sekrit-token-0001","scopes":["aprove"]}]`, `entry 1: unknown scope "aprove" (allowed: ingest, decisions, read, approve, audit, admin, or helper (ingest and decisions))`},
		{`["ok-token-0123456789",{"token":"sekrit-token-0001","scopes":[]}]`, `entry 2: scopes is empty (leave it out for ingest and read)`},
		{`[{"name":"phone"}]`, `entry 1: a mapping needs its token`},
		{`[{"token":"sekrit-token-0001","role":"x"}]`, `entry 1: unknown key "role" (allowed: token, name, scopes)`},
		{`[{"token":"sekrit-token-0001","name":"a:b"}]`, `entry 1: bad token name "a:b"`},
		{`[{"token":"sekrit-token-0001","name":"x"},{"token":"sekrit-token-0002","name":"x"}]`, `entry 2: name "x" is used twice`},
		{`[sekrit-1]`, `must be a JSON array: invalid JSON at byte 2`},
		{`[42]`, `entry 1: a float64, not a token or a mapping`},
	} {
		_, err := Load(LoadOptions{LookupEnv: envOf(map[string]string{"HOME": t.TempDir(), "CLAUDE_RELAY_SERVE_TOKENS": tc.env})})
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Key != "serve.tokens" || !strings.Contains(err.Error(), tc.want) ||
			!strings.Contains(err.Error(), "{token, name, scopes}") {
			t.Errorf("%s: %v\nwant it to contain %q", tc.env, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "sekrit") {
			t.Errorf("%s: the error shows a token: %v", tc.env, err)
		}
	}
}

// TestNotifyAndPublicURL: the two new keys are validated, the notify URL
// is a secret (an ntfy topic URL is a credential) and the public URL loses
// its trailing slash.
func TestNotifyAndPublicURL(t *testing.T) {
	env := map[string]string{"HOME": t.TempDir(), "CLAUDE_RELAY_SERVE_NOTIFY_URL": "https://ntfy.sh/relay-x7f3k",
		"CLAUDE_RELAY_SERVE_PUBLIC_URL": "https://relay.example.com/"}
	l, err := Load(LoadOptions{LookupEnv: envOf(env)})
	if err != nil {
		t.Fatal(err)
	}
	c := l.Config.Serve
	if c.NotifyURL.Reveal() != env["CLAUDE_RELAY_SERVE_NOTIFY_URL"] || c.PublicURL != "https://relay.example.com" {
		t.Errorf("serve %+v", c)
	}
	if l.Value("serve.notify_url") != "***" || !slices.Contains(l.Config.Secrets(), env["CLAUDE_RELAY_SERVE_NOTIFY_URL"]) {
		t.Errorf("notify_url shown as %q or not redacted", l.Value("serve.notify_url"))
	}
	for key, bad := range map[string]string{"CLAUDE_RELAY_SERVE_NOTIFY_URL": "ntfy.sh/topic", "CLAUDE_RELAY_SERVE_PUBLIC_URL": "ftp://x"} {
		e := map[string]string{"HOME": t.TempDir(), key: bad}
		if _, err := Load(LoadOptions{LookupEnv: envOf(e)}); err == nil || !strings.Contains(err.Error(), "allowed: an http:// or https:// URL") {
			t.Errorf("%s=%s: %v", key, bad, err)
		}
	}
}
