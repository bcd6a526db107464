package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/claude-relay/claude-relay/internal/localbackend"
	"github.com/claude-relay/claude-relay/internal/server"
	"github.com/claude-relay/claude-relay/internal/testkit/fakecli"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
)

// envTestMain makes the test binary run as claude-relay itself: the
// extension tests and benchmarks start it as a subprocess.
const envTestMain = "CLAUDE_RELAY_TEST_MAIN"

func TestMain(m *testing.M) {
	// First: the server's environment is its helper's, which may carry
	// the markers below.
	if filepath.Base(os.Args[0]) == localbackend.ServerName {
		os.Exit(ServerMain(os.Args[1:], server.InProcess{}))
	}
	fakecli.RunIfHelper() // the benchmarks' fake CLI
	if os.Getenv(envTestMain) == "1" {
		os.Exit(Main(os.Args[1:]))
	}
	if filepath.Base(os.Args[0]) != "claude-relay" { // go test's run, not a script's command
		linkServer()
	}
	testscript.Main(m, map[string]func(){
		"claude-relay":          func() { os.Exit(Main(os.Args[1:])) },
		localbackend.ServerName: func() { os.Exit(ServerMain(os.Args[1:], server.InProcess{})) },
	})
}

// linkServer puts this test binary beside itself as claude-relay-server,
// where claude-relay looks for it (localbackend.ServerPath): the tests'
// Apps and claude-relay processes (envTestMain) then start it for the
// embedded default and serve, as claude-relay does, and TestMain runs it
// as the server. testscript's claude-relay has its own copy beside it.
func linkServer() {
	exe, err := os.Executable()
	if err == nil {
		link := filepath.Join(filepath.Dir(exe), localbackend.ServerName)
		_ = os.Remove(link) // another build's, from a reused directory
		err = os.Link(exe, link)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "cannot put the test binary beside itself as %s (%v): tests of the embedded default and serve will fail\n",
			localbackend.ServerName, err)
	}
}

// txtarScript is what the scripted Messages API of every script answers
// (each run gets it from the start: mockapi picks turns by conversation).
var txtarScript = mockapi.Script{
	mockapi.ToolTurn("Bash", map[string]any{"command": "echo txtar-ok", "description": "Say txtar-ok"}),
	mockapi.TextTurn("txtar done"),
}

// realCLIPresent reports whether the pinned CLI is installed; under CI a
// missing one is an error, so scripts that need it fail instead of skipping.
func realCLIPresent() (bool, error) {
	path, _ := realcli.DefaultPath()
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			return false, fmt.Errorf("realcli: Claude Code CLI %s not found at %s on CI; run `make deps`", realcli.Version, path)
		}
		return false, nil
	}
	return true, nil
}

// TestScripts runs the command-line end-to-end tests in testdata/script.
//
// Scripts that run the real CLI start with `[!realcli] skip` and then
// `use-realcli`, which points the CLI at the script's scripted Messages API
// ($MOCKAPI_URL, answering txtarScript) and claude-relay at the CLI.
func TestScripts(t *testing.T) {
	present, presentErr := realCLIPresent()
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("testdata", "script"),
		Setup: func(env *testscript.Env) error {
			// A clean XDG world under the script's work dir.
			home := filepath.Join(env.WorkDir, "home")
			env.Setenv("HOME", home)
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
			env.Setenv("XDG_DATA_HOME", filepath.Join(home, ".local", "share"))
			env.Setenv("XDG_STATE_HOME", filepath.Join(home, ".local", "state"))
			// A -race claude-relay sleeps 1s at every exit otherwise; races
			// are still reported.
			env.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
			if err := os.MkdirAll(filepath.Join(home, ".config", "claude-relay"), 0o700); err != nil {
				return err
			}
			if !present {
				return nil
			}
			// Per script: a scripted API and the CLI's onboarding config
			// in this HOME (testscript's T is a testing.TB under Run).
			tb := env.T().(testing.TB)
			cli := realcli.RealCLI(tb)
			api := mockapi.New(tb, txtarScript)
			env.Defer(api.Close)
			if err := copyCLIConfig(cli.ConfigPath(), filepath.Join(home, ".claude.json"), env.WorkDir); err != nil {
				return err
			}
			env.Setenv("MOCKAPI_URL", api.URL())
			env.Setenv("REALCLI", cli.Path)
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "realcli" {
				return present, presentErr
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: withCmds(backendScriptCmds, map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"use-realcli": func(ts *testscript.TestScript, neg bool, _ []string) {
				if neg || ts.Getenv("REALCLI") == "" {
					ts.Fatalf("use-realcli: no real CLI here; guard the script with [!realcli] skip")
				}
				ts.Setenv("ANTHROPIC_BASE_URL", ts.Getenv("MOCKAPI_URL"))
				ts.Setenv("ANTHROPIC_API_KEY", realcli.APIKey)
				ts.Setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
				ts.Setenv("DISABLE_AUTOUPDATER", "1")
				ts.Setenv("CLAUDE_RELAY_CLAUDE_PATH", ts.Getenv("REALCLI"))
			},
		}),
	})
}

// withCmds merges script command tables.
func withCmds(tables ...map[string]func(ts *testscript.TestScript, neg bool, args []string)) map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	out := map[string]func(ts *testscript.TestScript, neg bool, args []string){}
	for _, t := range tables {
		maps.Copy(out, t)
	}
	return out
}

// copyCLIConfig writes the CLI's .claude.json (onboarding done, the test
// key approved) to dst, trusting workDir.
func copyCLIConfig(src, dst, workDir string) error {
	cfg := map[string]any{}
	b, err := os.ReadFile(src)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if len(b) > 0 {
		if err := json.Unmarshal(b, &cfg); err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
	}
	cfg["hasCompletedOnboarding"] = true
	cfg["projects"] = map[string]any{workDir: map[string]any{"hasTrustDialogAccepted": true}}
	out, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	return os.WriteFile(dst, out, 0o600)
}
