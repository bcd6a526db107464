// Package realcli finds the pinned real Claude Code CLI for end-to-end tests
// and builds an isolated environment to run it in against a mockapi server.
//
// Tests skip when the CLI is not installed, except on CI (CI=true), where a
// missing CLI is a failure: `make deps` installs it.
package realcli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Version is the pinned CLI version the tests are written against.
const Version = "2.1.330"

// EnvOverride names the environment variable that points tests at a CLI
// binary other than the one `make deps` installs.
const EnvOverride = "CLAUDE_RELAY_TEST_CLI"

// APIKey is the API key the isolated environment passes to the CLI.
const APIKey = "test-key"

// versionTimeout bounds `claude --version`; the first start of the 380 MB
// binary can take a few seconds on a cold cache.
const versionTimeout = 30 * time.Second

// CLI is the real CLI plus a private HOME for one test.
type CLI struct {
	// Path is the CLI binary.
	Path string
	// Home is the temporary HOME the environment from Env uses.
	Home string

	t  testing.TB
	mu sync.Mutex // guards .claude.json
}

// verified caches successful version checks per binary path, so that a
// package with many end-to-end tests runs `--version` once.
var verified sync.Map

// RealCLI returns the pinned CLI with a fresh HOME, skipping the test when
// the CLI is absent (failing it on CI).
func RealCLI(t testing.TB) *CLI {
	t.Helper()
	path, explicit := DefaultPath()
	if _, err := os.Stat(path); err != nil {
		switch {
		case explicit:
			t.Fatalf("realcli: %s=%s: %v", EnvOverride, path, err)
		case os.Getenv("CI") == "true":
			t.Fatalf("realcli: Claude Code CLI %s not found at %s (%v); run `make deps` to install it", Version, path, err)
		default:
			t.Skipf("realcli: Claude Code CLI %s not installed at %s; run `make deps` to run this test", Version, path)
		}
	}
	if _, ok := verified.Load(path); !ok {
		if err := checkVersion(path, t.TempDir()); err != nil {
			t.Fatalf("realcli: %v; run `make deps` to install the pinned CLI", err)
		}
		verified.Store(path, true)
	}
	return newCLI(t, path)
}

// DefaultPath returns where the CLI is looked for: $CLAUDE_RELAY_TEST_CLI
// (explicit is then true), else the cache directory `make deps` installs
// into ($XDG_CACHE_HOME or ~/.cache, then claude-relay/cli-VERSION).
func DefaultPath() (path string, explicit bool) {
	if p := os.Getenv(EnvOverride); p != "" {
		return p, true
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", false // no such file: the test skips
		}
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "claude-relay", "cli-"+Version, "node_modules", ".bin", "claude"), false
}

// checkVersion runs `path --version` with home as HOME and wants the pinned
// version.
func checkVersion(path, home string) error {
	ctx, cancel := context.WithTimeout(context.Background(), versionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	// A bare environment: the check must not depend on the developer's.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "DISABLE_AUTOUPDATER=1"}
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("run %s --version: %w", path, err)
	}
	// The output is "2.1.330 (Claude Code)".
	got, _, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if got != Version {
		return fmt.Errorf("%s --version says %q, want %s", path, bytes.TrimSpace(out), Version)
	}
	return nil
}

// newCLI sets up the private HOME for path.
func newCLI(t testing.TB, path string) *CLI {
	t.Helper()
	c := &CLI{Path: path, Home: t.TempDir(), t: t}
	c.updateConfig(func(cfg map[string]any) {
		// Without it the CLI shows onboarding, and the interactive CLI
		// says "Unable to connect to Anthropic services".
		cfg["hasCompletedOnboarding"] = true
		// Without it the interactive CLI asks whether to use the custom
		// API key it found in the environment (it stores the key's last
		// 20 characters).
		cfg["customApiKeyResponses"] = map[string]any{"approved": []any{lastN(APIKey, 20)}, "rejected": []any{}}
	})
	return c
}

// Env returns the whole environment to run the CLI with: the private HOME,
// the mock API at apiURL, the test key, no nonessential traffic or
// autoupdates, and PATH. Nothing else of the caller's environment is kept,
// so no real ANTHROPIC_* or CLAUDE* variable (CLAUDECODE included) leaks
// in. Append to the slice to add variables.
func (c *CLI) Env(t testing.TB, apiURL string) []string {
	t.Helper()
	return []string{
		"HOME=" + c.Home,
		"PATH=" + os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL=" + apiURL,
		"ANTHROPIC_API_KEY=" + APIKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
	}
}

// TrustDir marks cwd as a trusted project in the private HOME, which the
// interactive CLI needs to skip its trust dialog.
func (c *CLI) TrustDir(cwd string) {
	c.t.Helper()
	abs, err := filepath.Abs(cwd)
	if err != nil {
		c.t.Fatalf("realcli: trust %s: %v", cwd, err)
	}
	dirs := []string{abs}
	// The CLI keys projects by the resolved path; keep both in case cwd
	// goes through a symlink (macOS /tmp, for example).
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
		dirs = append(dirs, real)
	}
	c.updateConfig(func(cfg map[string]any) {
		projects, _ := cfg["projects"].(map[string]any)
		if projects == nil {
			projects = make(map[string]any)
		}
		for _, d := range dirs {
			p, _ := projects[d].(map[string]any)
			if p == nil {
				p = make(map[string]any)
			}
			p["hasTrustDialogAccepted"] = true
			projects[d] = p
		}
		cfg["projects"] = projects
	})
}

// ConfigPath is the private HOME's .claude.json.
func (c *CLI) ConfigPath() string { return filepath.Join(c.Home, ".claude.json") }

// updateConfig applies edit to .claude.json, keeping what the CLI itself
// may have written there.
func (c *CLI) updateConfig(edit func(map[string]any)) {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	cfg := make(map[string]any)
	b, err := os.ReadFile(c.ConfigPath())
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &cfg); err != nil {
			c.t.Fatalf("realcli: parse %s: %v", c.ConfigPath(), err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		c.t.Fatalf("realcli: read %s: %v", c.ConfigPath(), err)
	}
	edit(cfg)
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		c.t.Fatalf("realcli: encode %s: %v", c.ConfigPath(), err)
	}
	if err := os.WriteFile(c.ConfigPath(), out, 0o600); err != nil {
		c.t.Fatalf("realcli: write %s: %v", c.ConfigPath(), err)
	}
}

func lastN(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
