package discovery

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// npmPackage is the Claude Code package directory under `npm root -g`.
const npmPackage = "@anthropic-ai/claude-code"

// claudeNames are the file names of the CLI on this platform.
var claudeNames = exeNames("claude")

// scan collects candidates in search order, deduplicated by real path, and
// remembers where it looked so a NotFoundError can say so.
type scan struct {
	candidates []Candidate
	searched   []string
	seen       map[string]bool
}

func newScan() *scan { return &scan{seen: map[string]bool{}} }

// gather runs every source in priority order.
func (s *scan) gather(ctx context.Context, opts Options) {
	s.dirs(SourcePath, pathDirs(opts.PathEnv), "PATH not set or has no absolute directories")
	s.nvm(opts.Home)
	brew := opts.HomebrewDirs
	if brew == nil {
		brew = defaultHomebrewDirs
	}
	s.dirs(SourceHomebrew, brew, "no directories configured")
	s.dirs(SourceLocalBin, homeDir(opts.Home, ".local", "bin"), "HOME not set")
	s.npmGlobal(ctx, opts)
	s.dirs(SourceClaudeLocal, homeDir(opts.Home, ".claude", "local"), "HOME not set")
	s.cache(opts.CacheDir)
	if len(opts.ExtraDirs) > 0 {
		s.dirs(SourceExtra, absDirs(opts.ExtraDirs), "")
	}
}

// dirs looks for the claude binary in each directory.
func (s *scan) dirs(source string, dirs []string, skipReason string) {
	if len(dirs) == 0 {
		s.looked(source, "skipped ("+skipReason+")")
		return
	}
	var paths []string
	for _, dir := range dirs {
		for _, name := range claudeNames {
			p := filepath.Join(dir, name)
			paths = append(paths, p)
			s.add(source, p)
		}
	}
	s.looked(source, strings.Join(paths, ", "))
}

// nvm searches every Node version nvm manages; there may be several, each
// with its own global claude.
func (s *scan) nvm(home string) {
	if home == "" {
		s.looked(SourceNvm, "skipped (HOME not set)")
		return
	}
	root := filepath.Join(home, ".nvm", "versions", "node")
	s.looked(SourceNvm, filepath.Join(root, "*", "bin", claudeNames[0]))
	entries, err := os.ReadDir(root)
	if err != nil {
		return // no nvm: nothing to report beyond the place searched
	}
	for _, e := range entries {
		for _, name := range claudeNames {
			s.add(SourceNvm, filepath.Join(root, e.Name(), "bin", name))
		}
	}
}

// cache searches every CLI version `make deps` installed under the
// claude-relay cache; `make run` only puts its own on PATH, so without this
// a later plain `claude-relay run` would not find it.
func (s *scan) cache(dir string) {
	if dir == "" {
		s.looked(SourceCache, "skipped (no cache directory; it needs HOME or XDG_CACHE_HOME)")
		return
	}
	bin := filepath.Join("node_modules", ".bin")
	s.looked(SourceCache, filepath.Join(dir, "cli-*", bin, claudeNames[0]))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return // no cache yet: nothing to report beyond the place searched
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "cli-") {
			continue
		}
		for _, name := range claudeNames {
			s.add(SourceCache, filepath.Join(dir, e.Name(), bin, name))
		}
	}
}

// npmGlobal checks the globally installed npm package. Its bin link usually
// sits on PATH already (and is then deduplicated), but a PATH without npm's
// prefix is common in service environments.
func (s *scan) npmGlobal(ctx context.Context, opts Options) {
	lookup := opts.LookupNpmRoot
	if lookup == nil {
		if opts.PathEnv == "" {
			s.looked(SourceNpmGlobal, "skipped (PATH not set, cannot run npm)")
			return
		}
		lookup = defaultNpmRoot(opts.PathEnv)
	}
	root, err := lookup(ctx)
	if err != nil {
		s.looked(SourceNpmGlobal, fmt.Sprintf("skipped (npm root -g: %v)", err))
		return
	}
	pkgDir := filepath.Join(root, npmPackage)
	s.looked(SourceNpmGlobal, pkgDir)
	for _, p := range packageEntryPoints(pkgDir) {
		if _, err := os.Lstat(p); err == nil {
			s.add(SourceNpmGlobal, p)
			return // alternatives name the same install; take the first present
		}
	}
}

// packageEntryPoints lists possible executables of the npm package, best
// first: the "claude" bin from package.json (bin/claude.exe since the native
// builds), then known names in case package.json is unreadable (cli.js in
// the older JavaScript releases).
func packageEntryPoints(pkgDir string) []string {
	rels := []string{"bin/claude.exe", "cli.js"}
	if bin, ok := readPackageBin(filepath.Join(pkgDir, "package.json")); ok {
		rels = append([]string{bin}, rels...)
	}
	paths := make([]string, len(rels))
	for i, r := range rels {
		paths[i] = filepath.Join(pkgDir, filepath.FromSlash(r))
	}
	return paths
}

// readPackageBin returns the "claude" entry of package.json's "bin", which
// npm allows as either a string or a name→path map.
func readPackageBin(path string) (string, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	var pkg struct {
		Bin json.RawMessage `json:"bin"`
	}
	if json.Unmarshal(data, &pkg) != nil || len(pkg.Bin) == 0 {
		return "", false
	}
	var bin string
	if json.Unmarshal(pkg.Bin, &bin) != nil {
		var m map[string]string
		if json.Unmarshal(pkg.Bin, &m) != nil {
			return "", false
		}
		bin = m["claude"]
	}
	// A bin path escaping the package would be a corrupt or hostile install.
	if bin == "" || !filepath.IsLocal(filepath.FromSlash(bin)) {
		return "", false
	}
	return bin, true
}

// add records path as a candidate if a file (or dangling link) is there and
// its real path is new. Files that cannot run are kept, with Err, so the
// user sees them; directories named claude are not installs and are skipped.
func (s *scan) add(source, path string) {
	if _, err := os.Lstat(path); err != nil {
		return
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return
	}
	key := path
	if real, err := filepath.EvalSymlinks(path); err == nil {
		key = real
	}
	if s.seen[key] {
		return
	}
	s.seen[key] = true
	s.candidates = append(s.candidates, Candidate{Path: path, Source: source, Err: checkFile(path)})
}

func (s *scan) looked(source, where string) {
	s.searched = append(s.searched, source+": "+where)
}

// checkFile reports why path cannot be run, or nil. It follows symlinks so a
// dangling link reports fs.ErrNotExist.
func checkFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	if !isExecutable(fi) {
		return ErrNotExecutable
	}
	return nil
}

// pathDirs splits a PATH value, dropping repeats and empty or relative
// entries: those mean "the current directory", which must not decide which
// binary runs.
func pathDirs(pathEnv string) []string {
	var dirs []string
	for _, d := range filepath.SplitList(pathEnv) {
		if filepath.IsAbs(d) && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

func homeDir(home string, elem ...string) []string {
	if home == "" {
		return nil
	}
	return []string{filepath.Join(append([]string{home}, elem...)...)}
}

func absDirs(dirs []string) []string {
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		if abs, err := filepath.Abs(d); err == nil {
			out = append(out, abs)
		}
	}
	return out
}

// lookPath is exec.LookPath over an explicit PATH value, since this package
// never reads the process environment.
func lookPath(name, pathEnv string) (string, bool) {
	for _, dir := range pathDirs(pathEnv) {
		for _, n := range exeNames(name) {
			p := filepath.Join(dir, n)
			if checkFile(p) == nil {
				return p, true
			}
		}
	}
	return "", false
}
