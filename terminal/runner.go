package terminal

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/billing"
	"github.com/claude-relay/claude-relay/internal/launch"
	"github.com/claude-relay/claude-relay/internal/proc"
	"github.com/claude-relay/claude-relay/internal/relay"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// Enqueuer takes events for the backend (forwarder.Forwarder).
type Enqueuer interface {
	Enqueue(forwarder.Event) (forwarder.Accepted, error)
}

// Registry keeps the records of live runs (proc.Registry).
type Registry interface {
	Register(proc.Record) error
	Unregister(runID string) error
}

// Options describe one visible-terminal run.
type Options struct {
	CLIPath       string
	BaseCommand   string // replaces CLIPath, shell-split, as executor.Options.BaseCommand
	RemoveAPIKey  bool   // claude.disable_api_key: the CLI uses its own login, not ANTHROPIC_API_KEY
	Exe           string // this binary, for command hooks
	Prompt        string
	Cwd           string
	Host          string // the machine's host name, posted in relay.run_started
	Model         string
	Resume        string
	Fork          bool
	Continue      bool
	BaseEnv       []string          // the environment the CLI starts from (the helper's own)
	Env           map[string]string // claude.env, over BaseEnv
	StopGrace     time.Duration     // after the SIGTERM that stops the CLI when ctx ends, SIGKILL follows this late (5s)
	SessionID     string
	InteractionID string
	RunID         string
	Events        Enqueuer // every event of the run: hooks, transcript lines and the run's frame
	// Billing is claude.billing; when it restricts, ProbeBilling is asked
	// before the CLI starts and a source it does not allow refuses the run
	// (billing.go).
	Billing      billing.Policy
	ProbeBilling func(ctx context.Context, cwd string) (billing.Source, error)
	// Policy is the central policy (serve.policy), enforced by a
	// PreToolUse command hook that asks the callback server (policy.go,
	// hookpolicy.go); nil: not enforced.
	Policy PolicySource
	State  *relay.State // where the workspace's last conversation is kept; nil: nowhere
	// Registry records the run while its CLI runs, so that if this helper
	// dies the next helper start stops what is left and ends the run in
	// the backend (relay.EndDeadRuns); nil: not recorded.
	Registry Registry
	Logger   *slog.Logger
	Stdin    *os.File // the terminal; nil: os.Stdin
	Stdout   *os.File
	Stderr   *os.File
}

// Result is how a visible run ended.
type Result struct {
	ExitCode       int
	ConversationID string
	Hooks          int
	TranscriptRows int
}

// Run starts the interactive CLI attached to the terminal, forwards hooks
// and transcript lines, and returns when the CLI exits. The CLI owns the
// terminal: it stays in our foreground process group so it can read the TTY,
// gets Ctrl-C and window-size changes from the kernel directly, and we
// restore the terminal modes if it dies without doing so.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Stdin == nil {
		o.Stdin = os.Stdin
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.StopGrace <= 0 {
		o.StopGrace = 5 * time.Second
	}
	// Built as for background runs, so both refuse the same entries.
	env, dropped := launch.Env{Base: o.BaseEnv, Config: o.Env, RunID: o.RunID, RemoveAPIKey: o.RemoveAPIKey}.Build()
	for _, d := range dropped {
		o.Logger.Warn(d.String(), "run_id", o.RunID)
	}
	// The token tells this start's processes from another helper's start
	// of the same run ID: the kill at the end takes only ours.
	token := proc.NewToken()
	env = proc.WithToken(env, token)
	r := &runner{o: o, env: env, token: token, res: &Result{}, seen: map[string]struct{}{}}
	// Framed as every run is (relay.Lifecycle): run_started, each turn's
	// end, the run's end with wire's statuses, the last conversation.
	r.rec = relay.NewLifecycle(o.Events, o.State, relay.Frame{RunID: o.RunID, SessionID: o.SessionID,
		InteractionID: o.InteractionID, Cwd: o.Cwd, Mode: wire.ModeTerminal, Host: o.Host}, o.Logger)
	var claudeDir string
	claudeDir, r.configPath = claudePaths(env)
	r.before = transcriptSizes(o, claudeDir)
	if o.Resume != "" || o.Continue {
		// The totals the CLI will start from, should its transcript not
		// say (see runCost).
		r.configBefore = configCosts(r.configPath)
	}
	return r.run(ctx)
}

