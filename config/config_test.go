package config

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func writeFile(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func testFlags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String("log-level", "", "")
	fs.String("backend-url", "", "")
	return fs
}

var testFlagKeys = map[string]string{"log.level": "log-level", "backend.url": "backend-url"}

func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "log:\n  level: warn\nbackend:\n  url: http://file.example:1\napprovals:\n  timeout: 2m\n")
	tests := []struct {
		name      string
		env       map[string]string
		flags     []string
		wantLevel slog.Level
		wantURL   string
		levelFrom Source
		urlFrom   Source
	}{
		{"file only", nil, nil, slog.LevelWarn, "http://file.example:1", FromFile, FromFile},
		{"env beats file", map[string]string{"CLAUDE_RELAY_LOG_LEVEL": "error"}, nil, slog.LevelError, "http://file.example:1", FromEnv, FromFile},
		{"flag beats env", map[string]string{"CLAUDE_RELAY_LOG_LEVEL": "error", "CLAUDE_RELAY_BACKEND_URL": "http://env:2"},
			[]string{"--log-level=debug"}, slog.LevelDebug, "http://env:2", FromFlag, FromEnv},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"HOME": dir}
			for k, v := range tt.env {
				env[k] = v
			}
			fs := testFlags()
			if err := fs.Parse(tt.flags); err != nil {
				t.Fatal(err)
			}
			l, err := Load(LoadOptions{File: file, LookupEnv: envOf(env), Flags: fs, FlagKeys: testFlagKeys, Cwd: "/work"})
			if err != nil {
				t.Fatal(err)
			}
			c := l.Config
			if c.Log.Level != tt.wantLevel || c.Backend.URL != tt.wantURL {
				t.Errorf("level=%v url=%q, want %v %q", c.Log.Level, c.Backend.URL, tt.wantLevel, tt.wantURL)
			}
			if got := l.Origins["log.level"].Source; got != tt.levelFrom {
				t.Errorf("log.level from %s, want %s", got, tt.levelFrom)
			}
			if got := l.Origins["backend.url"].Source; got != tt.urlFrom {
				t.Errorf("backend.url from %s, want %s", got, tt.urlFrom)
			}
			if c.Approvals.Timeout != 2*time.Minute || l.Origins["approvals.timeout"].Source != FromFile {
				t.Errorf("approvals.timeout = %v from %v", c.Approvals.Timeout, l.Origins["approvals.timeout"])
			}
			if c.Claude.StartupTimeout != 30*time.Second || l.Origins["claude.startup_timeout"].Source != FromDefault {
				t.Errorf("startup timeout default: %v %v", c.Claude.StartupTimeout, l.Origins["claude.startup_timeout"])
			}
			if c.Claude.StallTimeout != 5*time.Minute || l.Origins["claude.stall_timeout"].Source != FromDefault {
				t.Errorf("stall timeout default: %v %v", c.Claude.StallTimeout, l.Origins["claude.stall_timeout"])
			}
		})
	}
}

func TestDefaultsFollowXDG(t *testing.T) {
	l, err := Load(LoadOptions{LookupEnv: envOf(map[string]string{
		"HOME": "/home/u", "XDG_DATA_HOME": "/xdg/data", "CLAUDE_WORKSPACE_PATH": "/ws",
	}), Cwd: "/cwd"})
	if err != nil {
		t.Fatal(err)
	}
	c := l.Config
	checks := map[string][2]string{
		"data_dir":  {c.DataDir, "/xdg/data/claude-relay"},
		"spool.dir": {c.Spool.Dir, "/home/u/.local/state/claude-relay/spool"},
		"serve.db":  {c.Serve.DB, "sqlite:/xdg/data/claude-relay/relay.db"},
		"workspace": {c.Workspace, "/ws"},
	}
	for k, v := range checks {
		if v[0] != v[1] {
			t.Errorf("%s = %q, want %q", k, v[0], v[1])
		}
	}
	if o := l.Origins["workspace"]; o.Source != FromEnv || o.Detail != "CLAUDE_WORKSPACE_PATH" {
		t.Errorf("workspace origin = %v", o)
	}
	if c.Spool.MaxBytes != 1<<30 || c.Forwarder.Batch != "auto" || l.File != "" {
		t.Errorf("defaults: %+v file=%q", c, l.File)
	}
}

