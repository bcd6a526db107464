package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/extension"
	"github.com/claude-relay/claude-relay/internal/server/store/sqlite"
)

// TestTerminalCommandInheritsConfig: a terminal the extension opens must
// deliver to the same backend, with the same token, as the helper.
func TestTerminalCommandInheritsConfig(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"HOME": home, "CLAUDE_RELAY_BACKEND_URL": "http://127.0.0.1:9999",
		"CLAUDE_RELAY_BACKEND_TOKEN": "tok-secret-1", "CLAUDE_WORKSPACE_PATH": "/srv/ws"}
	a := &App{Stdin: strings.NewReader(""), Stdout: &strings.Builder{}, Stderr: &strings.Builder{},
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Getwd:     func() (string, error) { return home, nil }}
	root := a.rootCommand()
	if err := root.PersistentFlags().Parse([]string{"--log-level=debug"}); err != nil {
		t.Fatal(err)
	}
	if err := a.load(root.PersistentFlags()); err != nil {
		t.Fatal(err)
	}
	prompt := "hello"
	argv, _, tenv, err := a.terminalCommand(extension.Command{SessionID: "s", InteractionID: "i", Prompt: &prompt})
	if err != nil {
		t.Fatal(err)
	}
	if argv[1] != "terminal" || !slices.Contains(argv, "--log-level=debug") {
		t.Errorf("argv %q", argv)
	}
	if tenv["CLAUDE_RELAY_BACKEND_URL"] != "http://127.0.0.1:9999" || tenv["CLAUDE_WORKSPACE_PATH"] != "/srv/ws" {
		t.Errorf("env %v", tenv)
	}
	if _, ok := tenv["CLAUDE_RELAY_BACKEND_TOKEN"]; ok {
		t.Error("the token must not travel in the terminal's environment")
	}
	b, err := os.ReadFile(tenv["CLAUDE_RELAY_BACKEND_TOKEN_FILE"])
	if err != nil || string(b) != "tok-secret-1" {
		t.Errorf("token file: %v %q", err, b)
	}
	for _, arg := range argv {
		if strings.HasPrefix(arg, "--prompt-file=") {
			fi, err := os.Stat(strings.TrimPrefix(arg, "--prompt-file="))
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("prompt file: %v %v", err, fi)
			}
		}
	}
}

// fakeInteractiveCLI writes a stand-in for the interactive CLI that answers
// discovery's --version probe and otherwise exits with status exit, like a
// session the user ended (0) or one that broke.
func fakeInteractiveCLI(t *testing.T, exit int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "claude")
	script := fmt.Sprintf("#!/bin/sh\nif [ \"$1\" = --version ]; then echo '2.1.330 (Claude Code)'; exit 0; fi\nexit %d\n", exit)
	if err := os.WriteFile(path, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTerminalExit: when the CLI exits, `terminal` says where the events
// are (the embedded default names serve and its page), and the stored
// session's status follows the CLI's exit status.
func TestTerminalExit(t *testing.T) {
	for _, tc := range []struct {
		exit   int
		status string
	}{
		{0, "completed"},
		{3, "failed"},
	} {
		t.Run(tc.status, func(t *testing.T) {
			home, cwd := t.TempDir(), t.TempDir()
			env := map[string]string{"HOME": home, "PATH": os.Getenv("PATH"), "CLAUDE_RELAY_CLAUDE_PATH": fakeInteractiveCLI(t, tc.exit)}
			var out, errb strings.Builder
			a := &App{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
				LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
				Environ:   func() []string { return []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")} },
				Getwd:     func() (string, error) { return cwd, nil }}
			code := a.Run(t.Context(), []string{"terminal", "--session=term-1", "do it"})
			t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
			if code != tc.exit {
				t.Errorf("exit status %d, want the CLI's %d", code, tc.exit)
			}
			wantLine := "events stored; see them with: claude-relay serve, then open http://127.0.0.1:8787/sessions/term-1\n"
			if !strings.HasSuffix(out.String(), wantLine) {
				t.Errorf("stdout %q does not end with %q", out.String(), wantLine)
			}
			failedLine := fmt.Sprintf("run failed: the Claude CLI exited with status %d", tc.exit)
			if got := strings.Contains(out.String(), failedLine); got != (tc.exit != 0) {
				t.Errorf("stdout %q: %q shown %v, want %v", out.String(), failedLine, got, tc.exit != 0)
			}

			st, err := sqlite.Open(t.Context(), filepath.Join(home, ".local/share/claude-relay/relay.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			sess, err := st.Session(t.Context(), "term-1")
			if err != nil {
				t.Fatal(err)
			}
			if sess.Status != tc.status {
				t.Errorf("session status %q, want %q", sess.Status, tc.status)
			}
		})
	}
}

// TestTerminalHelpExamples: `terminal --help` and the hidden `hook-post
// --help` and `hook-policy --help` show how they are run.
func TestTerminalHelpExamples(t *testing.T) {
	for _, tc := range []struct{ cmd, example string }{
		{"terminal", "claude-relay terminal --session=sess-1 --resume="},
		{"hook-post", "|\n    claude-relay hook-post http://127.0.0.1:"},
		{"hook-policy", "|\n    claude-relay hook-policy http://127.0.0.1:"},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			var out, errb strings.Builder
			a := &App{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
				LookupEnv: func(string) (string, bool) { return "", false },
				Getwd:     func() (string, error) { return t.TempDir(), nil }}
			if code := a.Run(t.Context(), []string{tc.cmd, "--help"}); code != 0 {
				t.Fatalf("%s --help: exit %d: %s", tc.cmd, code, errb.String())
			}
			help := out.String()
			if !strings.Contains(help, "\nExamples:\n") || !strings.Contains(help, tc.example) {
				t.Errorf("%s --help has no Examples section with %q:\n%s", tc.cmd, tc.example, help)
			}
		})
	}
}
