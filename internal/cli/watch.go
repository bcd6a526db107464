package cli

import (
	"context"
	"path/filepath"

	"github.com/claude-relay/claude-relay/config"
)

// watchConfig applies token and log-level changes of the config file while
// a long-running command runs; it returns the function that stops watching.
func (a *App) watchConfig() func() {
	path := a.loaded.File
	if path == "" {
		path = a.configFile
	}
	if path == "" {
		home, _ := a.LookupEnv("HOME")
		xdg, ok := a.LookupEnv("XDG_CONFIG_HOME")
		if !ok || xdg == "" {
			xdg = filepath.Join(home, ".config")
		}
		path = filepath.Join(xdg, "claude-relay", "config.yaml")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	w := &config.Watcher{Options: a.loadOpts, Path: path,
		OnChange: func(l *config.Loaded) {
			a.live.Apply(l.Config)
			a.log.Info("configuration reloaded", "file", path)
		},
		OnError: func(err error) { a.log.Error(err.Error()) },
	}
	go func() { defer close(done); w.Run(ctx) }() //nolint:errcheck // Run returns only at ctx end
	return func() { cancel(); <-done }
}