type runner struct {
	o     Options
	env   []string // the CLI's environment
	token string   // marks this start's processes (proc.TokenEnv)
	rec   *relay.Lifecycle
	res   *Result

	mu         sync.Mutex
	tailing    bool                // a hook named the transcript: the tailer is started
	seen       map[string]struct{} // transcript uuids already sent
	tail       *Tailer             // the running tailer; nil before a hook named the transcript
	tailStop   context.CancelFunc
	tailDone   chan struct{}
	tailClosed bool // stopTail ran: no tailer may start any more
	convID     string
	hookCount  int
	rows       int
	asks       map[string]terminalAsk // policy asks the terminal's person has yet to answer, by tool_use_id
	before     map[string]int64       // transcript sizes before a resumed or continued run

	// Turns, tokens and cost (usage.go, usage_cost.go).
	usage        usageTracker
	baseline     *costRecord           // the CLI's totals before this run, from the transcript
	configPath   string                // the CLI's config file
	configBefore map[string]costRecord // its totals before this run, by conversation
}

// transcriptSizes records, before a resumed or continued run starts, how long
// the transcripts it may append to already are: their lines were forwarded
// by the run that wrote them. Transcripts live in
// <claudeDir>/projects/<cwd with / as ->/<conversation id>.jsonl, claudeDir
// being $CLAUDE_CONFIG_DIR or $HOME/.claude.
func transcriptSizes(o Options, claudeDir string) map[string]int64 {
	if o.Resume == "" && !o.Continue {
		return nil
	}
	pattern := filepath.Join(claudeDir, "projects", "*", "*.jsonl")
	if o.Resume != "" && !o.Continue {
		pattern = filepath.Join(claudeDir, "projects", "*", filepath.Base(o.Resume)+".jsonl")
	}
	paths, _ := filepath.Glob(pattern)
	sizes := map[string]int64{}
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			sizes[filepath.Clean(p)] = fi.Size()
		}
	}
	return sizes
}

func (r *runner) run(ctx context.Context) (*Result, error) {
	tmp, err := os.MkdirTemp("", "claude-relay-terminal-")
	if err != nil {
		return nil, fmt.Errorf("private temp dir: %w", err)
	}
	defer os.RemoveAll(tmp) // the settings file goes with it, on every path
	cb, err := StartCallbackServer(r.onHook, r.o.Logger)
	if err != nil {
		return nil, err
	}
	settings, err := Settings(cb.URL(), r.o.Exe, r.o.Policy != nil)
	if err != nil {
		cb.Close(context.Background())
		return nil, fmt.Errorf("hook settings: %w", err)
	}
	settingsPath := filepath.Join(tmp, "settings.json")
	if err := os.WriteFile(settingsPath, settings, 0o600); err != nil {
		cb.Close(context.Background())
		return nil, fmt.Errorf("write hook settings: %w", err)
	}
	// The prompt as the CLI gets it, bounded for the record; without one
	// the user types it, and hook.UserPromptSubmit carries it.
	r.spooled(wire.TypeRunStarted, r.rec.Started(wire.RunStarted{Resume: r.o.Resume, Fork: r.o.Fork, Continue: r.o.Continue,
		PromptRecord: wire.RecordPrompt(r.o.Prompt, nil), Model: r.o.Model}))
	if refused := r.guardBilling(ctx); refused != nil {
		cb.Close(context.Background())
		return r.refuse(refused)
	}

	started := time.Now()
	code, stopped, runErr := r.execCLI(ctx, settingsPath)
	elapsed := time.Since(started).Milliseconds()
	// SessionEnd may still be in flight: give hooks a moment, then stop.
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	cb.Close(sctx)
	cancel()
	r.stopTail()
	r.endAsks(wire.ByCancelled)                               // asks the CLI ended with no further hook
	proc.KillNow(proc.Tree{RunID: r.o.RunID, Token: r.token}) // tools the CLI left running

	r.mu.Lock()
	r.res.ExitCode, r.res.ConversationID, r.res.Hooks, r.res.TranscriptRows = code, r.convID, r.hookCount, r.rows
	last := r.usage.finish(stopped)
	r.mu.Unlock()
	if last != nil {
		r.emitTurn(*last)
	}
	status, reason := outcome(code, stopped, runErr)
	end := wire.RunEnded{Status: status, ExitCode: &code, ConversationID: r.res.ConversationID,
		Result: wire.Result{ExitCode: code, DurationMS: elapsed}, Reason: reason}
	r.addUsage(&end)
	r.spooled(wire.EndType(status), r.rec.Ended(end))
	return r.res, runErr
}