func TestValidationNamesKeyValueAndAllowed(t *testing.T) {
	tests := []struct {
		env     map[string]string
		key     string
		value   string
		allowed string
	}{
		{map[string]string{"CLAUDE_RELAY_LOG_LEVEL": "loud"}, "log.level", "loud", "debug, info, warn, error"},
		{map[string]string{"CLAUDE_RELAY_CLAUDE_STARTUP_TIMEOUT": "30"}, "claude.startup_timeout", "30", "unit"},
		{map[string]string{"CLAUDE_RELAY_CLAUDE_STALL_TIMEOUT": "0s"}, "claude.stall_timeout", "0s", "positive duration"},
		{map[string]string{"CLAUDE_RELAY_CLAUDE_STALL_TIMEOUT": "-1m"}, "claude.stall_timeout", "-1m", "positive duration"},
		{map[string]string{"CLAUDE_RELAY_BACKEND_URL": "ftp://x"}, "backend.url", "ftp://x", "http"},
		{map[string]string{"CLAUDE_RELAY_SPOOL_MAX_BYTES": "lots"}, "spool.max_bytes", "lots", "512MiB"},
		{map[string]string{"CLAUDE_RELAY_SERVE_ADDR": "nowhere"}, "serve.addr", "nowhere", "host:port"},
		{map[string]string{"CLAUDE_RELAY_FORWARDER_BATCH": "sometimes"}, "forwarder.batch", "sometimes", "auto, always, never"},
		{map[string]string{"CLAUDE_RELAY_DATA_DIR": "relative/dir"}, "data_dir", "relative/dir", "absolute"},
		{map[string]string{"CLAUDE_RELAY_CLAUDE_DISABLE_API_KEY": "maybe"}, "claude.disable_api_key", "maybe", "true or false"},
		{map[string]string{"CLAUDE_RELAY_CLAUDE_COMMAND": "npx 'open"}, "claude.command", "npx 'open", "quotes closed"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			tt.env["HOME"] = t.TempDir()
			_, err := Load(LoadOptions{LookupEnv: envOf(tt.env)})
			var ve *ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want *ValidationError", err)
			}
			msg := err.Error()
			for _, want := range []string{tt.key, tt.value, tt.allowed, "env"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q lacks %q", msg, want)
				}
			}
		})
	}
}

// TestClaudeCommandAndDisableAPIKey: the base command override and the API
// key switch are keys like any other: defaults, file and env, listed by
// `config` with where they came from.
func TestClaudeCommandAndDisableAPIKey(t *testing.T) {
	dir := t.TempDir()
	l, err := Load(LoadOptions{LookupEnv: envOf(map[string]string{"HOME": dir})})
	if err != nil {
		t.Fatal(err)
	}
	if c := l.Config.Claude; c.Command != "" || c.DisableAPIKey || l.Origins["claude.command"].Source != FromDefault ||
		l.Value("claude.disable_api_key") != "false" {
		t.Errorf("defaults: %+v, %v, %q", c, l.Origins["claude.command"], l.Value("claude.disable_api_key"))
	}
	for _, k := range []string{"claude.command", "claude.disable_api_key"} {
		if !slices.Contains(Keys(), k) {
			t.Errorf("Keys() lacks %s", k)
		}
	}
	file := writeFile(t, dir, "claude:\n  command: npx -y '@anthropic-ai/claude-code@2.1.330'\n  disable_api_key: true\n")
	l, err = Load(LoadOptions{File: file, LookupEnv: envOf(map[string]string{"HOME": dir})})
	if err != nil {
		t.Fatal(err)
	}
	if c := l.Config.Claude; c.Command != "npx -y '@anthropic-ai/claude-code@2.1.330'" || !c.DisableAPIKey ||
		l.Origins["claude.disable_api_key"].Source != FromFile {
		t.Errorf("from the file: %+v, %v", c, l.Origins["claude.disable_api_key"])
	}
	l, err = Load(LoadOptions{File: file, LookupEnv: envOf(map[string]string{"HOME": dir,
		"CLAUDE_RELAY_CLAUDE_DISABLE_API_KEY": "0", "CLAUDE_RELAY_CLAUDE_COMMAND": "/opt/claude/bin/claude --x"})})
	if err != nil {
		t.Fatal(err)
	}
	if c := l.Config.Claude; c.Command != "/opt/claude/bin/claude --x" || c.DisableAPIKey ||
		l.Origins["claude.command"] != (Origin{FromEnv, "CLAUDE_RELAY_CLAUDE_COMMAND"}) {
		t.Errorf("env over the file: %+v, %v", c, l.Origins["claude.command"])
	}
}

