package discovery

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

const (
	// probeWaitDelay bounds how long a killed or exited child may keep its
	// output pipes open (e.g. via a grandchild) before Wait gives up on them.
	probeWaitDelay = time.Second
	// npmRootTimeout is generous because npm is a Node program with a slow
	// cold start, and it runs once per Find.
	npmRootTimeout = 10 * time.Second
	// maxProbeOutput caps what is kept from a child; a version is one line.
	maxProbeOutput = 64 << 10
)

// probeVersion runs `path --version` and returns the first semver it prints.
func probeVersion(ctx context.Context, path string, timeout time.Duration) (string, error) {
	out, err := runCapped(ctx, timeout, path, "--version")
	if err != nil {
		return "", fmt.Errorf("--version: %w", err)
	}
	v, ok := ExtractVersion(out)
	if !ok {
		return "", fmt.Errorf("--version printed no version: %q", firstLine(out))
	}
	return v, nil
}

// defaultNpmRoot runs `npm root -g`, finding npm through pathEnv.
func defaultNpmRoot(pathEnv string) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		npm, ok := lookPath("npm", pathEnv)
		if !ok {
			return "", errors.New("npm not found in PATH")
		}
		out, err := runCapped(ctx, npmRootTimeout, npm, "root", "-g")
		if err != nil {
			return "", err
		}
		root := firstLine(out)
		if !filepath.IsAbs(root) {
			return "", fmt.Errorf("unexpected output %q", root)
		}
		return root, nil
	}
}

// runCapped runs a short-lived command and returns its stdout. The child gets
// its own process group so a timeout kills any grandchildren too, and
// WaitDelay stops a child that leaks its pipes from blocking us.
func runCapped(ctx context.Context, timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr cappedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = probeWaitDelay
	killGroupOnCancel(cmd)
	err := cmd.Run()
	switch {
	case err == nil:
		return stdout.String(), nil
	case ctx.Err() != nil:
		return "", fmt.Errorf("no answer within %s: %w", timeout, ctx.Err())
	case stderr.Len() > 0:
		return "", fmt.Errorf("%w: %s", err, firstLine(stderr.String()))
	default:
		return "", err
	}
}

// cappedBuffer keeps the first maxProbeOutput bytes and silently drops the
// rest; it still reports full writes so the child never sees EPIPE.
type cappedBuffer struct{ strings.Builder }

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := maxProbeOutput - b.Len(); room > 0 {
		b.Builder.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}
