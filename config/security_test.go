package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestServeTokensTooShort: a serve.tokens entry shorter than MinTokenLen is
// refused, naming the entry and how to make a good token, never quoting it.
func TestServeTokensTooShort(t *testing.T) {
	for _, tc := range []struct{ env, want string }{
		{"a", "entry 1: the token is 1 characters long"},
		{"good-token-0123456789,shorty-tok", "entry 2: the token is 10 characters long"},
		{`[{"token":"shorty-tok","name":"phone","scopes":["approve"]}]`, `entry 1 ("phone"): the token is 10 characters long`},
	} {
		_, err := Load(LoadOptions{LookupEnv: envOf(map[string]string{"HOME": t.TempDir(), "CLAUDE_RELAY_SERVE_TOKENS": tc.env})})
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Key != "serve.tokens" || !strings.Contains(err.Error(), tc.want) ||
			!strings.Contains(err.Error(), "at least 16") || !strings.Contains(err.Error(), "openssl rand -hex 32") {
			t.Errorf("%s: %v\nwant a serve.tokens error containing %q, the minimum and how to make one", tc.env, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "shorty-tok") {
			t.Errorf("%s: the error shows the token: %v", tc.env, err)
		}
	}
	if _, err := Load(LoadOptions{LookupEnv: envOf(map[string]string{"HOME": t.TempDir(), "CLAUDE_RELAY_SERVE_TOKENS": "exactly-16-chars"})}); err != nil {
		t.Errorf("a 16-character token: %v", err)
	}
}

// TestConfigErrorsMaskSecrets: an invalid claude.env in JSON form (which
// the NAME=value parser cannot split) is masked whole in the error, and a
// credential-shaped word in any other key's invalid value is masked too.
func TestConfigErrorsMaskSecrets(t *testing.T) {
	for _, tc := range []struct {
		name, key, value, secret, want string
	}{
		{"json claude.env", "CLAUDE_RELAY_CLAUDE_ENV", `{"ANTHROPIC_API_KEY":"sk-ant-api03-abcdefghijkl","DEBUG":"x"}`, "sk-ant-api03-abcdefghijkl", `claude.env = "***,***"`},
		{"json claude.env, innocent name", "CLAUDE_RELAY_CLAUDE_ENV", `{"MY_VAR":"hunter2-is-a-secret"}`, "hunter2-is-a-secret", `claude.env = "***"`},
		{"pairs then junk", "CLAUDE_RELAY_CLAUDE_ENV", "DB_URL=postgres://u:pw@h/db,BROKEN", "pw@h", `claude.env = "DB_URL=***,***"`},
		{"a token in backend.url", "CLAUDE_RELAY_BACKEND_URL", "ftp://relay.example/?token=ghp_abcdefghijklmnopqrstuvwxyz0123", "ghp_", "backend.url"},
		{"a token as the log level", "CLAUDE_RELAY_LOG_LEVEL", "GITHUB_TOKEN=abc123def", "abc123def", "log.level"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(LoadOptions{LookupEnv: envOf(map[string]string{"HOME": t.TempDir(), tc.key: tc.value})})
			var ve *ValidationError
			if !errors.As(err, &ve) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), tc.secret) {
				t.Errorf("the error shows the secret: %v", err)
			}
		})
	}
}

// TestAllowedHostsAndNotifyInput: the two keys of the security review.
func TestAllowedHostsAndNotifyInput(t *testing.T) {
	l, err := Load(LoadOptions{LookupEnv: envOf(map[string]string{"HOME": t.TempDir(),
		"CLAUDE_RELAY_SERVE_ALLOWED_HOSTS": "Relay.Example.com., *.tail1234.ts.net", "CLAUDE_RELAY_SERVE_NOTIFY_INCLUDE_INPUT": "true"})})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Config.Serve.AllowedHosts; !slices.Equal(got, []string{"relay.example.com", "*.tail1234.ts.net"}) {
		t.Errorf("allowed hosts %q", got)
	}
	if !l.Config.Serve.NotifyIncludeInput {
		t.Error("notify_include_input not read")
	}
	l, err = Load(LoadOptions{LookupEnv: envOf(map[string]string{"HOME": t.TempDir()})})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Config.Serve.AllowedHosts) != 0 || l.Config.Serve.NotifyIncludeInput {
		t.Errorf("defaults: %+v", l.Config.Serve)
	}
	for _, bad := range []string{"https://relay.example.com", "relay.example.com:8787", "relay.example.com/x", "a b"} {
		_, err := Load(LoadOptions{LookupEnv: envOf(map[string]string{"HOME": t.TempDir(), "CLAUDE_RELAY_SERVE_ALLOWED_HOSTS": bad})})
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Key != "serve.allowed_hosts" || !strings.Contains(err.Error(), "without scheme, port or path") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
