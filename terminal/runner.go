package terminal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/proc"
)

// Enqueuer takes events for the backend (forwarder.Forwarder).
type Enqueuer interface {
	Enqueue(forwarder.Event) (forwarder.Accepted, error)
}

// Options describe one visible-terminal run.
type Options struct {
	CLIPath       string
	Exe           string // this binary, for command hooks
	Prompt        string
	Cwd           string
	Model         string
	Resume        string
	Fork          bool
	Continue      bool
	Env           []string // the CLI's environment
	SessionID     string
	InteractionID string
	RunID         string
	Events        Enqueuer
	Logger        *slog.Logger
	Stdin         *os.File // the terminal; nil: os.Stdin
	Stdout        *os.File
	Stderr        *os.File
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
	r := &runner{o: o, res: &Result{}, seen: map[string]struct{}{}, before: transcriptSizes(o)}
	return r.run(ctx)
}

type runner struct {
	o   Options
	res *Result

	mu        sync.Mutex
	tailing   bool
	seen      map[string]struct{} // transcript uuids already sent
	tailStop  context.CancelFunc
	tailDone  chan struct{}
	convID    string
	hookCount int
	rows      int
	before    map[string]int64 // transcript sizes before a resumed or continued run
}

// transcriptSizes records, before a resumed or continued run starts, how long
// the transcripts it may append to already are: their lines were forwarded
// by the run that wrote them. Transcripts live in
// $HOME/.claude/projects/<cwd with / as ->/<conversation id>.jsonl.
func transcriptSizes(o Options) map[string]int64 {
	if o.Resume == "" && !o.Continue {
		return nil
	}
	home := ""
	for _, kv := range o.Env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	pattern := filepath.Join(home, ".claude", "projects", "*", "*.jsonl")
	if o.Resume != "" && !o.Continue {
		pattern = filepath.Join(home, ".claude", "projects", "*", filepath.Base(o.Resume)+".jsonl")
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
	settings, err := Settings(cb.URL(), r.o.Exe)
	if err != nil {
		cb.Close(context.Background())
		return nil, fmt.Errorf("hook settings: %w", err)
	}
	settingsPath := filepath.Join(tmp, "settings.json")
	if err := os.WriteFile(settingsPath, settings, 0o600); err != nil {
		cb.Close(context.Background())
		return nil, fmt.Errorf("write hook settings: %w", err)
	}
	r.emit("relay.run_started", "relay", map[string]any{"run_id": r.o.RunID, "mode": "terminal", "cwd": r.o.Cwd,
		"resume": r.o.Resume, "fork": r.o.Fork, "prompt": r.o.Prompt})

	started := time.Now()
	code, stopped, runErr := r.execCLI(ctx, settingsPath)
	elapsed := time.Since(started).Milliseconds()
	// SessionEnd may still be in flight: give hooks a moment, then stop.
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	cb.Close(sctx)
	cancel()
	r.stopTail()
	proc.KillNow(proc.Tree{RunID: r.o.RunID}) // tools the CLI left running

	r.mu.Lock()
	r.res.ExitCode, r.res.ConversationID, r.res.Hooks, r.res.TranscriptRows = code, r.convID, r.hookCount, r.rows
	r.mu.Unlock()
	data := map[string]any{"run_id": r.o.RunID, "mode": "terminal", "exit_code": code, "conversation_id": r.res.ConversationID,
		"result": map[string]any{"stdout": "", "stderr": "", "exitCode": code, "duration_ms": elapsed}}
	typ, status, reason := outcome(code, stopped, runErr)
	data["status"] = status
	if reason != "" {
		data["reason"] = reason
	}
	r.emit(typ, "relay", data)
	return r.res, runErr
}

// outcome names the lifecycle event that ends a run, its status and why.
// The backend derives the session's status from the event type alone, so
// a CLI that exits non-zero must be a relay.run_failed, not a completed run
// with a non-zero exit_code; a CLI we stopped (Run's ctx ended) was
// cancelled.
func outcome(code int, stopped bool, runErr error) (typ, status, reason string) {
	switch {
	case runErr != nil:
		return "relay.run_failed", "failed", runErr.Error()
	case stopped:
		return "relay.run_cancelled", "cancelled", fmt.Sprintf("stopped by claude-relay; the Claude CLI exited with status %d", code)
	case code != 0:
		return "relay.run_failed", "failed", fmt.Sprintf("the Claude CLI exited with status %d", code)
	}
	return "relay.run_completed", "completed", ""
}

// args builds the interactive CLI's arguments; user values as --flag=value.
func (r *runner) args(settingsPath string) []string {
	a := []string{"--settings=" + settingsPath}
	if r.o.Model != "" {
		a = append(a, "--model="+r.o.Model)
	}
	if r.o.Resume != "" {
		a = append(a, "--resume="+r.o.Resume)
		if r.o.Fork {
			a = append(a, "--fork-session")
		}
	}
	if r.o.Continue {
		a = append(a, "--continue")
	}
	if strings.TrimSpace(r.o.Prompt) != "" {
		a = append(a, "--", r.o.Prompt)
	}
	return a
}

// execCLI runs the CLI to its end and returns its exit status (128+N for
// signal N), and whether we stopped it because ctx ended.
func (r *runner) execCLI(ctx context.Context, settingsPath string) (code int, stopped bool, err error) {
	cmd := exec.Command(r.o.CLIPath, r.args(settingsPath)...)
	cmd.Dir = r.o.Cwd
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r.o.Stdin, r.o.Stdout, r.o.Stderr
	env := make([]string, 0, len(r.o.Env)+1)
	for _, kv := range r.o.Env {
		if !strings.HasPrefix(kv, "CLAUDECODE=") && !strings.HasPrefix(kv, proc.MarkerEnv+"=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, proc.MarkerEnvEntry(r.o.RunID))
	restore := saveTerminal(r.o.Stdin)
	defer restore()
	// Ctrl-C belongs to the CLI (the kernel sends it to the whole foreground
	// group); we only must not die of it. SIGTERM and SIGHUP are passed on.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 1, false, fmt.Errorf("start the Claude CLI %s: %w", r.o.CLIPath, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for {
		select {
		case err := <-exited:
			if err == nil {
				return 0, stopped, nil
			}
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					return 128 + int(ws.Signal()), stopped, nil
				}
				return ee.ExitCode(), stopped, nil
			}
			return 1, stopped, fmt.Errorf("wait for the Claude CLI: %w", err)
		case s := <-sigs:
			if s == syscall.SIGTERM || s == syscall.SIGHUP {
				cmd.Process.Signal(s) //nolint:errcheck // it may have just exited
			}
		case <-ctx.Done():
			cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck
			stopped = true
			ctx = context.Background()
			go func() {
				time.Sleep(5 * time.Second)
				cmd.Process.Kill() //nolint:errcheck // escalate if SIGTERM was ignored
			}()
		}
	}
}

