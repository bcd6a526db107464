package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runDoctorIn runs `claude-relay doctor args...` with exactly env and cwd.
func runDoctorIn(t *testing.T, env map[string]string, cwd string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &App{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Getwd:     func() (string, error) { return cwd, nil }}
	code := a.Run(t.Context(), append([]string{"doctor"}, args...))
	t.Logf("doctor %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out.String(), errb.String())
	return out.String(), errb.String(), code
}

// writeExe writes an executable shell script at path.
func writeExe(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func writeText(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// skipIfMachineCLI skips when a claude sits in the Homebrew directories
// discovery always searches: doctor would find it and the test could not
// see "not found".
func skipIfMachineCLI(t *testing.T) {
	t.Helper()
	for _, p := range []string{"/opt/homebrew/bin/claude", "/usr/local/bin/claude"} {
		if _, err := os.Stat(p); err == nil {
			t.Skipf("%s exists; doctor would find it", p)
		}
	}
}

// lines returns stdout's lines that match re.
func lines(out, re string) []string {
	var got []string
	r := regexp.MustCompile(re)
	for l := range strings.Lines(out) {
		if l = strings.TrimSuffix(l, "\n"); r.MatchString(l) {
			got = append(got, l)
		}
	}
	return got
}

func TestDoctorCLINotFound(t *testing.T) {
	skipIfMachineCLI(t)
	root := t.TempDir()
	home := filepath.Join(root, "home")
	checkout := filepath.Join(root, "src", "claude-relay")
	writeText(t, filepath.Join(checkout, "go.mod"), "// the relay\nmodule github.com/claude-relay/claude-relay\n\ngo 1.26\n")
	writeText(t, filepath.Join(checkout, "Makefile"), "deps:\n")
	spaced := filepath.Join(root, "src", "my relay")
	writeText(t, filepath.Join(spaced, "go.mod"), "module github.com/claude-relay/claude-relay\n")
	writeText(t, filepath.Join(spaced, "Makefile"), "deps:\n")
	other := filepath.Join(root, "src", "other")
	writeText(t, filepath.Join(other, "go.mod"), "module example.com/other\n")
	writeText(t, filepath.Join(other, "Makefile"), "deps:\n")
	// A broken install is reported as such, not chosen.
	writeExe(t, filepath.Join(root, "bin", "claude"), "exit 3")
	cache := filepath.Join(home, ".cache", "claude-relay")

	tests := []struct {
		name, cwd, wantFix string
	}{
		{"outside a checkout", root, "run `npm install -g @anthropic-ai/claude-code`, or set claude.path (env CLAUDE_RELAY_CLAUDE_PATH)"},
		{"another module", other, "run `npm install -g @anthropic-ai/claude-code`"},
		{"checkout root", checkout, "run `make deps` (it installs the pinned CLI under " + cache + ", which is searched), or set claude.path"},
		{"inside a checkout", filepath.Join(checkout, "internal", "cli"), "run `make -C " + checkout + " deps` (it installs"},
		{"inside a checkout with a space", filepath.Join(spaced, "cmd"), "run `make -C '" + spaced + "' deps` (it installs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"HOME": home, "PATH": filepath.Join(root, "bin"), "ANTHROPIC_API_KEY": "k"}
			out, stderr, code := runDoctorIn(t, env, tt.cwd)
			if code != 1 || stderr != "" {
				t.Fatalf("exit %d, stderr %q; want 1 and nothing", code, stderr)
			}
			fail := lines(out, `^FAIL`)
			if len(fail) != 1 {
				t.Fatalf("FAIL lines %q, want only the CLI's", fail)
			}
			want := "FAIL  claude CLI   1 install found but it does not work (see below); fix: " + tt.wantFix
			if !strings.HasPrefix(fail[0], want) {
				t.Errorf("got  %s\nwant %s...", fail[0], want)
			}
			if strings.Count(fail[0], "fix") != 1 {
				t.Errorf("more than one fix: %s", fail[0])
			}
			for _, where := range []string{
				"PATH: " + filepath.Join(root, "bin", "claude"),
				"~/.local/bin: " + filepath.Join(home, ".local", "bin", "claude"),
				"claude-relay cache: " + filepath.Join(cache, "cli-*", "node_modules", ".bin", "claude"),
				"unusable: " + filepath.Join(root, "bin", "claude") + " (PATH): --version: exit status 3",
			} {
				if len(lines(out, `^ {19}`+regexp.QuoteMeta(where)+`$`)) != 1 {
					t.Errorf("no indented line %q", where)
				}
			}
			for _, check := range []string{"config", "credentials", "backend", "spool"} {
				if len(lines(out, `^ok +`+check+` `)) != 1 {
					t.Errorf("no ok line for %s", check)
				}
			}
		})
	}
}

func TestDoctorFindsCacheInstall(t *testing.T) {
	skipIfMachineCLI(t)
	root := t.TempDir()
	xdg := filepath.Join(root, "xdg")
	cli := filepath.Join(xdg, "claude-relay", "cli-2.1.330", "node_modules", ".bin", "claude")
	writeExe(t, cli, `echo "2.1.330 (Claude Code)"`)
	// The same install under HOME's cache is not searched once
	// XDG_CACHE_HOME says where the cache is.
	writeExe(t, filepath.Join(root, "home", ".cache", "claude-relay", "cli-9.0.0", "node_modules", ".bin", "claude"),
		`echo "9.0.0 (Claude Code)"`)
	env := map[string]string{"HOME": filepath.Join(root, "home"), "XDG_CACHE_HOME": xdg,
		"PATH": filepath.Join(root, "empty"), "ANTHROPIC_API_KEY": "k"}
	out, _, code := runDoctorIn(t, env, root)
	want := "ok    claude CLI   2.1.330 at " + cli + " (from claude-relay cache)"
	if code != 0 || len(lines(out, "^"+regexp.QuoteMeta(want)+"$")) != 1 {
		t.Fatalf("exit %d, want 0 and %q", code, want)
	}
}

func TestDoctorConfigProblems(t *testing.T) {
	skipIfMachineCLI(t)
	tests := []struct {
		name      string
		file      string // config.yaml contents; "" writes none
		args      []string
		env       map[string]string
		noHome    bool
		wantFails []string // regexps, one per FAIL line, in order
		wantNote  string
		skipped   bool // backend and spool skipped: no data directory
	}{
		{
			name: "unparseable file", file: "backend:\n  url: [unclosed\n",
			wantFails: []string{`^FAIL  config +cannot read config file .*config\.yaml: .*; fix: correct or create that file, or point --config \(env CLAUDE_RELAY_CONFIG\) at another one$`},
			wantNote:  "the checks below ran without the config file (environment and flags still apply)",
		},
		{
			name: "unknown key", file: "log:\n  levle: debug\n",
			wantFails: []string{`^FAIL  config +unknown key in config file .*: "log.levle" \(known keys: .*\); fix: remove that key`},
			wantNote:  "the checks below ran without the config file",
		},
		{
			name: "missing --config", args: []string{"--config", "/nonexistent/relay.yaml"},
			wantFails: []string{`^FAIL  config +cannot read config file /nonexistent/relay\.yaml: .*; fix: correct or create`},
			wantNote:  "the checks below ran without the config file",
		},
		{
			name: "invalid value in the file", file: "log:\n  level: loud\n",
			wantFails: []string{`^FAIL  config +invalid config: log\.level = "loud" \(from file .*\): .*; fix: change log\.level \(set by file .*config\.yaml\) to an allowed value$`},
			wantNote:  "the checks below ran without the config file",
		},
		{
			name: "invalid environment", env: map[string]string{"CLAUDE_RELAY_LOG_LEVEL": "loud"},
			wantFails: []string{`^FAIL  config +invalid config: log\.level = "loud" \(from env CLAUDE_RELAY_LOG_LEVEL\): .*; fix: change log\.level \(set by env CLAUDE_RELAY_LOG_LEVEL\)`},
			wantNote:  "the checks below ran with the defaults",
		},
		{
			name: "broken file and invalid environment: one line each", file: "nope: [",
			env: map[string]string{"CLAUDE_RELAY_LOG_LEVEL": "loud"},
			wantFails: []string{
				`^FAIL  config +cannot read config file .*; fix: correct or create`,
				`^FAIL  config +invalid config: log\.level = "loud" \(from env CLAUDE_RELAY_LOG_LEVEL\)`,
			},
			wantNote: "the checks below ran with the defaults",
		},
		{
			name: "token file missing: the error says what to do", env: map[string]string{"CLAUDE_RELAY_BACKEND_TOKEN_FILE": "/nonexistent/token"},
			wantFails: []string{`^FAIL  config +cannot read backend\.token_file /nonexistent/token: .*\(fix the path or set backend\.token\)$`},
			wantNote:  "the checks below ran with the defaults",
		},
		{
			name: "no home", noHome: true,
			wantFails: []string{`^FAIL  config +no home directory: set HOME or the XDG_\* variables$`},
			wantNote:  "the checks below ran with an empty configuration", skipped: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			home := filepath.Join(root, "home")
			writeExe(t, filepath.Join(root, "bin", "claude"), `echo "2.1.330 (Claude Code)"`)
			env := map[string]string{"HOME": home, "PATH": filepath.Join(root, "bin"), "ANTHROPIC_API_KEY": "k"}
			if tt.noHome {
				delete(env, "HOME")
			}
			for k, v := range tt.env {
				env[k] = v
			}
			if tt.file != "" {
				writeText(t, filepath.Join(home, ".config", "claude-relay", "config.yaml"), tt.file)
			}
			out, stderr, code := runDoctorIn(t, env, root, tt.args...)
			if code != 1 || stderr != "" {
				t.Fatalf("exit %d, stderr %q; want 1 and nothing", code, stderr)
			}
			fails := lines(out, `^FAIL`)
			if len(fails) != len(tt.wantFails) {
				t.Fatalf("FAIL lines %q, want %d", fails, len(tt.wantFails))
			}
			for i, re := range tt.wantFails {
				if !regexp.MustCompile(re).MatchString(fails[i]) {
					t.Errorf("FAIL line %d:\n got %s\nwant %s", i, fails[i], re)
				}
				if strings.Count(fails[i], "; fix:") > 1 {
					t.Errorf("more than one fix: %s", fails[i])
				}
			}
			if len(lines(out, `^ {19}`+regexp.QuoteMeta(tt.wantNote))) != 1 {
				t.Errorf("no note %q", tt.wantNote)
			}
			// Every other check still ran.
			want := []string{`^ok +claude CLI +2\.1\.330 `, `^ok +credentials `, `^ok +backend `, `^ok +spool `}
			if tt.skipped {
				want[2], want[3] = `^skip +backend +no data directory`, `^skip +spool +no data directory`
			}
			for _, re := range want {
				if len(lines(out, re)) != 1 {
					t.Errorf("no line matching %s", re)
				}
			}
		})
	}
}
