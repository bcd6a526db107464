package config

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Watcher reloads the configuration when its file changes. A reload that
// fails validation is reported and the previous configuration stays.
//
// We watch with fsnotify directly rather than viper.WatchConfig: viper's
// watcher goroutine cannot be stopped and mutates a shared viper instance,
// while here every reload is a fresh Load with the same flags and env.
type Watcher struct {
	Options  LoadOptions
	Path     string        // the file to watch: Loaded.Path, which may not exist yet
	OnChange func(*Loaded) // called with each valid reload
	OnError  func(error)   // called when a reload is invalid
	Debounce time.Duration // 0: 100ms; editors write in several steps
	Poll     time.Duration // 0: 2s; used only when fsnotify fails
}

// Run watches until ctx ends. It never returns an error for a bad edit; it
// returns only when ctx is done.
func (w *Watcher) Run(ctx context.Context) error {
	debounce := w.Debounce
	if debounce == 0 {
		debounce = 100 * time.Millisecond
	}
	fw, err := fsnotify.NewWatcher()
	if err == nil {
		// The parent directory, not the file: editors replace files by rename.
		err = fw.Add(filepath.Dir(w.Path))
	}
	if err != nil {
		if fw != nil {
			fw.Close()
		}
		// No config directory is the common case, not a problem: poll, so a
		// file created later is still picked up.
		if !errors.Is(err, fs.ErrNotExist) {
			w.report(fmt.Errorf("watching %s failed, polling instead: %w", w.Path, err))
		}
		return w.poll(ctx)
	}
	defer fw.Close()

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-fw.Events:
			if !ok {
				return nil
			}
			if filepath.Clean(ev.Name) == filepath.Clean(w.Path) && !ev.Has(fsnotify.Chmod) {
				timer.Reset(debounce)
			}
		case err, ok := <-fw.Errors:
			if ok {
				w.report(fmt.Errorf("watching %s: %w", w.Path, err))
			}
		case <-timer.C:
			w.reload()
		}
	}
}

func (w *Watcher) poll(ctx context.Context) error {
	every := w.Poll
	if every == 0 {
		every = 2 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	last := modTime(w.Path)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if m := modTime(w.Path); !m.Equal(last) {
				last = m
				w.reload()
			}
		}
	}
}

func (w *Watcher) reload() {
	if _, err := os.Stat(w.Path); errors.Is(err, os.ErrNotExist) {
		return // mid-replace, or removed: keep what we have
	}
	opts := w.Options
	opts.File = w.Path
	l, err := Load(opts)
	if err != nil {
		w.report(fmt.Errorf("config reload rejected, keeping the previous configuration: %w", err))
		return
	}
	if w.OnChange != nil {
		w.OnChange(l)
	}
}

func (w *Watcher) report(err error) {
	if w.OnError != nil {
		w.OnError(err)
	}
}

func modTime(path string) time.Time {
	fi, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}
