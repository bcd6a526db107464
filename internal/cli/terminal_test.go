package cli

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/extension"
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
