package discovery

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Source names say where a candidate was found.
const (
	SourceConfig      = "config"
	SourcePath        = "PATH"
	SourceNvm         = "nvm"
	SourceHomebrew    = "homebrew"
	SourceLocalBin    = "~/.local/bin"
	SourceNpmGlobal   = "npm-global"
	SourceClaudeLocal = "~/.claude/local"
	SourceCache       = "claude-relay cache"
	SourceExtra       = "extra"
)

var (
	// ErrNotFound means no usable claude binary was found in any place searched.
	ErrNotFound = errors.New("claude CLI not found")
	// ErrNotExecutable marks a file that exists but lacks execute permission.
	ErrNotExecutable = errors.New("not executable")
)

const defaultVersionTimeout = 5 * time.Second

// defaultHomebrewDirs are the Homebrew bin directories searched when
// Options.HomebrewDirs is nil (Apple Silicon first, then Intel/Linuxbrew).
var defaultHomebrewDirs = []string{"/opt/homebrew/bin", "/usr/local/bin"}

// Options configures Find. Zero values mean "default" or, for Home and
// PathEnv, "not set": the sources that need them are skipped.
type Options struct {
	// ConfiguredPath is the user's claude.path. When set it is the only
	// candidate: someone who pins a binary wants an error if it is broken,
	// not a silent substitute. A leading "~/" is expanded with Home and a
	// bare name is looked up in PathEnv.
	ConfiguredPath string
	// Home is the user's home directory ($HOME).
	Home string
	// PathEnv is the value of $PATH.
	PathEnv string
	// LookupNpmRoot returns the global node_modules directory. Nil runs
	// `npm root -g` (npm found via PathEnv) with a timeout.
	LookupNpmRoot func(ctx context.Context) (string, error)
	// VersionTimeout bounds each `claude --version` probe; 0 means 5s.
	VersionTimeout time.Duration
	// HomebrewDirs are Homebrew bin directories; nil means
	// /opt/homebrew/bin and /usr/local/bin, an empty non-nil slice none.
	HomebrewDirs []string
	// CacheDir is claude-relay's cache directory (the CacheDir function), where
	// `make deps` installs pinned CLIs as
	// cli-<version>/node_modules/.bin/claude. Empty skips that source.
	CacheDir string
	// ExtraDirs are further directories searched last, with source "extra".
	ExtraDirs []string
}

// CacheDir returns the claude-relay cache directory the Makefile installs
// into, ${XDG_CACHE_HOME:-$HOME/.cache}/claude-relay, from the values of
// those variables; "" if neither gives an absolute path. A relative
// XDG_CACHE_HOME is ignored, as the XDG spec says, so the current directory
// never decides which binary runs (the Makefile would use it as is).
func CacheDir(home, xdgCacheHome string) string {
	switch {
	case filepath.IsAbs(xdgCacheHome):
		return filepath.Join(xdgCacheHome, "claude-relay")
	case filepath.IsAbs(home):
		return filepath.Join(home, ".cache", "claude-relay")
	default:
		return ""
	}
}

// Candidate is one distinct install Find considered.
type Candidate struct {
	Path    string
	Source  string
	Version string // semver reported by --version; empty if Err != nil
	Err     error  // why the candidate is unusable; nil if usable
}

// Result is the chosen binary plus everything considered, in search order.
type Result struct {
	Path       string
	Version    string
	Source     string
	Candidates []Candidate
}

// NotFoundError reports every place searched and why any installs that were
// found could not be used. It unwraps to ErrNotFound.
type NotFoundError struct {
	Searched   []string // "source: locations", one line per source
	Candidates []Candidate
}

