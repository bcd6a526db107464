package discovery

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The fake CLIs are shell scripts rather than a re-exec'd test binary
// because discovery only ever runs `claude --version`, and each fake needs
// its own version baked into a file named claude.

// writeScript writes an executable (or, with mode, not) script at root/rel.
func writeScript(t *testing.T, root, rel, body string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// fakeCLI installs a claude that reports version like the real one does.
func fakeCLI(t *testing.T, root, rel, version string) string {
	t.Helper()
	return writeScript(t, root, rel, fmt.Sprintf("echo %q", version+" (Claude Code)"), 0o755)
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// testOptions isolates Find from the machine: no real Homebrew dirs, no npm.
func testOptions(root string) Options {
	return Options{
		Home:         filepath.Join(root, "home"),
		HomebrewDirs: []string{},
		LookupNpmRoot: func(context.Context) (string, error) {
			return "", errors.New("npm disabled in test")
		},
	}
}

func npmRootAt(dir string) func(context.Context) (string, error) {
	return func(context.Context) (string, error) { return dir, nil }
}

func pathList(dirs ...string) string { return strings.Join(dirs, string(os.PathListSeparator)) }

func TestFind(t *testing.T) {
	const pkg = "npm/@anthropic-ai/claude-code"
	tests := []struct {
		name           string
		setup          func(t *testing.T, root string, o *Options)
		wantPath       string // relative to root
		wantSource     string
		wantVersion    string
		wantCandidates int
		check          func(t *testing.T, res Result)
	}{
		{
			name: "configured path wins over higher version on PATH",
			setup: func(t *testing.T, root string, o *Options) {
				o.ConfiguredPath = fakeCLI(t, root, "opt/claude", "1.0.0")
				fakeCLI(t, root, "bin/claude", "9.0.0")
				o.PathEnv = filepath.Join(root, "bin")
			},
			wantPath: "opt/claude", wantSource: SourceConfig, wantVersion: "1.0.0", wantCandidates: 1,
		},
		{
			name: "configured path expands ~/",
			setup: func(t *testing.T, root string, o *Options) {
				fakeCLI(t, root, "home/tools/claude", "1.1.0")
				o.ConfiguredPath = "~/tools/claude"
			},
			wantPath: "home/tools/claude", wantSource: SourceConfig, wantVersion: "1.1.0", wantCandidates: 1,
		},
		{
			name: "configured bare name is looked up in PATH",
			setup: func(t *testing.T, root string, o *Options) {
				fakeCLI(t, root, "bin/claude", "1.2.0")
				o.ConfiguredPath = "claude"
				o.PathEnv = filepath.Join(root, "bin")
			},
			wantPath: "bin/claude", wantSource: SourceConfig, wantVersion: "1.2.0", wantCandidates: 1,
		},
		{
			name: "highest version across sources",
			setup: func(t *testing.T, root string, o *Options) {
				fakeCLI(t, root, "bin/claude", "1.2.3")
				fakeCLI(t, root, "home/.nvm/versions/node/v18.0.0/bin/claude", "1.9.0")
				fakeCLI(t, root, "home/.nvm/versions/node/v20.1.0/bin/claude", "2.0.0")
				fakeCLI(t, root, "home/.local/bin/claude", "2.0.0-beta.1")
				fakeCLI(t, root, "home/.claude/local/claude", "1.10.0")
				o.PathEnv = filepath.Join(root, "bin")
			},
			wantPath: "home/.nvm/versions/node/v20.1.0/bin/claude", wantSource: SourceNvm, wantVersion: "2.0.0",
			wantCandidates: 5,
		},
		{
			name: "tie goes to the earlier source, build metadata ignored",
			setup: func(t *testing.T, root string, o *Options) {
				fakeCLI(t, root, "bin/claude", "1.0.0")
				fakeCLI(t, root, "home/.local/bin/claude", "1.0.0+build.5")
				o.PathEnv = filepath.Join(root, "bin")
			},
			wantPath: "bin/claude", wantSource: SourcePath, wantVersion: "1.0.0", wantCandidates: 2,
		},
		{
			name: "hanging candidate times out and is not chosen",
			setup: func(t *testing.T, root string, o *Options) {
				writeScript(t, root, "bin/claude", "sleep 60", 0o755)
				fakeCLI(t, root, "home/.local/bin/claude", "0.5.0")
				o.PathEnv = filepath.Join(root, "bin")
				o.VersionTimeout = 100 * time.Millisecond
			},
			wantPath: "home/.local/bin/claude", wantSource: SourceLocalBin, wantVersion: "0.5.0", wantCandidates: 2,
			check: func(t *testing.T, res Result) {
				if err := res.Candidates[0].Err; !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("hung candidate err = %v, want DeadlineExceeded", err)
				}
			},
		},
		{
			name: "non-executable file is listed but ignored",
			setup: func(t *testing.T, root string, o *Options) {
				writeScript(t, root, "bin/claude", `echo "9.0.0 (Claude Code)"`, 0o644)
				fakeCLI(t, root, "home/.local/bin/claude", "1.0.0")
				o.PathEnv = filepath.Join(root, "bin")
			},
			wantPath: "home/.local/bin/claude", wantSource: SourceLocalBin, wantVersion: "1.0.0", wantCandidates: 2,
			check: func(t *testing.T, res Result) {
				if err := res.Candidates[0].Err; !errors.Is(err, ErrNotExecutable) {
					t.Errorf("non-executable err = %v, want ErrNotExecutable", err)
				}
			},
		},
		{
			name: "dangling symlink is listed but ignored",
			setup: func(t *testing.T, root string, o *Options) {
				symlink(t, filepath.Join(root, "gone"), filepath.Join(root, "bin/claude"))
				fakeCLI(t, root, "home/.local/bin/claude", "1.0.0")
				o.PathEnv = filepath.Join(root, "bin")
			},
			wantPath: "home/.local/bin/claude", wantSource: SourceLocalBin, wantVersion: "1.0.0", wantCandidates: 2,
			check: func(t *testing.T, res Result) {
				if err := res.Candidates[0].Err; !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("dangling link err = %v, want ErrNotExist", err)
				}
			},
		},
		{
			name: "bad output and failing exit are not chosen",
			setup: func(t *testing.T, root string, o *Options) {
				writeScript(t, root, "a/claude", "echo hello", 0o755)
				writeScript(t, root, "b/claude", "echo boom >&2; exit 3", 0o755)
				fakeCLI(t, root, "home/.claude/local/claude", "0.1.0")
				o.PathEnv = pathList(filepath.Join(root, "a"), filepath.Join(root, "b"))
			},
			wantPath: "home/.claude/local/claude", wantSource: SourceClaudeLocal, wantVersion: "0.1.0",
			wantCandidates: 3,
			check: func(t *testing.T, res Result) {
				if err := res.Candidates[0].Err; err == nil || !strings.Contains(err.Error(), "no version") {
					t.Errorf("garbage output err = %v", err)
				}
				if err := res.Candidates[1].Err; err == nil || !strings.Contains(err.Error(), "boom") {
					t.Errorf("failing exit err = %v, want stderr in it", err)
				}
			},
		},
		{
			name: "npm root injected, native bin from package.json",
			setup: func(t *testing.T, root string, o *Options) {
				writeFile(t, filepath.Join(root, pkg, "package.json"), `{"bin":{"claude":"bin/claude.exe"}}`)
				fakeCLI(t, root, pkg+"/bin/claude.exe", "2.1.0")
				fakeCLI(t, root, "bin/claude", "2.0.9")
				o.PathEnv = filepath.Join(root, "bin")
				o.LookupNpmRoot = npmRootAt(filepath.Join(root, "npm"))
			},
			wantPath: pkg + "/bin/claude.exe", wantSource: SourceNpmGlobal, wantVersion: "2.1.0", wantCandidates: 2,
		},
		{
			name: "npm package with legacy cli.js bin",
			setup: func(t *testing.T, root string, o *Options) {
				writeFile(t, filepath.Join(root, pkg, "package.json"), `{"bin":"cli.js"}`)
				fakeCLI(t, root, pkg+"/cli.js", "1.0.50")
				o.LookupNpmRoot = npmRootAt(filepath.Join(root, "npm"))
			},
			wantPath: pkg + "/cli.js", wantSource: SourceNpmGlobal, wantVersion: "1.0.50", wantCandidates: 1,
		},
		{
			name: "npm package without package.json falls back to known names",
			setup: func(t *testing.T, root string, o *Options) {
				fakeCLI(t, root, pkg+"/bin/claude.exe", "2.1.1")
				o.LookupNpmRoot = npmRootAt(filepath.Join(root, "npm"))
			},
			wantPath: pkg + "/bin/claude.exe", wantSource: SourceNpmGlobal, wantVersion: "2.1.1", wantCandidates: 1,
		},
		{
			name: "symlinked duplicates are deduped, first source kept",
			setup: func(t *testing.T, root string, o *Options) {
				real := fakeCLI(t, root, "bin/claude", "1.0.0")
				symlink(t, real, filepath.Join(root, "bin2/claude"))
				symlink(t, real, filepath.Join(root, "home/.local/bin/claude"))
				o.PathEnv = pathList(filepath.Join(root, "bin2"), filepath.Join(root, "bin"))
			},
			wantPath: "bin2/claude", wantSource: SourcePath, wantVersion: "1.0.0", wantCandidates: 1,
		},
		{
			name: "homebrew dirs are injectable",
			setup: func(t *testing.T, root string, o *Options) {
				fakeCLI(t, root, "brew/claude", "3.0.0")
				fakeCLI(t, root, "bin/claude", "1.0.0")
				o.PathEnv = filepath.Join(root, "bin")
				o.HomebrewDirs = []string{filepath.Join(root, "nobrew"), filepath.Join(root, "brew")}
			},
			wantPath: "brew/claude", wantSource: SourceHomebrew, wantVersion: "3.0.0", wantCandidates: 2,
		},
		{
			name: "claude-relay cache: highest cli-* wins, other entries ignored",
			setup: func(t *testing.T, root string, o *Options) {
				// The layout `npm install --prefix cache/cli-V` leaves: a
				// .bin link into the package.
				fakeCLI(t, root, "cache/cli-2.1.330/node_modules/"+npmPackage+"/bin/claude.exe", "2.1.330")
				symlink(t, "../"+npmPackage+"/bin/claude.exe",
					filepath.Join(root, "cache/cli-2.1.330/node_modules/.bin/claude"))
				fakeCLI(t, root, "cache/cli-2.2.0/node_modules/.bin/claude", "2.2.0")
				fakeCLI(t, root, "cache/agent-sdk-0.3.330/node_modules/.bin/claude", "9.0.0")
				fakeCLI(t, root, "bin/claude", "2.1.0")
				o.PathEnv = filepath.Join(root, "bin")
				o.CacheDir = filepath.Join(root, "cache")
			},
			wantPath: "cache/cli-2.2.0/node_modules/.bin/claude", wantSource: SourceCache, wantVersion: "2.2.0",
			wantCandidates: 3,
		},
		{
			name: "cache install also on PATH (as under make run) is one candidate",
			setup: func(t *testing.T, root string, o *Options) {
				fakeCLI(t, root, "cache/cli-2.1.330/node_modules/.bin/claude", "2.1.330")
				o.PathEnv = filepath.Join(root, "cache/cli-2.1.330/node_modules/.bin")
				o.CacheDir = filepath.Join(root, "cache")
			},
			wantPath: "cache/cli-2.1.330/node_modules/.bin/claude", wantSource: SourcePath, wantVersion: "2.1.330",
			wantCandidates: 1,
		},
		{
			name: "extra dirs are searched last",
			setup: func(t *testing.T, root string, o *Options) {
				fakeCLI(t, root, "extra/claude", "4.0.0")
				o.ExtraDirs = []string{filepath.Join(root, "extra")}
			},
			wantPath: "extra/claude", wantSource: SourceExtra, wantVersion: "4.0.0", wantCandidates: 1,
		},
		{
			name: "relative PATH entries are not searched",
			setup: func(t *testing.T, root string, o *Options) {
				fakeCLI(t, root, "bin/claude", "1.0.0")
				o.PathEnv = pathList("", ".", "testdata", filepath.Join(root, "bin"))
			},
			wantPath: "bin/claude", wantSource: SourcePath, wantVersion: "1.0.0", wantCandidates: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			opts := testOptions(root)
			tt.setup(t, root, &opts)
			res, err := Find(context.Background(), opts)
			if err != nil {
				t.Fatalf("Find: %v", err)
			}
			if want := filepath.Join(root, filepath.FromSlash(tt.wantPath)); res.Path != want {
				t.Errorf("Path = %q, want %q", res.Path, want)
			}
			if res.Source != tt.wantSource || res.Version != tt.wantVersion {
				t.Errorf("got %s %s, want %s %s", res.Source, res.Version, tt.wantSource, tt.wantVersion)
			}
			if len(res.Candidates) != tt.wantCandidates {
				t.Errorf("%d candidates, want %d: %+v", len(res.Candidates), tt.wantCandidates, res.Candidates)
			}
			if tt.check != nil {
				tt.check(t, res)
			}
		})
	}
}

