package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/extension"
	"github.com/claude-relay/claude-relay/internal/billing"
	"github.com/claude-relay/claude-relay/internal/fsutil"
	"github.com/claude-relay/claude-relay/internal/relay"
	"github.com/claude-relay/claude-relay/internal/runview"
	"github.com/claude-relay/claude-relay/terminal"
)

type terminalOptions struct {
	sessionFlags
	prompt     string
	promptFile string
}

func newTerminalCmd(a *App) *cobra.Command {
	var o terminalOptions
	cmd := &cobra.Command{
		Use:   "terminal [flags] (--prompt-file F | PROMPT)",
		Short: "Run the interactive CLI in this terminal, forwarding hooks and the transcript",
		Long: "Start the interactive Claude Code CLI attached to this terminal. Hook events and\n" +
			"transcript lines go to the backend like background events; when the CLI exits, the\n" +
			"line after it says where to see them. Exit status is the CLI's, and a CLI that exits\n" +
			"non-zero is recorded as a failed run. With no PROMPT the CLI waits for one.\n" +
			"--prompt-file is read and removed (the extension writes it privately).",
		Example: "  # the interactive CLI on a prompt, its hooks and transcript forwarded as it works\n" +
			"  claude-relay terminal 'fix the failing test'\n\n" +
			"  # follow up in the same session, resuming the conversation an earlier run printed\n" +
			"  claude-relay terminal --session=sess-1 --resume=451bfcae-5922-4412-aa7f-5edc654b55a1 'now add a test'\n\n" +
			"  # what the editor extension runs: the prompt from a private file, removed once read\n" +
			"  claude-relay terminal --session=sess-1 --cwd=\"$HOME/src/app\" --prompt-file=\"$HOME/.local/share/claude-relay/prompts/prompt-1234.txt\"",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.prompt = args[0]
			}
			return runTerminal(cmd.Context(), a, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.promptFile, "prompt-file", "", "read the prompt from this file, then remove it")
	o.bind(f)
	return cmd
}

func runTerminal(ctx context.Context, a *App, o terminalOptions) error {
	if err := o.readPromptFile(); err != nil {
		return err
	}
	if err := o.validate(a.loaded.Config.Workspace); err != nil {
		return err
	}
	h, err := a.newHelper(context.WithoutCancel(ctx), true)
	if err != nil {
		return err
	}
	h.Start(nil)
	// Drained before the exit lines (they say the events are stored), and
	// on every other path by the defer.
	drain := sync.OnceFunc(func() {
		if closed := h.close(relay.StopClosed); closed.Err != nil {
			fmt.Fprintf(a.Stderr, "claude-relay: %v; `claude-relay spool flush` delivers them later\n", closed.Err)
		}
	})
	defer drain()
	f := h.Core().Frame(relay.Frame{SessionID: o.session, InteractionID: o.interaction, Cwd: o.Cwd})
	res, err := terminal.Run(context.WithoutCancel(ctx), a.terminalRun(h, o, f))
	if res == nil {
		return err // nothing started, so nothing to point at
	}
	drain()
	refused, isRefused := errors.AsType[*billing.RefusedError](err)
	if isRefused {
		// The same line and exit status as `run` (runview's error line).
		fmt.Fprintf(a.Stdout, "! %s: %s\n", extension.CodeBillingRefused, refused.Error())
	}
	if err == nil && res.ExitCode != 0 {
		fmt.Fprintf(a.Stdout, "run failed: the Claude CLI exited with status %d (its output above says why)\n", res.ExitCode)
	}
	if line := runview.EventsLine(h.backend.Dashboard, h.backend.Embedded, a.loaded.Config.Serve.Addr, f.SessionID); line != "" {
		fmt.Fprintln(a.Stdout, line)
	}
	if (err == nil || isRefused) && res.ExitCode != 0 {
		err = &ExitError{Code: res.ExitCode}
	}
	return err
}

// readPromptFile takes the prompt from --prompt-file, which is private and
// single-use: it is removed whatever happens.
func (o *terminalOptions) readPromptFile() error {
	if o.promptFile == "" {
		return nil
	}
	defer os.Remove(o.promptFile)
	b, err := os.ReadFile(o.promptFile)
	if err != nil {
		return fmt.Errorf("read --prompt-file: %w", err)
	}
	o.prompt = string(b)
	return nil
}