func TestSecretsNeverInErrorsOrDisplay(t *testing.T) {
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "tok")
	if err := os.WriteFile(tokFile, []byte("file-token-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": dir, "CLAUDE_RELAY_BACKEND_TOKEN_FILE": tokFile,
		"CLAUDE_RELAY_CLAUDE_ENV": "ANTHROPIC_API_KEY=sk-ant-secret,ANTHROPIC_BASE_URL=http://x"}
	l, err := Load(LoadOptions{LookupEnv: envOf(env)})
	if err != nil {
		t.Fatal(err)
	}
	if l.Config.Backend.Token.Reveal() != "file-token-123" {
		t.Fatalf("token from file = %q", l.Config.Backend.Token.Reveal())
	}
	if got := l.Config.Serve.Tokens; len(got) != 1 || got[0].Token != l.Config.Backend.Token || len(got[0].Scopes) != 0 {
		t.Errorf("serve.tokens should default to backend.token, with the default scopes: %+v", got)
	}
	for _, k := range Keys() {
		if v := l.Value(k); strings.Contains(v, "file-token-123") || strings.Contains(v, "sk-ant-secret") {
			t.Errorf("%s displays a secret: %q", k, v)
		}
	}
	if v := l.Value("claude.env"); v != "ANTHROPIC_API_KEY=***,ANTHROPIC_BASE_URL=http://x" {
		t.Errorf("claude.env display = %q", v)
	}
	s := Secret("abc")
	for _, got := range []string{s.String(), s.GoString(), s.LogValue().String()} {
		if got != "***" {
			t.Errorf("Secret rendered as %q", got)
		}
	}
	// A bad secret value is reported without its value.
	env["CLAUDE_RELAY_SERVE_TOKENS"] = "[not, a list"
	env["CLAUDE_RELAY_BACKEND_URL"] = "http://u:pw-secret@host"
	_, err = Load(LoadOptions{LookupEnv: envOf(env)})
	if err == nil || strings.Contains(err.Error(), "pw-secret") {
		t.Errorf("err = %v", err)
	}
}

func TestFileErrors(t *testing.T) {
	dir := t.TempDir()
	env := envOf(map[string]string{"HOME": dir})
	if _, err := Load(LoadOptions{File: filepath.Join(dir, "missing.yaml"), LookupEnv: env}); !errors.Is(err, ErrConfigFile) {
		t.Errorf("explicit missing file: %v", err)
	}
	typo := writeFile(t, dir, "log:\n  levle: debug\n")
	if _, err := Load(LoadOptions{File: typo, LookupEnv: env}); !errors.Is(err, ErrUnknownConfig) || !strings.Contains(err.Error(), "log.levle") {
		t.Errorf("unknown key: %v", err)
	}
	bad := writeFile(t, dir, "log: [\n")
	if _, err := Load(LoadOptions{File: bad, LookupEnv: env}); !errors.Is(err, ErrConfigFile) {
		t.Errorf("bad yaml: %v", err)
	}
	good := writeFile(t, dir, "claude:\n  env:\n    my_var: one\n  args: [\"--foo\", \"a,b\"]\nserve:\n  tokens: [token-one-0123456789, token-two-0123456789]\n")
	l, err := Load(LoadOptions{File: good, LookupEnv: env})
	if err != nil {
		t.Fatal(err)
	}
	c := l.Config
	if c.Claude.Env["MY_VAR"] != "one" || len(c.Claude.Args) != 2 || c.Claude.Args[1] != "a,b" || len(c.Serve.Tokens) != 2 {
		t.Errorf("parsed %+v", c)
	}
	if _, err := Load(LoadOptions{LookupEnv: envOf(nil)}); !errors.Is(err, ErrNoHome) {
		t.Errorf("no HOME: %v", err)
	}
}

func TestURLPasswordsHidden(t *testing.T) {
	env := map[string]string{"HOME": t.TempDir(), "CLAUDE_RELAY_SERVE_DB": "postgres://relay:pg-pass@db:5432/relay"}
	l, err := Load(LoadOptions{LookupEnv: envOf(env)})
	if err != nil {
		t.Fatal(err)
	}
	if v := l.Value("serve.db"); strings.Contains(v, "pg-pass") || !strings.Contains(v, "db:5432") {
		t.Errorf("serve.db displayed as %q", v)
	}
	if l.Config.Serve.DB != env["CLAUDE_RELAY_SERVE_DB"] {
		t.Errorf("the real value must stay usable")
	}
}

func TestReviewLeaksClosed(t *testing.T) {
	env := map[string]string{"HOME": t.TempDir(), "CLAUDE_RELAY_CLAUDE_ENV": "ANTHROPIC_API_KEY=sk-ant-SECRET123,BROKEN"}
	_, err := Load(LoadOptions{LookupEnv: envOf(env)})
	if err == nil || strings.Contains(err.Error(), "sk-ant-SECRET123") || !strings.Contains(err.Error(), "claude.env") {
		t.Errorf("claude.env error: %v", err)
	}
	env = map[string]string{"HOME": t.TempDir(), "CLAUDE_RELAY_SERVE_DB": "postgres://h/db?password=hunter2&sslmode=disable"}
	l, err := Load(LoadOptions{LookupEnv: envOf(env)})
	if err != nil {
		t.Fatal(err)
	}
	if v := l.Value("serve.db"); strings.Contains(v, "hunter2") || !strings.Contains(v, "sslmode=disable") {
		t.Errorf("serve.db shown as %q", v)
	}
	if !slices.Contains(l.Config.Secrets(), "hunter2") {
		t.Error("a query password must be redacted from logs too")
	}
}
