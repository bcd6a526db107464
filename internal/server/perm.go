package server

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/claude-relay/claude-relay/internal/localbackend"
	"github.com/claude-relay/claude-relay/internal/server/store/sqlite"
)

// warnLooseDirs logs when the data dir, or the directory of a SQLite
// serve.db, lets other users list or change it: the files in it are 0600,
// but a directory others may write lets them replace those files, and one
// they may read tells them what is there.
func warnLooseDirs(o localbackend.Options) {
	log := o.Logger
	if log == nil {
		return
	}
	dirs := []string{o.DataDir}
	if path, ok := strings.CutPrefix(o.DB, "sqlite:"); ok {
		dirs = append(dirs, filepath.Dir(path))
	}
	seen := map[string]bool{}
	for _, dir := range dirs {
		if dir == "" || seen[filepath.Clean(dir)] {
			continue
		}
		seen[filepath.Clean(dir)] = true
		if mode, loose := sqlite.LooseDir(dir); loose {
			log.Warn("backend: a directory holding the backend's data is open to other users of this machine: "+
				"make it private (chmod 700, if it is yours alone), or keep the data in a directory of its own (--data-dir, serve.db)",
				slog.String("dir", dir), slog.String("mode", fmt.Sprintf("%#o", mode)))
		}
	}
}
