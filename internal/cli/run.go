package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/claude-relay/claude-relay/extension"
)

// sessionFlags are the session, directory, model and resume flags that
// run and terminal share (CONTRACT §2).
type sessionFlags struct {
	session     string
	interaction string
	cwd         string
	model       string
	resume      string
	fork        bool
	cont        bool
}

func (s *sessionFlags) bind(f *pflag.FlagSet) {
	f.StringVar(&s.session, "session", "", "session ID (default: a new one)")
	f.StringVar(&s.interaction, "interaction", "", "interaction ID (default: a new one)")
	f.StringVar(&s.cwd, "cwd", "", "working directory (default: workspace, CLAUDE_WORKSPACE_PATH or .)")
	f.StringVar(&s.model, "model", "", "model")
	f.StringVar(&s.resume, "resume", "", "conversation ID to resume")
	f.BoolVar(&s.fork, "fork", false, "with --resume: fork into a new conversation")
	f.BoolVar(&s.cont, "continue", false, "continue the most recent conversation in the directory")
}

type runOptions struct {
	sessionFlags
	prompt             string
	permissionMode     string
	approvals          bool
	maxTurns           int
	appendSystemPrompt string
	json               bool
}

func newRunCmd(a *App) *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run [flags] PROMPT",
		Short: "One background run from a shell (PROMPT - reads it from stdin)",
		Long: "Run Claude Code in the background on PROMPT and forward every event to the backend.\n" +
			"Shows live progress on a terminal, plain lines otherwise; --json prints the protocol events.\n" +
			"Exit status is the run's exit code (130 when cancelled with Ctrl-C).",
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.ExactArgs(1)(cmd, args); err != nil {
				return fmt.Errorf("%w: %w (give the prompt, or - to read it from stdin)", errUsage, err)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.prompt = args[0]
			return runRun(cmd.Context(), a, o)
		},
	}
	f := cmd.Flags()
	o.bind(f)
	f.StringVar(&o.permissionMode, "permission-mode", "", "default, acceptEdits, plan or bypassPermissions")
	f.BoolVar(&o.approvals, "approvals", false, "ask before each tool runs (y/n on the terminal)")
	f.IntVar(&o.maxTurns, "max-turns", 0, "stop after this many turns")
	f.StringVar(&o.appendSystemPrompt, "append-system-prompt", "", "text appended to the system prompt")
	f.BoolVar(&o.json, "json", false, "print the protocol events (NDJSON) instead of a view")
	return cmd
}

func runRun(ctx context.Context, a *App, o runOptions) error {
	if o.prompt == "-" {
		b, err := io.ReadAll(a.Stdin)
		if err != nil {
			return fmt.Errorf("read the prompt from stdin: %w", err)
		}
		o.prompt = string(b)
	}
	h, err := a.newHelper(context.WithoutCancel(ctx))
	if err != nil {
		return err
	}
	defer h.backend.Close()
	if o.session == "" {
		o.session = uuid.NewString()
	}
	runID := uuid.NewString()
	cmdR, cmdW := io.Pipe()
	evR, evW := io.Pipe()
	serveErr := make(chan error, 1)
	go func() {
		err := h.srv.Serve(cmdR, evW, nil)
		evW.Close()
		serveErr <- err
	}()
	cmds := &commandWriter{w: cmdW}
	// The pipes are synchronous: the view must be reading before anything
	// is sent, or the server's ready event blocks the whole exchange.
	v := newView(a, o, h.backend.Dashboard, o.session, cmds)
	v.embedded, v.serveAddr, v.runID = h.backend.Embedded, a.loaded.Config.Serve.Addr, runID
	done := make(chan int, 1)
	go func() { done <- v.consume(evR) }()
	prompt := o.prompt
	cmds.send(extension.Command{Action: extension.ActionPrompt, RequestID: runID, RunID: runID, SessionID: o.session, InteractionID: o.interaction,
		Prompt: &prompt, Options: extension.PromptOptions{Cwd: o.cwd, Model: o.model, PermissionMode: o.permissionMode,
			Approvals: o.approvals, Resume: o.resume, Fork: o.fork, Continue: o.cont, MaxTurns: o.maxTurns,
			SystemPromptAppend: o.appendSystemPrompt, ExitOnComplete: true}})

	signals := make(chan os.Signal, 2)
	if a.Signals != nil {
		defer a.Signals(signals)()
	}
	forced := make(chan struct{})
	go func() {
		n := 0
		for range signals {
			if n++; n == 1 {
				cmds.send(extension.Command{Action: extension.ActionCancel, RunID: runID})
				continue
			}
			close(forced)
			return
		}
	}()

	var code int
	select {
	case code = <-done:
	case <-forced:
		h.exec.KillLive() // no time for a graceful stop, but no leftovers either
		return &ExitError{Code: 130}
	}
	cmds.close()
	if err := <-serveErr; err != nil && !errors.Is(err, io.ErrClosedPipe) {
		return err
	}
	if code != 0 {
		return &ExitError{Code: code}
	}
	return nil
}

// commandWriter feeds commands to the in-process server.
type commandWriter struct {
	mu     sync.Mutex
	w      *io.PipeWriter
	closed bool
}

func (c *commandWriter) send(cmd extension.Command) {
	b, _ := json.Marshal(cmd)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.w.Write(append(b, '\n')) //nolint:errcheck // a closed server has nothing to say
	}
}

func (c *commandWriter) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		c.w.Close()
	}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// askTTY asks a y/n question on the controlling terminal.
func askTTY(question string) bool {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer tty.Close()
	fmt.Fprint(tty, question)
	line, _ := bufio.NewReader(tty).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}
