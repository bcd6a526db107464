package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/extension"
	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/content"
	"github.com/claude-relay/claude-relay/internal/relay"
	"github.com/claude-relay/claude-relay/internal/runview"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/version"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// sessionFlags are the session, directory, model and resume flags that
// run and terminal share (CONTRACT §2). The options are bound straight
// into the run's options; run binds more of them.
type sessionFlags struct {
	session     string
	interaction string
	executor.RunOptions
}

func (s *sessionFlags) bind(f *pflag.FlagSet) {
	f.StringVar(&s.session, "session", "", "session ID (default: a new one)")
	f.StringVar(&s.interaction, "interaction", "", "interaction ID (default: a new one)")
	f.StringVar(&s.Cwd, "cwd", "", "working directory (default: workspace, CLAUDE_WORKSPACE_PATH or .)")
	f.StringVar(&s.Model, "model", "", "model")
	f.StringVar(&s.Resume, "resume", "", "conversation ID to resume")
	f.BoolVar(&s.Fork, "fork", false, "with --resume: fork into a new conversation")
	f.BoolVar(&s.Continue, "continue", false, "continue the most recent conversation in the directory")
}

// validate checks the session flags before anything starts, so a mistake
// costs no run, no spooled event and no "started" line; terminal has no
// other check. Its words name the flags. cwd is resolved against the
// workspace default.
func (s *sessionFlags) validate(workspace string) error {
	if s.Fork && s.Resume == "" && !s.Continue {
		return fmt.Errorf("%w: --fork needs --resume ID (the conversation to fork) or --continue", errUsage)
	}
	if s.Resume != "" {
		if _, err := uuid.Parse(s.Resume); err != nil {
			return fmt.Errorf("%w: --resume %q is not a conversation ID (one looks like 451bfcae-5922-4412-aa7f-5edc654b55a1; "+
				"`claude-relay run` prints it after each run)", errUsage, s.Resume)
		}
	}
	if s.Cwd == "" {
		s.Cwd = workspace
	}
	fi, err := os.Stat(s.Cwd)
	switch {
	case err != nil:
		return fmt.Errorf("%w: --cwd %q: %w (give an existing directory)", errUsage, s.Cwd, errors.Unwrap(err))
	case !fi.IsDir():
		return fmt.Errorf("%w: --cwd %q is not a directory", errUsage, s.Cwd)
	}
	return nil
}

// runOptions are run's flags: the run options that map one to one are
// bound into sessionFlags' RunOptions; these are the rest.
type runOptions struct {
	sessionFlags
	prompt      string
	json        bool
	interactive bool // KeepAlive, with follow-ups asked on the terminal

	// Flags that take a file or JSON, or tell "not given" from empty.
	mcpConfig, agentsArg string
	settingSources       []string
	settingSourcesSet    bool
	images, files        []string
}

