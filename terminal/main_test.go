package terminal

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// helperEnv switches the test binary into one of its helper roles: the fake
// interactive CLI of runner_test.go (which also serves its command hooks as
// `<test binary> hook-post URL`).
const helperEnv = "CLAUDE_RELAY_TERMINAL_TEST_HELPER"

func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" {
		os.Exit(helperMain(role, os.Args[1:]))
	}
	code := m.Run()
	if relayBuild.dir != "" {
		os.RemoveAll(relayBuild.dir)
	}
	os.Exit(code)
}

// relayBuild is the claude-relay binary, built once per test binary.
var relayBuild struct {
	once sync.Once
	dir  string
	path string
	err  error
	out  []byte
}

// relayBinary builds ./cmd/claude-relay and ./cmd/claude-relay-server from
// the module root (once) and returns claude-relay's path.
func relayBinary(t *testing.T) string {
	t.Helper()
	relayBuild.once.Do(func() {
		gomod, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			relayBuild.err = err
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(gomod)))
		if relayBuild.dir, relayBuild.err = os.MkdirTemp("", "claude-relay-bin-"); relayBuild.err != nil {
			return
		}
		relayBuild.path = filepath.Join(relayBuild.dir, "claude-relay")
		// With claude-relay-server beside it: the embedded default runs in it.
		cmd := exec.Command("go", "build", "-o", relayBuild.dir+string(filepath.Separator), "./cmd/claude-relay", "./cmd/claude-relay-server")
		cmd.Dir = root
		relayBuild.out, relayBuild.err = cmd.CombinedOutput()
	})
	if relayBuild.err != nil {
		t.Fatalf("build claude-relay: %v\n%s", relayBuild.err, relayBuild.out)
	}
	return relayBuild.path
}