func TestFindConfiguredBroken(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, root string) string // returns the configured path
		wantErr error                                  // nil: only the error type is checked
	}{
		{"missing", func(t *testing.T, root string) string {
			return filepath.Join(root, "nope/claude")
		}, fs.ErrNotExist},
		{"directory", func(t *testing.T, root string) string {
			return filepath.Join(root, "bin")
		}, nil},
		{"not executable", func(t *testing.T, root string) string {
			return writeScript(t, root, "opt/claude", `echo "1.0.0 (Claude Code)"`, 0o644)
		}, ErrNotExecutable},
		{"hangs", func(t *testing.T, root string) string {
			return writeScript(t, root, "opt/claude", "sleep 60", 0o755)
		}, context.DeadlineExceeded},
		{"no version", func(t *testing.T, root string) string {
			return writeScript(t, root, "opt/claude", "echo not a cli", 0o755)
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			opts := testOptions(root)
			// A working install on PATH proves there is no silent fallback.
			fakeCLI(t, root, "bin/claude", "9.9.9")
			opts.PathEnv = filepath.Join(root, "bin")
			opts.VersionTimeout = 100 * time.Millisecond
			opts.ConfiguredPath = tt.setup(t, root)

			res, err := Find(context.Background(), opts)
			var cpe *ConfiguredPathError
			if !errors.As(err, &cpe) {
				t.Fatalf("err = %v, want *ConfiguredPathError", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want it to wrap %v", err, tt.wantErr)
			}
			if res.Path != "" {
				t.Errorf("fell back to %s", res.Path)
			}
			for _, s := range []string{opts.ConfiguredPath, "CLAUDE_RELAY_CLAUDE_PATH"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

func TestFindNotFound(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	opts := Options{
		Home:          home,
		PathEnv:       pathList(filepath.Join(root, "a"), filepath.Join(root, "b")),
		HomebrewDirs:  []string{filepath.Join(root, "brew")},
		ExtraDirs:     []string{filepath.Join(root, "extra")},
		CacheDir:      filepath.Join(root, "cache"),
		LookupNpmRoot: npmRootAt(filepath.Join(root, "npm")),
	}
	// One install exists but is broken: it must be reported, not chosen.
	writeScript(t, root, "b/claude", "exit 1", 0o755)

	_, err := Find(context.Background(), opts)
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	var nf *NotFoundError
	if !errors.As(err, &nf) || len(nf.Candidates) != 1 {
		t.Fatalf("err = %#v, want *NotFoundError with the broken candidate", err)
	}
	for _, want := range []string{
		filepath.Join(root, "a", "claude"),
		filepath.Join(root, "b", "claude") + " (PATH): --version: exit status 1",
		filepath.Join(home, ".nvm", "versions", "node", "*", "bin", "claude"),
		filepath.Join(root, "brew", "claude"),
		filepath.Join(home, ".local", "bin", "claude"),
		filepath.Join(root, "npm", "@anthropic-ai", "claude-code"),
		filepath.Join(home, ".claude", "local", "claude"),
		filepath.Join(root, "extra", "claude"),
		"claude-relay cache: " + filepath.Join(root, "cache", "cli-*", "node_modules", ".bin", "claude"),
		"npm install -g @anthropic-ai/claude-code",
		"make deps",
		"claude.path",
		"CLAUDE_RELAY_CLAUDE_PATH",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
}

func TestFindNotFoundNothingSet(t *testing.T) {
	_, err := Find(context.Background(), Options{HomebrewDirs: []string{}})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	for _, want := range []string{"PATH: skipped (PATH not set", "nvm: skipped (HOME not set)", "npm-global: skipped", "claude-relay cache: skipped"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
}

func TestCacheDir(t *testing.T) {
	tests := []struct{ home, xdg, want string }{
		{"/home/u", "", "/home/u/.cache/claude-relay"},
		{"/home/u", "/xdg/cache", "/xdg/cache/claude-relay"},
		{"/home/u", "rel/cache", "/home/u/.cache/claude-relay"}, // relative: ignored, per XDG
		{"", "/xdg/cache", "/xdg/cache/claude-relay"},
		{"", "", ""},
		{"rel", "", ""},
	}
	for _, tt := range tests {
		if got := CacheDir(filepath.FromSlash(tt.home), filepath.FromSlash(tt.xdg)); got != filepath.FromSlash(tt.want) {
			t.Errorf("CacheDir(%q, %q) = %q, want %q", tt.home, tt.xdg, got, tt.want)
		}
	}
}

// TestFindDefaultNpmRoot exercises the built-in `npm root -g` runner with a
// fake npm on PATH.
func TestFindDefaultNpmRoot(t *testing.T) {
	tests := []struct {
		name    string
		npm     string // script body; %s is the npm root
		wantErr string // "" means the npm install is found
	}{
		{"works", `echo "%s"; echo "npm warn noise" >&2`, ""},
		{"fails", `echo "npm broke" >&2; exit 1`, "npm root -g: exit status 1: npm broke"},
		{"garbage", `echo "not a path"`, "unexpected output"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			npmRoot := filepath.Join(root, "lib", "node_modules")
			body := tt.npm
			if strings.Contains(body, "%s") {
				body = fmt.Sprintf(body, npmRoot)
			}
			writeScript(t, root, "tools/npm", body, 0o755)
			fakeCLI(t, npmRoot, "@anthropic-ai/claude-code/bin/claude.exe", "2.1.330")
			opts := testOptions(root)
			opts.LookupNpmRoot = nil
			opts.PathEnv = filepath.Join(root, "tools")

			res, err := Find(context.Background(), opts)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want ErrNotFound mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Source != SourceNpmGlobal || res.Version != "2.1.330" {
				t.Errorf("got %+v", res)
			}
		})
	}
}

func TestFindCanceled(t *testing.T) {
	root := t.TempDir()
	fakeCLI(t, root, "bin/claude", "1.0.0")
	opts := testOptions(root)
	opts.PathEnv = filepath.Join(root, "bin")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Find(ctx, opts); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestFindHangReturnsPromptly checks the kill actually happens: without it a
// hung probe would hold Find for the full sleep.
func TestFindHangReturnsPromptly(t *testing.T) {
	root := t.TempDir()
	// The grandchild sleep inherits stdout: only a group kill or WaitDelay
	// stops it from blocking Wait.
	writeScript(t, root, "bin/claude", "sleep 120 & sleep 120", 0o755)
	opts := testOptions(root)
	opts.PathEnv = filepath.Join(root, "bin")
	opts.VersionTimeout = 50 * time.Millisecond
	start := time.Now()
	_, err := Find(context.Background(), opts)
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	// A correctness bound, not a benchmark: far below the child's sleep.
	if d := time.Since(start); d > 60*time.Second {
		t.Fatalf("Find took %s; the hung child was not killed", d)
	}
}

// realCLI is the copy of Claude Code the project's tooling installs.
const realCLI = "/root/.cache/claude-relay/cli-2.1.330/node_modules/.bin/claude"

func TestFindRealCLI(t *testing.T) {
	if _, err := os.Stat(realCLI); err != nil {
		t.Skipf("real CLI not installed: %v", err)
	}
	res, err := Find(context.Background(), Options{ConfiguredPath: realCLI, VersionTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != "2.1.330" || res.Source != SourceConfig || res.Path != realCLI {
		t.Errorf("got %+v", res)
	}
}
