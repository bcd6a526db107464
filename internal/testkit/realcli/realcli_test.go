package realcli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestEnvIsIsolated(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-real-secret")
	t.Setenv("ANTHROPIC_MODEL", "leak")
	t.Setenv("CLAUDECODE", "1")
	t.Setenv("CLAUDE_CONFIG_DIR", "/real/config")
	c := newCLI(t, "/nonexistent/claude")
	env := c.Env(t, "http://127.0.0.1:1234")
	want := []string{
		"HOME=" + c.Home,
		"PATH=" + os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL=http://127.0.0.1:1234",
		"ANTHROPIC_API_KEY=test-key",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
	}
	slices.Sort(env)
	slices.Sort(want)
	if !slices.Equal(env, want) {
		t.Errorf("env %q, want %q", env, want)
	}
}

func TestConfigAndTrustDir(t *testing.T) {
	c := newCLI(t, "/nonexistent/claude")
	// Keys the CLI writes itself must survive our edits.
	c.updateConfig(func(cfg map[string]any) { cfg["numStartups"] = 3.0 })
	dir := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatalf("symlink: %v", err)
	}
	c.TrustDir(link)

	b, err := os.ReadFile(filepath.Join(c.Home, ".claude.json"))
	if err != nil {
		t.Fatalf("read config: %v", err)
	}
	var cfg struct {
		HasCompletedOnboarding bool           `json:"hasCompletedOnboarding"`
		NumStartups            float64        `json:"numStartups"`
		CustomAPIKeyResponses  map[string]any `json:"customApiKeyResponses"`
		Projects               map[string]struct {
			HasTrustDialogAccepted bool `json:"hasTrustDialogAccepted"`
		} `json:"projects"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("parse config: %v", err)
	}
	if !cfg.HasCompletedOnboarding || cfg.NumStartups != 3 || fmt.Sprint(cfg.CustomAPIKeyResponses["approved"]) != "[test-key]" {
		t.Errorf("config %s", b)
	}
	for _, d := range []string{link, dir} {
		if !cfg.Projects[d].HasTrustDialogAccepted {
			t.Errorf("%s not trusted in %s", d, b)
		}
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv(EnvOverride, "")
	t.Setenv("XDG_CACHE_HOME", "/cache")
	if p, explicit := DefaultPath(); p != "/cache/claude-relay/cli-"+Version+"/node_modules/.bin/claude" || explicit {
		t.Errorf("DefaultPath() = %q, %v", p, explicit)
	}
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "/home/u")
	if p, _ := DefaultPath(); p != "/home/u/.cache/claude-relay/cli-"+Version+"/node_modules/.bin/claude" {
		t.Errorf("DefaultPath() = %q", p)
	}
	t.Setenv(EnvOverride, "/opt/claude")
	if p, explicit := DefaultPath(); p != "/opt/claude" || !explicit {
		t.Errorf("DefaultPath() = %q, %v", p, explicit)
	}
}

// recorder is a testing.TB that notes how RealCLI gave up.
type recorder struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (r *recorder) Skipf(format string, args ...any) {
	r.skipped, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestMissingCLI(t *testing.T) {
	tests := []struct {
		name, override, ci string
		wantSkip           bool
		wantMsg            string
	}{
		{"skips locally", "", "", true, "make deps"},
		{"fails on CI", "", "true", false, "make deps"},
		{"fails on a bad override", "/nonexistent/claude", "", false, EnvOverride},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("XDG_CACHE_HOME", t.TempDir())
			t.Setenv(EnvOverride, tt.override)
			t.Setenv("CI", tt.ci)
			r := &recorder{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				RealCLI(r)
			}()
			<-done
			if r.skipped != tt.wantSkip || r.failed == tt.wantSkip || !strings.Contains(r.msg, tt.wantMsg) {
				t.Errorf("skipped=%v failed=%v msg=%q", r.skipped, r.failed, r.msg)
			}
		})
	}
}