func newRunCmd(a *App) *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run [flags] PROMPT...",
		Short: "One background run from a shell (PROMPT - reads it from stdin)",
		Long: "Run Claude Code in the background on PROMPT and forward every event to the backend.\n" +
			"The words of PROMPT are joined with spaces, as `claude -p` does; - reads the prompt from stdin.\n" +
			"Shows live progress on a terminal, plain lines otherwise; --json prints the protocol events.\n\n" +
			"Without --approvals every tool call is allowed without asking (the live view marks them\n" +
			"auto-allowed). With --approvals each call that is not read-only waits for an answer on this\n" +
			"terminal, showing the whole command, path or URL: [y]es, [a]lways (for the rest of the\n" +
			"run), [e]dit (opens $EDITOR on the input) or [n]o; --approvals needs a terminal.\n" +
			"A plan (plan mode) and the model's questions are asked on the terminal either way.\n\n" +
			"Exit status is the run's exit code: 130 on Ctrl-C, 143 on SIGTERM, 2 for a usage error.",
		Example: "  claude-relay run 'fix the failing test'\n" +
			"  claude-relay run --approvals --cwd ~/src/app explain the build\n" +
			"  git diff | claude-relay run -\n" +
			"  claude-relay run --resume 451bfcae-5922-4412-aa7f-5edc654b55a1 'now add a test'\n" +
			"  claude-relay run --json 'list the files' | jq .event\n" +
			"  claude-relay run -i 'look at the failing test'   # then > follow-ups; empty line ends",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("%w: no prompt (give it as arguments, or - to read it from stdin)", errUsage)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.prompt = strings.Join(args, " ")
			o.settingSourcesSet = cmd.Flags().Changed("setting-sources")
			return runRun(cmd.Context(), a, o)
		},
	}
	f := cmd.Flags()
	o.bind(f)
	// A PermissionMode is a string: the flag writes it as one.
	f.StringVar((*string)(&o.PermissionMode), "permission-mode", "", "one of "+streamjson.ModeList()+" (default: the CLI's configured default)")
	f.BoolVar(&o.Approvals, "approvals", false, "ask on this terminal before each tool runs (default: every tool is allowed)")
	f.IntVar(&o.MaxTurns, "max-turns", 0, "stop after this many turns")
	f.StringVar(&o.SystemPromptAppend, "append-system-prompt", "", "text appended to the system prompt")
	f.BoolVar(&o.json, "json", false, "print the protocol events (NDJSON) instead of a view")
	f.BoolVarP(&o.interactive, "interactive", "i", false, "after each answer, a > prompt sends the next message (empty line or Ctrl-D ends)")
	f.StringSliceVar(&o.AllowedTools, "allowed-tools", nil, "tools (or rules such as 'Bash(git *)') allowed without asking")
	f.StringSliceVar(&o.DisallowedTools, "disallowed-tools", nil, "tools the model may not use")
	f.StringVar(&o.mcpConfig, "mcp-config", "", "MCP servers: a JSON file or string with an mcpServers object")
	f.StringArrayVar(&o.AddDirs, "add-dir", nil, "another directory the tools may use (repeatable)")
	f.StringVar(&o.FallbackModel, "fallback-model", "", "model to fall back to when the main one is overloaded")
	f.Float64Var(&o.MaxBudgetUSD, "max-budget-usd", 0, "stop when the run has cost this many dollars")
	f.IntVar(&o.MaxThinkingTokens, "max-thinking-tokens", 0, "thinking budget (models with a fixed budget only)")
	f.StringVar(&o.SystemPrompt, "system-prompt", "", "replace the default system prompt")
	f.StringVar(&o.agentsArg, "agents", "", "subagent definitions: a JSON object, or a file holding one")
	f.StringSliceVar(&o.settingSources, "setting-sources", nil, "settings files to load: user, project, local (empty: none)")
	f.BoolVar(&o.PartialMessages, "partial", false, "show the answer token by token as it comes")
	f.BoolVar(&o.StopGitCheck, "stop-git-check", false, "keep going while the git tree has uncommitted changes")
	f.StringArrayVar(&o.images, "image", nil, "an image to send with the prompt (PNG, JPEG, GIF, WebP; repeatable)")
	f.StringArrayVar(&o.files, "file", nil, "a text file to send with the prompt, inlined with its path (repeatable)")
	return cmd
}

// check validates everything that can be validated before a run starts.
func (o *runOptions) check(a *App) error {
	if o.prompt == "-" {
		b, err := io.ReadAll(a.Stdin)
		if err != nil {
			return fmt.Errorf("read the prompt from stdin: %w", err)
		}
		o.prompt = string(b)
	}
	if strings.TrimSpace(o.prompt) == "" {
		return fmt.Errorf("%w: empty prompt (give it as arguments, or - to read it from stdin)", errUsage)
	}
	if m := o.PermissionMode; m != "" && !m.Known() {
		return fmt.Errorf("%w: --permission-mode %q (allowed: %s)", errUsage, m, streamjson.ModeList())
	}
	if o.interactive && (o.json || !isTerminal(a.Stdin)) {
		return fmt.Errorf("%w: -i asks for follow-ups on a terminal: run it in one, without --json "+
			"(editors send follow-ups with the extension protocol's send)", errUsage)
	}
	if o.MaxTurns < 0 {
		return fmt.Errorf("%w: --max-turns %d (give a positive number of turns, or 0 for no limit)", errUsage, o.MaxTurns)
	}
	return o.validate(a.loaded.Config.Workspace)
}

// request is the run the options ask for.
func (o *runOptions) request() (relay.Request, error) {
	req := relay.Request{RunOptions: o.RunOptions, SessionID: o.session, InteractionID: o.interaction, Prompt: o.prompt}
	req.KeepAlive = o.interactive
	if o.settingSourcesSet {
		s := slices.DeleteFunc(slices.Clone(o.settingSources), func(x string) bool { return x == "" })
		req.SettingSources = &s
	}
	var err error
	if o.mcpConfig != "" {
		var cfg struct {
			MCPServers json.RawMessage `json:"mcpServers"`
		}
		b, err := jsonArg("--mcp-config", o.mcpConfig)
		if err != nil {
			return req, err
		}
		if json.Unmarshal(b, &cfg) != nil || len(cfg.MCPServers) == 0 {
			return req, fmt.Errorf(`%w: --mcp-config: want an object with "mcpServers", as Claude Code's .mcp.json has`, errUsage)
		}
		req.MCPServers = cfg.MCPServers
	}
	if o.agentsArg != "" {
		if req.Agents, err = jsonArg("--agents", o.agentsArg); err != nil {
			return req, err
		}
	}
	for _, p := range o.images {
		req.Content = append(req.Content, content.Block{Type: "image", Path: p})
	}
	for _, p := range o.files {
		req.Content = append(req.Content, content.Block{Type: "file", Path: p})
	}
	return req, nil
}