// addUsage puts the run's tokens (its turns' sum) and its cost (the CLI's
// own record, see runCost) into its end event.
func (r *runner) addUsage(end *wire.RunEnded) {
	r.mu.Lock()
	turns, total, models := r.usage.turns, r.usage.total, r.usage.runModels()
	r.mu.Unlock()
	if turns > 0 {
		end.Usage = &total
	}
	byModel := map[string]wire.ModelUsage{}
	for m, u := range models {
		byModel[m] = wire.ModelUsage{Usage: u}
	}
	if cost := r.runCost(end.ConversationID); cost != nil {
		end.TotalCostUSD = &cost.TotalUSD
		for m, c := range cost.Models {
			mu := byModel[m]
			mu.CostUSD = &c
			byModel[m] = mu
		}
	}
	if len(byModel) > 0 {
		end.Models = byModel
	}
}

// runCost is what this run cost by the CLI's own records, nil when they do
// not say: the conversation's totals at exit minus those it started from.
// The transcript's last cost-state comes first (one per conversation); the
// config file, which keeps only each project's last conversation, only
// when the transcript has none, and not when it still holds what it held
// before the run (the CLI did not write this run's).
func (r *runner) runCost(conv string) *costRecord {
	r.mu.Lock()
	final, started := r.usage.cost, r.baseline
	r.mu.Unlock()
	if final != nil && (conv == "" || final.SessionID == conv) {
		c := final.since(started)
		return &c
	}
	rec, ok := configCosts(r.configPath)[conv]
	if !ok {
		return nil
	}
	from, had := r.configBefore[conv]
	if had && from.StartTime == rec.StartTime && from.TotalUSD == rec.TotalUSD {
		return nil
	}
	if !had && r.o.Resume != "" {
		from, had = r.configBefore[filepath.Base(r.o.Resume)] // a fork starts from the resumed totals
	}
	var base *costRecord
	if had {
		base = &from
	}
	c := rec.since(base)
	return &c
}

// outcome is how a run ended, and why. The backend reads a run's end from
// the end event's type (wire.EndType), so a CLI that exits non-zero must be
// a failed run, not a completed one with a non-zero exit_code; a CLI we
// stopped (Run's ctx ended) was cancelled.
func outcome(code int, stopped bool, runErr error) (status wire.Status, reason string) {
	switch {
	case runErr != nil:
		return wire.StatusFailed, runErr.Error()
	case stopped:
		return wire.StatusCancelled, fmt.Sprintf("stopped by claude-relay; the Claude CLI exited with status %d", code)
	case code != 0:
		return wire.StatusFailed, fmt.Sprintf("the Claude CLI exited with status %d", code)
	}
	return wire.StatusCompleted, ""
}

// command builds the interactive CLI's program and arguments: the program
// and session flags as launch builds them for every mode, with this mode's
// --settings first and the prompt last, after "--" so it is never a flag.
func (r *runner) command(settingsPath string) (string, []string, error) {
	program, args, err := launch.Program(r.o.CLIPath, r.o.BaseCommand)
	if err != nil {
		return "", nil, err
	}
	args = append(args, "--settings="+settingsPath)
	args = append(args, launch.Session{Model: r.o.Model, Resume: r.o.Resume, Fork: r.o.Fork, Continue: r.o.Continue}.Args()...)
	if strings.TrimSpace(r.o.Prompt) != "" {
		args = append(args, "--", r.o.Prompt)
	}
	return program, args, nil
}

// execCLI runs the CLI to its end and returns its exit status (128+N for
// signal N), and whether we stopped it because ctx ended: SIGTERM, then
// SIGKILL if it is still there StopGrace later (exec's Cancel and
// WaitDelay, so no goroutine of ours outlives the call).
func (r *runner) execCLI(ctx context.Context, settingsPath string) (code int, stopped bool, err error) {
	program, args, err := r.command(settingsPath)
	if err != nil {
		return 1, false, fmt.Errorf("start the Claude CLI: %w", err)
	}
	var cancelled atomic.Bool
	cmd := exec.CommandContext(ctx, program, args...)
	cmd.Cancel = func() error {
		cancelled.Store(true)
		return cmd.Process.Signal(syscall.SIGTERM)
	}
	cmd.WaitDelay = r.o.StopGrace
	cmd.Dir, cmd.Env = r.o.Cwd, r.env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r.o.Stdin, r.o.Stdout, r.o.Stderr
	restore := saveTerminal(r.o.Stdin)
	defer restore()
	// Ctrl-C belongs to the CLI (the kernel sends it to the whole foreground
	// group); we only must not die of it. SIGTERM and SIGHUP are passed on.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 1, false, fmt.Errorf("start the Claude CLI %s: %w", program, err)
	}
	r.register(cmd.Process.Pid)
	defer r.unregister()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // every return below has received from exited
	for {
		select {
		case err := <-exited:
			// The status, not err: after Cancel a clean exit still gives
			// ctx's error, and that exit is the CLI's answer to our SIGTERM.
			ps := cmd.ProcessState
			if ps == nil {
				return 1, cancelled.Load(), fmt.Errorf("wait for the Claude CLI: %w", err)
			}
			if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				return 128 + int(ws.Signal()), cancelled.Load(), nil
			}
			return ps.ExitCode(), cancelled.Load(), nil
		case s := <-sigs:
			if s == syscall.SIGTERM || s == syscall.SIGHUP {
				cmd.Process.Signal(s) //nolint:errcheck // it may have just exited
			}
		}
	}
}

