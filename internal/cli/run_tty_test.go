package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
	"github.com/claude-relay/claude-relay/internal/testkit/tmux"
)

// `run --approvals` on a real terminal asks with the whole command, not the
// model's description of it, and runs the tool on y.
func TestRunApprovalOnTTYShowsTheWholeCommand(t *testing.T) {
	cli := realcli.RealCLI(t)
	tmux.Require(t)
	command := "echo harmless-looking-prefix " + strings.Repeat("padding-", 30) + "end && echo ran-it > approved.txt"
	api := mockapi.New(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": command, "description": "Run echo harmless-looking-prefix"}),
		mockapi.TextTurn("tty done"),
	})
	cwd := trustedDir(t, cli)
	exitFile := filepath.Join(t.TempDir(), "exit")
	var b strings.Builder
	b.WriteString("cd " + tmux.Quote(cwd) + " && env -i")
	for _, kv := range append(helperEnv(t, cli, api), envTestMain+"=1", "TERM=xterm-256color") {
		b.WriteString(" " + tmux.Quote(kv))
	}
	b.WriteString(" " + tmux.Quote(os.Args[0]) + " run --approvals --max-turns=4 'run it'; echo exit=$? > " + tmux.Quote(exitFile) + "; sleep 60")
	s := tmux.Start(t, b.String())
	if !s.WaitFor(extTimeout, func(scr string) bool { return strings.Contains(scr, "Allow Bash? [y/N]") }) {
		s.Fail("no approval question")
	}
	scr := strings.ReplaceAll(s.Screen(), "\n", "")
	if !strings.Contains(scr, "? $ "+command+" — Run echo harmless-looking-prefix") {
		s.Fail("the question does not show the whole command")
	}
	s.Keys("-l", "y")
	s.Keys("Enter")
	ok := s.WaitFor(extTimeout, func(string) bool {
		b, _ := os.ReadFile(exitFile)
		return strings.TrimSpace(string(b)) != ""
	})
	if !ok {
		s.Fail("run did not end")
	}
	if b, _ := os.ReadFile(exitFile); strings.TrimSpace(string(b)) != "exit=0" {
		s.Fail("run ended with %s", b)
	}
	if !strings.Contains(s.Screen(), "tty done") {
		s.Fail("no answer on the screen")
	}
	if b, err := os.ReadFile(filepath.Join(cwd, "approved.txt")); err != nil || strings.TrimSpace(string(b)) != "ran-it" {
		t.Errorf("the approved command did not run: %v %q", err, b)
	}
}
