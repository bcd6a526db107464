package vscode

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTypeScript type-checks the extension and runs its node tests (the
// client against the real helper and the real CLI, the UI's pure modules, the
// protocol drift check). It installs node_modules with `npm ci` when they are
// missing or older than package-lock.json. Without Node it skips, except on CI
// (CI=true), where a missing Node is a failure.
func TestTypeScript(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the TypeScript tests start the real CLI")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("npm not found on PATH (%v): CI needs Node.js 20 and npm to test editors/vscode", err)
		}
		t.Skipf("npm not found on PATH (%v): install Node.js 20 to test editors/vscode", err)
	}
	ctx := t.Context()
	if err := ensureDeps(ctx, t, npm); err != nil {
		t.Fatal(err)
	}
	for _, script := range []string{"typecheck", "test"} {
		out, err := runNPM(ctx, npm, "run", script)
		if err != nil {
			t.Fatalf("npm run %s in editors/vscode: %v\n%s", script, err, out)
		}
		t.Logf("npm run %s: ok", script)
	}
}

// ensureDeps runs `npm ci` unless node_modules is newer than
// package-lock.json (npm writes node_modules/.package-lock.json on every
// install), the same check `make vscode-deps` makes.
func ensureDeps(ctx context.Context, t *testing.T, npm string) error {
	lock, err := os.Stat("package-lock.json")
	if err != nil {
		return err
	}
	installed, err := os.Stat(filepath.Join("node_modules", ".package-lock.json"))
	if err == nil && installed.ModTime().After(lock.ModTime()) {
		return nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	t.Log("editors/vscode/node_modules missing or older than package-lock.json: npm ci")
	if out, err := runNPM(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"); err != nil {
		return &npmError{cmd: "npm ci", err: err, out: out}
	}
	return nil
}

type npmError struct {
	cmd string
	err error
	out string
}

func (e *npmError) Error() string {
	return e.cmd + " in editors/vscode: " + e.err.Error() + " (is the npm registry reachable?)\n" + e.out
}

func (e *npmError) Unwrap() error { return e.err }

// runNPM runs npm in this directory (go test runs a package's test in its
// directory) and returns its combined output.
func runNPM(ctx context.Context, npm string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, npm, args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "npm_config_update_notifier=false")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
