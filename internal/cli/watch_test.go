package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWatchConfigFollowsCLAUDE_RELAY_CONFIG: a long-running command watches
// the config file CLAUDE_RELAY_CONFIG names, not the XDG default, even when
// that file is only written after the start.
func TestWatchConfigFollowsCLAUDE_RELAY_CONFIG(t *testing.T) {
	t.Parallel()
	env, dir := serveTestEnv(t)
	path := filepath.Join(t.TempDir(), "relay.yaml")
	m := envMap(env, dir)
	m["CLAUDE_RELAY_CONFIG"] = path
	a := loadedApp(t, m)
	stop := a.watchConfig()
	defer stop()
	// The watcher starts asynchronously: rewrite until the change lands, but
	// seldom enough that the watcher's debounce (100ms) can settle.
	polls := 0
	waitFor(t, "the token in "+path, func() bool {
		if polls%10 == 0 {
			if err := os.WriteFile(path, []byte("backend:\n  token: from-the-env-file\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		polls++
		return a.live.Token().Reveal() == "from-the-env-file"
	})
}
