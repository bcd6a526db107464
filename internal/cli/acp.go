package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/claude-relay/claude-relay/acp"
	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/relay"
	"github.com/claude-relay/claude-relay/internal/version"
)

func newACPCmd(a *App) *cobra.Command {
	return &cobra.Command{
		Use:   "acp",
		Short: "Serve an Agent Client Protocol client (Zed, JetBrains, Neovim, Emacs) on stdio",
		Long: "Speaks the Agent Client Protocol (JSON-RPC 2.0, one message per line) on stdin/stdout, so\n" +
			"an ACP editor can run Claude Code through claude-relay; logs go to stderr. Each ACP session\n" +
			"is one live run, and every event is forwarded to the backend like a background run's\n" +
			"(session id = the ACP sessionId). Ends when the editor closes stdin.\n\n" +
			"Zed (settings.json):\n" +
			"  \"agent_servers\": {\"Claude Relay\": {\"command\": \"claude-relay\", \"args\": [\"acp\"]}}",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runACP(cmd.Context(), a) },
	}
}

func runACP(ctx context.Context, a *App) error {
	// The helper outlives the first signal: it drains the forwarder after.
	h, err := a.newHelper(context.WithoutCancel(ctx), false)
	if err != nil {
		return err
	}
	stopWatch := a.watchConfig()
	defer stopWatch()
	h.Start(func(e forwarder.Error) { a.log.Warn("backend delivery", "code", e.Code, "err", e.Message) })
	home, _ := os.UserHomeDir()
	if v, ok := a.LookupEnv("HOME"); ok && v != "" {
		home = v
	}
	err = acp.Serve(ctx, acp.Options{Core: h.Core(), Home: home, Version: version.Get().Version, Logger: a.log,
		Root: os.Geteuid() == 0, HasCredentials: func() bool { return a.hasCredentials(home) }}, a.Stdin, a.Stdout)
	if closed := h.close(relay.StopClosed); closed.Err != nil && !errors.Is(closed.Err, forwarder.ErrUndelivered) {
		a.log.Warn("forwarder drain", "err", closed.Err)
	}
	return err
}

// hasCredentials reports whether the CLI has a way to log in: an API key or
// token in the environment, or a login in ~/.claude.
func (a *App) hasCredentials(home string) bool {
	for _, k := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"} {
		if v, ok := a.LookupEnv(k); ok && v != "" {
			return true
		}
	}
	_, err := os.Stat(filepath.Join(home, ".claude", ".credentials.json"))
	return err == nil
}
