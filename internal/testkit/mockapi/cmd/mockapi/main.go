// Command mockapi serves the scripted Messages API of package mockapi to
// tests that are not written in Go (the VS Code extension's node tests), so
// that they drive the real Claude CLI without a second scripted API.
//
// Usage:
//
//	mockapi [-script FILE] [-home DIR [-trust DIR]...] [-cli PATH] [-v]
//
// It reads the script (mockapi.ScriptJSON: a JSON list of turns) from FILE,
// or from stdin when FILE is "-" (the default), prints the server's URL as
// the first line of stdout and serves until stdin reaches EOF (or SIGINT or
// SIGTERM). With -home it also prepares DIR as the CLI's HOME, as
// realcli.RealCLI does, and prints a second line: a JSON object with the
// environment to run the CLI (or `claude-relay`) with.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
)

// dirList collects a repeatable flag.
type dirList []string

func (d *dirList) String() string     { return fmt.Sprint(*d) }
func (d *dirList) Set(v string) error { *d = append(*d, v); return nil }

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "mockapi:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("mockapi", flag.ContinueOnError)
	fset.SetOutput(stderr)
	scriptPath := fset.String("script", "-", "the script (a JSON list of turns); - reads it from stdin")
	home := fset.String("home", "", "prepare this directory as the CLI's HOME and print the environment to use")
	cliPath := fset.String("cli", "", "the Claude CLI for CLAUDE_RELAY_CLAUDE_PATH in the printed environment (default: $"+realcli.EnvOverride+" or the pinned CLI's cache path)")
	verbose := fset.Bool("v", false, "log every request to stderr")
	var trust dirList
	fset.Var(&trust, "trust", "mark this directory as a trusted project in -home (repeatable)")
	if err := fset.Parse(args); err != nil {
		return err
	}
	if len(trust) > 0 && *home == "" {
		return errors.New("-trust needs -home: the trust is recorded in that HOME's .claude.json")
	}

	in := bufio.NewReader(stdin)
	script, err := readScript(*scriptPath, in)
	if err != nil {
		return err
	}
	var logf func(string, ...any)
	if *verbose {
		logf = func(format string, a ...any) { fmt.Fprintf(stderr, format+"\n", a...) }
	}
	srv, err := mockapi.ServeLog(script, logf)
	if err != nil {
		return err
	}
	defer srv.Close()

	if _, err := fmt.Fprintln(stdout, srv.URL()); err != nil {
		return fmt.Errorf("print the URL: %w", err)
	}
	if *home != "" {
		env, err := prepareHome(*home, trust, srv.URL(), *cliPath)
		if err != nil {
			return err
		}
		b, err := json.Marshal(env)
		if err != nil {
			return fmt.Errorf("encode the environment: %w", err)
		}
		if _, err := fmt.Fprintf(stdout, "%s\n", b); err != nil {
			return fmt.Errorf("print the environment: %w", err)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The parent ends us by closing our stdin, so a test that dies cannot
	// leave the server running.
	eof := make(chan struct{})
	go func() {
		defer close(eof)
		_, _ = io.Copy(io.Discard, in)
	}()
	select {
	case <-eof:
	case <-ctx.Done():
	}
	return nil
}

// readScript reads the script from path, or from in when path is "-". From
// stdin only the first JSON value is read: the rest of stdin is the
// lifetime signal.
func readScript(path string, in *bufio.Reader) (mockapi.Script, error) {
	var data []byte
	if path == "-" {
		var raw json.RawMessage
		if err := json.NewDecoder(in).Decode(&raw); err != nil {
			return nil, fmt.Errorf("read the script from stdin: %w; give a JSON list of turns such as [{\"text\":\"hi\"}]", err)
		}
		data = raw
	} else {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read the script: %w", err)
		}
		data = b
	}
	script, err := mockapi.DecodeScript(data)
	if err != nil {
		return nil, fmt.Errorf("script %s: %w", path, err)
	}
	return script, nil
}

// prepareHome writes the .claude.json realcli.RealCLI writes (onboarding
// done, the test key approved, the trusted dirs) and returns the environment
// realcli's CLI.Env returns, plus CLAUDE_RELAY_CLAUDE_PATH when the CLI exists.
func prepareHome(home string, trust []string, url, cliPath string) (map[string]string, error) {
	home, err := filepath.Abs(home)
	if err != nil {
		return nil, fmt.Errorf("-home %s: %w", home, err)
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, fmt.Errorf("-home: %w", err)
	}
	cfgPath := filepath.Join(home, ".claude.json")
	cfg := map[string]any{}
	switch b, err := os.ReadFile(cfgPath); {
	case err == nil:
		if err := json.Unmarshal(b, &cfg); err != nil {
			return nil, fmt.Errorf("parse %s: %w; remove it or pick another -home", cfgPath, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("read %s: %w", cfgPath, err)
	}
	cfg["hasCompletedOnboarding"] = true
	key := realcli.APIKey
	if len(key) > 20 {
		key = key[len(key)-20:]
	}
	cfg["customApiKeyResponses"] = map[string]any{"approved": []any{key}, "rejected": []any{}}
	projects, _ := cfg["projects"].(map[string]any)
	if projects == nil {
		projects = map[string]any{}
	}
	for _, d := range trust {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("-trust %s: %w", d, err)
		}
		dirs := []string{abs}
		// The CLI keys projects by the resolved path.
		if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
			dirs = append(dirs, real)
		}
		for _, dir := range dirs {
			p, _ := projects[dir].(map[string]any)
			if p == nil {
				p = map[string]any{}
			}
			p["hasTrustDialogAccepted"] = true
			projects[dir] = p
		}
	}
	cfg["projects"] = projects
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", cfgPath, err)
	}
	if err := os.WriteFile(cfgPath, out, 0o600); err != nil {
		return nil, fmt.Errorf("write %s: %w", cfgPath, err)
	}

	env := map[string]string{
		"HOME":               home,
		"ANTHROPIC_BASE_URL": url,
		"ANTHROPIC_API_KEY":  realcli.APIKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"DISABLE_AUTOUPDATER":                      "1",
	}
	if cliPath == "" {
		cliPath, _ = realcli.DefaultPath()
	}
	if _, err := os.Stat(cliPath); err == nil {
		env["CLAUDE_RELAY_CLAUDE_PATH"] = cliPath
	}
	return env, nil
}