func (e *NotFoundError) Error() string {
	var b strings.Builder
	b.WriteString("claude CLI not found; searched:")
	for _, s := range e.Searched {
		b.WriteString("\n  " + s)
	}
	if len(e.Candidates) > 0 {
		b.WriteString("\nfound but unusable:")
		for _, c := range e.Candidates {
			fmt.Fprintf(&b, "\n  %s (%s): %v", c.Path, c.Source, c.Err)
		}
	}
	b.WriteString("\nto fix: install it with `npm install -g @anthropic-ai/claude-code`" +
		" (or `make deps` in a claude-relay checkout), or set claude.path (env CLAUDE_RELAY_CLAUDE_PATH)" +
		" to the claude binary")
	return b.String()
}

func (e *NotFoundError) Unwrap() error { return ErrNotFound }

// ConfiguredPathError reports that Options.ConfiguredPath is set but unusable.
type ConfiguredPathError struct {
	Path string
	Err  error
}

func (e *ConfiguredPathError) Error() string {
	return fmt.Sprintf("configured claude path %q is unusable: %v; fix claude.path "+
		"(env CLAUDE_RELAY_CLAUDE_PATH) or unset it to search the usual install locations",
		e.Path, e.Err)
}

func (e *ConfiguredPathError) Unwrap() error { return e.Err }

// Find locates the Claude Code CLI. See the package doc for the search order.
// A broken ConfiguredPath yields a *ConfiguredPathError; finding nothing
// usable yields a *NotFoundError (errors.Is(err, ErrNotFound)).
func Find(ctx context.Context, opts Options) (Result, error) {
	if opts.VersionTimeout <= 0 {
		opts.VersionTimeout = defaultVersionTimeout
	}
	if opts.ConfiguredPath != "" {
		return findConfigured(ctx, opts)
	}
	s := newScan()
	s.gather(ctx, opts)
	probeAll(ctx, s.candidates, opts.VersionTimeout)
	res := Result{Candidates: s.candidates}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("find claude CLI: %w", err)
	}
	best := pickHighest(s.candidates)
	if best < 0 {
		// Nothing was picked, so every candidate listed is unusable.
		return res, &NotFoundError{Searched: s.searched, Candidates: s.candidates}
	}
	c := s.candidates[best]
	res.Path, res.Version, res.Source = c.Path, c.Version, c.Source
	return res, nil
}

func findConfigured(ctx context.Context, opts Options) (Result, error) {
	path := expandHome(opts.ConfiguredPath, opts.Home)
	if !strings.ContainsAny(path, `/\`) {
		if p, ok := lookPath(path, opts.PathEnv); ok {
			path = p
		}
	}
	c := Candidate{Path: path, Source: SourceConfig}
	if c.Err = checkFile(path); c.Err == nil {
		c.Version, c.Err = probeVersion(ctx, path, opts.VersionTimeout)
	}
	res := Result{Candidates: []Candidate{c}}
	if c.Err != nil {
		return res, &ConfiguredPathError{Path: path, Err: c.Err}
	}
	res.Path, res.Version, res.Source = c.Path, c.Version, c.Source
	return res, nil
}

// probeAll fills Version or Err for every candidate not already rejected.
// Probes run concurrently so one slow install costs one timeout, not many.
func probeAll(ctx context.Context, cands []Candidate, timeout time.Duration) {
	var wg sync.WaitGroup
	for i := range cands {
		if cands[i].Err != nil {
			continue
		}
		wg.Go(func() {
			cands[i].Version, cands[i].Err = probeVersion(ctx, cands[i].Path, timeout)
		})
	}
	wg.Wait()
}

// pickHighest returns the index of the usable candidate with the highest
// version, the earliest on ties, or -1 if none is usable.
func pickHighest(cands []Candidate) int {
	best := -1
	for i, c := range cands {
		if c.Err != nil {
			continue
		}
		if best < 0 || CompareVersions(c.Version, cands[best].Version) > 0 {
			best = i
		}
	}
	return best
}

func expandHome(path, home string) string {
	if home == "" {
		return path
	}
	if path == "~" {
		return home
	}
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return path
}