// onHook forwards a hook input and starts tailing the transcript it names;
// a PreToolUse gets the central policy's answer.
func (r *runner) onHook(ctx context.Context, event string, body []byte) any {
	var in struct {
		SessionID      string `json:"session_id"`
		TranscriptPath string `json:"transcript_path"`
	}
	_ = json.Unmarshal(body, &in)
	if event == "UserPromptSubmit" {
		// The previous turn's last transcript lines (its answer, its end)
		// were written before this prompt: they go first, so the record
		// reads in the order things happened.
		r.syncTail()
	}
	r.mu.Lock()
	r.hookCount++
	if r.convID == "" && in.SessionID != "" {
		r.convID = in.SessionID
	}
	r.usage.hook(event, body)
	start := !r.tailing && in.TranscriptPath != ""
	if start {
		r.tailing = true
	}
	r.mu.Unlock()
	r.enqueue("hook."+event, "terminal", body)
	if start {
		r.startTail(in.TranscriptPath)
	}
	if event == "PreToolUse" {
		return r.policyAnswer(ctx, body)
	}
	r.policyHook(event, body)
	return nil
}

// syncTail has the tailer read what the transcript holds now (bounded: a
// tailer that is not running, or a slow disk, never holds up the hook).
func (r *runner) syncTail() {
	r.mu.Lock()
	t := r.tail
	r.mu.Unlock()
	if t == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if !t.Sync(ctx) {
		r.o.Logger.Debug("transcript not caught up before the prompt hook")
	}
}

// startTail starts the tailer goroutine; stopTail owns it: it cancels it and
// waits for it, and once it has run no tailer starts (a hook handler the
// callback server's Close gave up waiting for may still get here).
func (r *runner) startTail(path string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	r.mu.Lock()
	if r.tailClosed {
		r.mu.Unlock()
		cancel()
		return
	}
	t := &Tailer{Path: path, OnLine: r.onTranscript, Logger: r.o.Logger, Skip: r.before[filepath.Clean(path)],
		OnSkip: func(prefix []byte, size int) {
			// Never silently: the backend hears that a line was too long.
			r.emit(wire.TypeMalformedLine, wire.MalformedLine{RunID: r.o.RunID, Source: "transcript",
				Error: "transcript line over the limit", Bytes: size, Raw: truncate(string(prefix), 1024)})
		}}
	r.tail, r.tailStop, r.tailDone = t, cancel, done
	r.mu.Unlock()
	go func() {
		defer close(done)
		r.loadHistory(path) // before the first line is read
		t.Run(ctx)          //nolint:errcheck // returns at ctx end
	}()
}

// loadHistory reads what the transcript held before this run: the CLI's
// totals there, which this run's carry over, and for a fork (a new
// transcript of a resumed conversation) what the copy repeats, which this
// run must not count again.
func (r *runner) loadHistory(path string) {
	src, limit := path, r.before[filepath.Clean(path)]
	fork := limit == 0 && r.o.Fork
	if fork {
		src, limit = r.forkSource(path)
	}
	if limit == 0 {
		return
	}
	last, copied := readHistory(src, limit, fork)
	r.mu.Lock()
	r.baseline, r.usage.copied = last, copied
	r.mu.Unlock()
}

// forkSource is the transcript a fork at path copies, and its size before
// the run: the resumed conversation's, or with --continue the newest in
// path's project directory (the conversation the CLI continues).
func (r *runner) forkSource(path string) (src string, size int64) {
	var newest time.Time
	for p, n := range r.before {
		switch {
		case r.o.Resume != "":
			if filepath.Base(p) == filepath.Base(r.o.Resume)+".jsonl" {
				return p, n
			}
		case filepath.Dir(p) == filepath.Dir(filepath.Clean(path)):
			if fi, err := os.Stat(p); err == nil && fi.ModTime().After(newest) {
				src, size, newest = p, n, fi.ModTime()
			}
		}
	}
	return src, size
}