// terminalRun is the terminal runner's options for o's run in frame f on h.
func (a *App) terminalRun(h *helper, o terminalOptions, f relay.Frame) terminal.Options {
	c := a.loaded.Config
	cliPath := h.cli.path
	if c.Claude.Command != "" {
		cliPath = "" // claude.command is the CLI: the runner takes it as BaseCommand
	}
	exe, _ := os.Executable()
	var env []string
	if a.Environ != nil {
		env = a.Environ()
	}
	return terminal.Options{
		CLIPath: cliPath, BaseCommand: c.Claude.Command, RemoveAPIKey: c.Claude.DisableAPIKey, Exe: exe,
		Prompt: o.prompt, Cwd: f.Cwd, Model: firstNonEmpty(o.Model, c.Claude.Model),
		Resume: o.Resume, Fork: o.Fork, Continue: o.Continue, BaseEnv: env, Env: c.Claude.Env,
		SessionID: f.SessionID, InteractionID: f.InteractionID, RunID: f.RunID, Host: f.Host, Events: h.Events(),
		State: relay.NewState(c.DataDir), Registry: a.runRegistry(), Logger: a.log,
		Billing: c.Claude.Billing, ProbeBilling: h.exec.ProbeBilling, Policy: h.policy,
	}
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// newHookPostCmd is the command hook the CLI runs for events it does not
// send over HTTP: stdin (the hook input) is posted to the callback server.
// It prints nothing and always exits 0, so it can never change or fail the
// user's session.
func newHookPostCmd(a *App) *cobra.Command {
	return &cobra.Command{
		Use:    "hook-post URL",
		Short:  "Post a hook input (stdin) to a terminal run's callback URL; run by the CLI, not by people",
		Hidden: true,
		Example: "  # a command hook from the settings `claude-relay terminal` gives the CLI (URL and secret are per run)\n" +
			"  echo '{\"hook_event_name\":\"Notification\",\"session_id\":\"451bfcae-5922-4412-aa7f-5edc654b55a1\"}' |\n" +
			"    claude-relay hook-post http://127.0.0.1:41234/hook/76d311e73542f1b4e518e815d967f30c9265e34b1334593c",
		Args: cobra.ExactArgs(1),
		// No configuration needed, and a broken one must not fail a hook.
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
		RunE: func(cmd *cobra.Command, args []string) error {
			body, err := io.ReadAll(io.LimitReader(a.Stdin, terminal.MaxHookBody))
			if err != nil || !strings.HasPrefix(args[0], "http://127.0.0.1:") {
				return nil
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, args[0], bytes.NewReader(body))
			if err != nil {
				return nil
			}
			req.Header.Set("Content-Type", "application/json")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
			return nil
		},
	}
}

// newHookPolicyCmd is the PreToolUse command hook of a terminal run: it
// asks the run's callback server for the central policy's decision and
// prints it for the CLI; when there is no answer it refuses the tool call
// (exit 2), since the CLI runs a tool whose hook failed.
func newHookPolicyCmd(a *App) *cobra.Command {
	return &cobra.Command{
		Use:    "hook-policy URL",
		Short:  "Ask a terminal run's callback URL for the central policy's decision on a tool call (stdin); run by the CLI, not by people",
		Hidden: true,
		Example: "  # the PreToolUse hook from the settings `claude-relay terminal` gives the CLI (URL and secret are per run)\n" +
			"  echo '{\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"rm x\"}}' |\n" +
			"    claude-relay hook-policy http://127.0.0.1:41234/hook/76d311e73542f1b4e518e815d967f30c9265e34b1334593c",
		Args: cobra.ExactArgs(1),
		// No configuration needed: a broken one must not stand in for the
		// helper's answer.
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := terminal.PolicyHook(cmd.Context(), args[0], a.Stdin, a.Stdout, a.Stderr); code != 0 {
				return &ExitError{Code: code}
			}
			return nil
		},
	}
}

// terminalCommand builds the extension's terminal_command: this binary's
// `terminal` with the prompt in a private file it removes after reading.
func (a *App) terminalCommand(cmd extension.Command) ([]string, string, map[string]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, "", nil, fmt.Errorf("locate claude-relay: %w", err)
	}
	dir := filepath.Join(a.loaded.Config.DataDir, "prompts")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", nil, fmt.Errorf("prompt directory: %w", err)
	}
	f, err := os.CreateTemp(dir, "prompt-*.txt") // 0600
	if err != nil {
		return nil, "", nil, fmt.Errorf("prompt file: %w", err)
	}
	_, werr := f.WriteString(*cmd.Prompt)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(f.Name())
		return nil, "", nil, errors.Join(errors.New("write the prompt file"), werr)
	}
	argv := []string{exe, "terminal", "--session=" + cmd.SessionID, "--interaction=" + cmd.InteractionID, "--prompt-file=" + f.Name()}
	if cmd.Options.Cwd != "" {
		argv = append(argv, "--cwd="+cmd.Options.Cwd)
	}
	if cmd.Options.Model != "" {
		argv = append(argv, "--model="+cmd.Options.Model)
	}
	if cmd.Options.Resume != "" {
		argv = append(argv, "--resume="+cmd.Options.Resume)
		if cmd.Options.Fork {
			argv = append(argv, "--fork")
		}
	}
	if cmd.Options.Continue {
		argv = append(argv, "--continue")
	}
	env, extra, err := a.inheritedConfig()
	if err != nil {
		return nil, "", nil, err
	}
	argv = append(argv[:2], append(extra, argv[2:]...)...)
	return argv, cmd.Options.Cwd, env, nil
}

// inheritedConfig is how a visible-terminal run gets the helper's own
// configuration: global flags become flags, environment settings become
// environment, and a token from the environment travels as a private file
// rather than in the terminal's environment.
func (a *App) inheritedConfig() (map[string]string, []string, error) {
	env := map[string]string{}
	var flags []string
	if a.configFile != "" {
		flags = append(flags, "--config="+a.configFile)
	}
	for _, k := range config.Keys() {
		org := a.loaded.Origins[k]
		switch {
		case org.Source == config.FromFlag:
			flags = append(flags, org.Detail+"="+a.loaded.Value(k))
		case org.Source == config.FromEnv && k == "backend.token":
			path := filepath.Join(a.loaded.Config.DataDir, "terminal.token")
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				return nil, nil, fmt.Errorf("data dir: %w", err)
			}
			if err := fsutil.WriteFileAtomic(path, []byte(a.live.Token().Reveal())); err != nil {
				return nil, nil, err
			}
			env["CLAUDE_RELAY_BACKEND_TOKEN_FILE"] = path
		case org.Source == config.FromEnv:
			if v, ok := a.LookupEnv(org.Detail); ok {
				env[org.Detail] = v
			}
		}
	}
	return env, flags, nil
}
