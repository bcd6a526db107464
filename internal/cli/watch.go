package cli

import (
	"context"

	"github.com/claude-relay/claude-relay/config"
)

// watchConfig applies token and log-level changes of the config file while
// a long-running command runs; it returns the function that stops watching
// and waits for the watcher to end. The file is the one config.Load looked
// for (--config, CLAUDE_RELAY_CONFIG or the XDG default), so one created
// after the start is picked up too.
func (a *App) watchConfig() func() {
	path := a.loaded.Path
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	w := &config.Watcher{Options: a.loadOpts, Path: path,
		OnChange: func(l *config.Loaded) {
			a.live.Apply(l.Config)
			if c := a.embedded.Load(); c != nil {
				c.Reload() // a child does not see a.live
			}
			a.log.Info("configuration reloaded", "file", path)
		},
		OnError: func(err error) { a.log.Error(err.Error()) },
	}
	go func() { defer close(done); w.Run(ctx) }() //nolint:errcheck // Run returns only at ctx end
	return func() { cancel(); <-done }
}
