package config

import (
	"context"
	"log/slog"
	"maps"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/testkit/poll"
)

func TestWatcherAppliesTokenAndLevelAndRejectsBadEdit(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "backend:\n  token: first\nlog:\n  level: info\n")
	opts := LoadOptions{File: file, LookupEnv: envOf(map[string]string{"HOME": dir})}
	l, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	live := NewLive(l.Config)

	var mu sync.Mutex
	var errs []error
	w := &Watcher{Options: opts, Path: file, Debounce: 20 * time.Millisecond,
		OnChange: func(l *Loaded) { live.Apply(l.Config) },
		OnError:  func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})

	// fsnotify needs the watch in place before the write; retry the write
	// until the change lands rather than sleeping a guessed amount.
	poll.Until(t, watchWait, "the second token and level debug to apply", func() bool {
		writeFile(t, dir, "backend:\n  token: second\nlog:\n  level: debug\n")
		return live.Token().Reveal() == "second" && live.Level().Level() == slog.LevelDebug
	})

	writeFile(t, dir, "backend:\n  token: third\nlog:\n  level: shouting\n")
	poll.Until(t, watchWait, "the bad edit's error", func() bool { mu.Lock(); defer mu.Unlock(); return len(errs) > 0 })
	if live.Token().Reveal() != "second" || live.Level().Level() != slog.LevelDebug {
		t.Errorf("bad edit changed live values: token=%q level=%v", live.Token().Reveal(), live.Level().Level())
	}
	mu.Lock()
	msg := errs[0].Error()
	mu.Unlock()
	if want := `log.level = "shouting"`; !contains(msg, want) || !contains(msg, "keeping the previous") {
		t.Errorf("reload error %q", msg)
	}
}

func TestWatcherPollFallback(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "log:\n  level: info\n")
	opts := LoadOptions{File: file, LookupEnv: envOf(map[string]string{"HOME": dir})}
	changed := make(chan slog.Level, 8)
	w := &Watcher{Options: opts, Path: file, Poll: 10 * time.Millisecond,
		OnChange: func(l *Loaded) { changed <- l.Config.Log.Level }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.poll(ctx) }()
	defer func() { cancel(); <-done }()
	poll.Until(t, watchWait, "the poll to see level error", func() bool {
		writeFile(t, dir, "log:\n  level: error\n")
		select {
		case lv := <-changed:
			return lv == slog.LevelError
		default:
			return false
		}
	})
}

// watchWait bounds a wait for the watcher; a change lands within
// milliseconds.
const watchWait = 10 * time.Second

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestLoadedPath: Path is the file Load looked for, whether or not it
// exists, so a watcher can pick up a file created after the start.
func TestLoadedPath(t *testing.T) {
	home := t.TempDir()
	existing := writeFile(t, t.TempDir(), "log:\n  level: warn\n")
	absent := filepath.Join(t.TempDir(), "relay.yaml")
	for _, tc := range []struct {
		name       string
		explicit   string
		env        map[string]string
		path, file string
	}{
		{"XDG default, absent", "", nil, filepath.Join(home, ".config", "claude-relay", "config.yaml"), ""},
		{"XDG_CONFIG_HOME", "", map[string]string{"XDG_CONFIG_HOME": "/xdg"}, "/xdg/claude-relay/config.yaml", ""},
		{"CLAUDE_RELAY_CONFIG, absent", "", map[string]string{"CLAUDE_RELAY_CONFIG": absent}, absent, ""},
		{"CLAUDE_RELAY_CONFIG, present", "", map[string]string{"CLAUDE_RELAY_CONFIG": existing}, existing, existing},
		{"--config wins", existing, map[string]string{"CLAUDE_RELAY_CONFIG": absent}, existing, existing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"HOME": home}
			maps.Copy(env, tc.env)
			l, err := Load(LoadOptions{File: tc.explicit, LookupEnv: envOf(env)})
			if err != nil {
				t.Fatal(err)
			}
			if l.Path != tc.path || l.File != tc.file {
				t.Errorf("Path %q File %q, want Path %q File %q", l.Path, l.File, tc.path, tc.file)
			}
		})
	}
}

// TestWatcherPicksUpCreatedFile: a config file that did not exist at the
// start (CLAUDE_RELAY_CONFIG naming a file yet to be written) is applied
// once it appears.
func TestWatcherPicksUpCreatedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	opts := LoadOptions{LookupEnv: envOf(map[string]string{"HOME": dir, "CLAUDE_RELAY_CONFIG": path})}
	l, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	live := NewLive(l.Config)
	w := &Watcher{Options: opts, Path: l.Path, Debounce: 20 * time.Millisecond,
		OnChange: func(l *Loaded) { live.Apply(l.Config) }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	poll.Until(t, watchWait, "the created file's token to apply", func() bool {
		writeFile(t, dir, "backend:\n  token: created\n")
		return live.Token().Reveal() == "created"
	})
}