// onHook forwards a hook input and starts tailing the transcript it names.
func (r *runner) onHook(event string, body []byte) {
	var in struct {
		SessionID      string `json:"session_id"`
		TranscriptPath string `json:"transcript_path"`
	}
	_ = json.Unmarshal(body, &in)
	r.mu.Lock()
	r.hookCount++
	if r.convID == "" && in.SessionID != "" {
		r.convID = in.SessionID
	}
	start := !r.tailing && in.TranscriptPath != ""
	if start {
		r.tailing = true
	}
	r.mu.Unlock()
	r.enqueue("hook."+event, "terminal", body)
	if start {
		r.startTail(in.TranscriptPath)
	}
}

func (r *runner) startTail(path string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	r.mu.Lock()
	r.tailStop, r.tailDone = cancel, done
	r.mu.Unlock()
	t := &Tailer{Path: path, OnLine: r.onTranscript, Logger: r.o.Logger, Skip: r.before[filepath.Clean(path)],
		OnSkip: func(prefix []byte, size int) {
			// Never silently: the backend hears that a line was too long.
			r.emit("relay.malformed_line", "relay", map[string]any{"run_id": r.o.RunID, "source": "transcript",
				"error": "transcript line over the limit", "bytes_at_least": size, "raw": truncate(string(prefix), 1024)})
		}}
	go func() {
		defer close(done)
		t.Run(ctx) //nolint:errcheck // returns at ctx end
	}()
}

func (r *runner) stopTail() {
	r.mu.Lock()
	stop, done := r.tailStop, r.tailDone
	r.mu.Unlock()
	if stop != nil {
		// Let the transcript's last lines land before the final read.
		time.Sleep(300 * time.Millisecond)
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
		r.emit("relay.malformed_line", "relay", map[string]any{"run_id": r.o.RunID, "source": "transcript", "raw": truncate(string(line), 4096)})
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
	r.mu.Unlock()
	r.enqueue("transcript."+head.Type, "terminal", append([]byte(nil), line...))
}

func (r *runner) emit(typ, source string, data any) {
	b, err := json.Marshal(data)
	if err == nil {
		r.enqueue(typ, source, b)
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