// jsonArg reads a flag that takes JSON inline or a file holding it.
func jsonArg(flag, v string) (json.RawMessage, error) {
	b := []byte(v)
	if t := strings.TrimSpace(v); !strings.HasPrefix(t, "{") {
		var err error
		if b, err = os.ReadFile(v); err != nil {
			return nil, fmt.Errorf("%w: %s %q: not JSON, and not a readable file (%w)", errUsage, flag, v, errors.Unwrap(err))
		}
	}
	if !json.Valid(b) {
		return nil, fmt.Errorf("%w: %s: not valid JSON", errUsage, flag)
	}
	return b, nil
}

// errNoTTY: --approvals has nobody to ask.
var errNoTTY = errors.New("--approvals asks on a terminal, and there is none here")

func runRun(ctx context.Context, a *App, o runOptions) error {
	if err := o.check(a); err != nil {
		return err
	}
	ask, err := o.asker(a)
	if err != nil {
		return err
	}
	if ask != nil {
		defer ask.Close()
	}
	h, err := a.newHelper(context.WithoutCancel(ctx), true)
	if err != nil {
		return err
	}
	v := a.runView(h, o, ask)
	h.Start(v.ForwarderError)
	v.StartSpinner()
	defer v.StopSpinner()
	defer a.startProbe(ctx, h, v)()

	req, err := o.request()
	if err != nil {
		h.close(relay.StopClosed) // nothing was spooled
		return err
	}
	run, err := h.Core().Start(req, v)
	if err != nil {
		h.close(relay.StopClosed) // nothing was spooled
		if re, ok := errors.AsType[*relay.RefusedError](err); ok && re.Code == relay.RefuseBudget {
			fmt.Fprintln(a.Stderr, "claude-relay:", err)
			return &ExitError{Code: exitBudget}
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	l := &runLoop{a: a, o: o, h: h, v: v, run: run}
	code, first := l.wait()
	if l.forced {
		h.abandon()
		return &ExitError{Code: signalStatus(first)}
	}
	closed := h.close(relay.StopClosed)
	v.Shutdown(closed.Err, closed.Stats)
	if first != nil && code == runview.ExitCancelled {
		code = signalStatus(first)
	}
	if code != 0 {
		return &ExitError{Code: code}
	}
	if closed.Err != nil && !errors.Is(closed.Err, forwarder.ErrUndelivered) {
		return closed.Err
	}
	return nil
}

// asker opens the terminal that approvals, plans and the model's questions
// are asked on: required with --approvals, else whenever run is on a
// terminal (plans and questions ask whatever --approvals says); nil when
// there is nobody to ask.
func (o runOptions) asker(a *App) (*runview.Asker, error) {
	switch {
	case o.Approvals:
		ask, err := runview.OpenTTY()
		if err != nil {
			return nil, fmt.Errorf("%w: %w (%w): run it in a terminal, or let an editor answer approvals through "+
				"`claude-relay extension` (approval_requested / approve)", errUsage, errNoTTY, err)
		}
		return ask, nil
	case isTerminal(a.Stdin) && isTerminal(a.Stdout):
		if ask, err := runview.OpenTTY(); err == nil {
			return ask, nil
		}
	}
	return nil, nil
}

// runView is the view of o's run on h, which says the ready event first
// with --json.
func (a *App) runView(h *helper, o runOptions, ask *runview.Asker) *runview.View {
	c := a.loaded.Config
	v := runview.New(runview.Options{Stdout: a.Stdout, Stderr: a.Stderr, Logger: a.log,
		TTY: isTerminal(a.Stdout), JSON: o.json, Interactive: o.interactive,
		Approvals: o.Approvals, PermissionMode: o.PermissionMode,
		Dashboard: h.backend.Dashboard, Core: h.Core(), Embedded: h.backend.Embedded,
		ServeAddr: c.Serve.Addr, SpoolDir: c.Spool.Dir, Ask: ask})
	if o.json {
		v.EmitJSON(extension.Event{Event: extension.EventReady, Version: version.Get().Version, Protocol: extension.ProtocolVersion,
			PID: os.Getpid(), CLIPath: h.cli.path, CLIVersion: h.cli.version, Backend: h.backend.URL, Dashboard: h.backend.Dashboard})
	}
	return v
}

// startProbe says at once, while the run goes ahead (its events wait in
// the spool), when the backend will not take them; the returned func stops
// the probe and waits for it.
func (a *App) startProbe(ctx context.Context, h *helper, v *runview.View) (stop func()) {
	if h.backend.Embedded {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var probe sync.WaitGroup
	token, configured := a.forwarderOptions(h.backend).Token, a.loaded.Config.Backend.URL != ""
	probe.Go(func() {
		if msg := probeBackend(ctx, h.backend.URL, token(), configured); msg != "" {
			v.Line("! " + a.redact(msg))
		}
	})
	return func() { cancel(); probe.Wait() }
}

// runLoop waits for a run's end, taking -i's follow-up messages and the
// signals. The first signal cancels the run, which then drains and exits
// with 128+signal; a second one exits at once (forced). With -i, each
// turn's end asks for the next message, and Ctrl-C during a turn stops that
// turn alone (as in the Claude CLI): the run asks for the next message.
type runLoop struct {
	a   *App
	o   runOptions
	h   *helper
	v   *runview.View
	run *relay.Run

	turnRunning, stopping, forced bool
	first                         os.Signal
}

// wait returns the run's exit status and the first signal, if any.
func (l *runLoop) wait() (int, os.Signal) {
	signals := make(chan os.Signal, 2)
	if l.a.Signals != nil {
		defer l.a.Signals(signals)()
	}
	var lines *runview.LineReader
	if l.o.interactive {
		lines = runview.NewLineReader(l.a.Stdin, l.a.Stdout)
		defer lines.Close()
	}
	l.turnRunning = true
	for {
		select {
		case code := <-l.v.Done():
			return code, l.first
		case <-l.v.Turns():
			l.turnRunning, l.stopping = false, false
			lines.Ask("> ")
		case line := <-lines.C():
			l.send(line)
		case sig := <-signals:
			if l.signal(sig) {
				return exitFailure, l.first
			}
		}
	}
}

// send sends a typed line as the next message; an empty line or the end
// of input ends the run.
func (l *runLoop) send(line runview.Line) {
	core, id := l.h.Core(), l.run.ID()
	if strings.TrimSpace(line.Text) == "" || line.Err != nil {
		core.End("", id) //nolint:errcheck // it may have just ended
		return
	}
	if err := core.Send("", id, "", relay.Message{Prompt: strings.TrimRight(line.Text, "\r\n")}); err != nil {
		l.v.Line("! " + err.Error())
		return
	}
	l.turnRunning = true
	l.v.SetStatus("thinking")
}

// signal acts on sig; it reports a second signal, which ends the wait at
// once.
func (l *runLoop) signal(sig os.Signal) (forced bool) {
	core, id := l.h.Core(), l.run.ID()
	if l.o.interactive && sig == os.Interrupt && l.turnRunning && !l.stopping && l.first == nil {
		l.stopping = true
		if err := core.Interrupt("", id, wire.ByTTY); err == nil {
			l.v.Line("stopping the turn (Ctrl-C again ends the run)")
			return false
		}
	}
	if l.first != nil {
		l.forced = true
		return true
	}
	l.first = sig
	core.Cancel(id, relay.Stop{By: wire.ByTTY, Why: "stopped with " + signalName(sig)}) //nolint:errcheck // it may have just ended
	return false
}

// signalStatus is the shell's exit status for death by sig: 128+n.
// signalName says a stop signal as a user gave it: Ctrl-C for SIGINT.
func signalName(sig os.Signal) string {
	if sig == os.Interrupt {
		return "Ctrl-C"
	}
	return sig.String()
}

func signalStatus(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return runview.ExitCancelled
}

// probeBackend proves the backend a claude-relay backend that takes the
// token (forwarder.Probe: GET /api/whoami) and says in one line what is
// wrong if it is not; "" when all is well or ctx ended first. configured
// says the URL is backend.url's.
func probeBackend(ctx context.Context, url, token string, configured bool) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := forwarder.Probe(ctx, nil, url, token)
	var pe *forwarder.ProbeError
	if !errors.As(err, &pe) || errors.Is(err, context.Canceled) { // canceled: the run is over
		return ""
	}
	switch pe.Kind {
	case forwarder.ProbeUnreachable:
		return fmt.Sprintf("the backend %s is not reachable (%v); events wait in the spool and go out when it answers", pe.Base, pe.Err)
	case forwarder.ProbeAuth:
		return fmt.Sprintf("the backend %s refuses the token (HTTP %d); events wait in the spool until backend.token is fixed (`claude-relay doctor` checks it)",
			pe.Base, pe.Status)
	case forwarder.ProbeNotBackend:
		return notBackendProblem(pe, configured) + "; this run's events wait in the spool, none is acknowledged: set backend.url to the base URL " +
			"of a claude-relay backend (`claude-relay doctor` checks it), then `claude-relay spool flush` delivers them"
	}
	return fmt.Sprintf("the backend %s answered %s; events wait in the spool and go out when it answers", pe.Base, pe.Answer)
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