// stopTail stops the tailer and waits for it. It runs after the CLI has
// exited, so whatever the CLI wrote is in the file, and the tailer reads to
// the end once more when its context ends: no grace period is needed for the
// last lines to land.
func (r *runner) stopTail() {
	r.mu.Lock()
	r.tailClosed = true
	stop, done := r.tailStop, r.tailDone
	r.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

// onTranscript forwards a transcript line once, even when a truncation or
// replacement makes the tailer read it again.
func (r *runner) onTranscript(line []byte) {
	var head struct {
		Type string `json:"type"`
		UUID string `json:"uuid"`
	}
	if json.Unmarshal(line, &head) != nil || !json.Valid(line) {
		r.emit(wire.TypeMalformedLine, wire.MalformedLine{RunID: r.o.RunID, Source: "transcript", Raw: truncate(string(line), 4096)})
		return
	}
	if head.UUID != "" {
		r.mu.Lock()
		_, dup := r.seen[head.UUID]
		if !dup {
			if len(r.seen) > 200_000 {
				r.seen = map[string]struct{}{} // bound memory on endless sessions
			}
			r.seen[head.UUID] = struct{}{}
		}
		r.mu.Unlock()
		if dup {
			return
		}
	}
	if head.Type == "" {
		head.Type = "unknown"
	}
	r.mu.Lock()
	r.rows++
	before, after := r.usage.line(line)
	r.mu.Unlock()
	if before != nil {
		r.emitTurn(*before) // the turn before the prompt this line starts
	}
	r.enqueue("transcript."+head.Type, "terminal", append([]byte(nil), line...))
	if after != nil {
		r.emitTurn(*after) // the turn this line ends
	}
}

// emitTurn posts relay.turn_completed for a turn read from the transcript.
func (r *runner) emitTurn(e turnEnd) {
	conv := e.ConversationID
	if conv == "" {
		r.mu.Lock()
		conv = r.convID
		r.mu.Unlock()
	}
	tc := wire.TurnCompleted{Turn: e.Turn, Status: e.Status, By: e.By,
		Reason: e.Reason, Result: wire.Result{Stderr: e.Stderr}, ConversationID: conv, Usage: &e.Usage}
	if len(e.Models) > 0 {
		tc.Models = map[string]wire.ModelUsage{}
		for m, u := range e.Models {
			tc.Models[m] = wire.ModelUsage{Usage: u}
		}
	}
	r.spooled(wire.TypeTurnCompleted, r.rec.TurnEnded(r.o.InteractionID, tc))
}

// emit spools one of the relay's own events.
func (r *runner) emit(typ string, data any) {
	r.spooled(typ, r.rec.Post(r.o.InteractionID, typ, data))
}

// spooled logs an event the spool did not take.
func (r *runner) spooled(typ string, err error) {
	if err != nil {
		r.o.Logger.Warn("event not spooled", "type", typ, "err", err)
	}
}

func (r *runner) enqueue(typ, source string, data []byte) {
	if _, err := r.o.Events.Enqueue(forwarder.Event{SessionID: r.o.SessionID, InteractionID: r.o.InteractionID,
		Type: typ, Data: data, Source: source}); err != nil {
		r.o.Logger.Warn("event not spooled", "type", typ, "err", err)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// register records the run (Options.Registry). The CLI shares our process
// group (it owns the terminal), so the record names no group: a helper
// start that finds this helper dead stops the CLI and the processes marked
// with the run's token, never the group, which may hold whatever started us.
func (r *runner) register(cliPID int) {
	if r.o.Registry == nil {
		return
	}
	self, _ := proc.Lookup(os.Getpid())
	cli, _ := proc.Lookup(cliPID)
	rec := proc.Record{RunID: r.o.RunID, Token: r.token, Helper: self, CLI: cli, Started: time.Now(),
		Spool: proc.SpoolKey{SessionID: r.o.SessionID, InteractionID: r.o.InteractionID}}
	if err := r.o.Registry.Register(rec); err != nil {
		r.o.Logger.Warn("cannot record the run; a crash could leave it running", "run_id", r.o.RunID, "err", err)
	}
}

func (r *runner) unregister() {
	if r.o.Registry != nil {
		if err := r.o.Registry.Unregister(r.o.RunID); err != nil {
			r.o.Logger.Warn("cannot remove the run record", "run_id", r.o.RunID, "err", err)
		}
	}
}
