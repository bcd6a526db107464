package localbackend

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/budget"
	"github.com/claude-relay/claude-relay/internal/logging"
	"github.com/claude-relay/claude-relay/internal/policy"
	"github.com/claude-relay/claude-relay/internal/proc"
	"github.com/claude-relay/claude-relay/internal/tokens"
	"github.com/claude-relay/claude-relay/internal/version"
)

// ChildCommand is the hidden command of ServerName that runs the embedded
// default for the helper that started it (RunChild).
const ChildCommand = "embedded-backend"

// Bounds on a child's stop: Close closes its stdin and waits childStopWait
// (the backend's own graceful shutdown takes up to 10 s), then SIGTERM,
// then SIGKILL after childKillWait.
const (
	childStopWait = 15 * time.Second
	childKillWait = 5 * time.Second
)

// maxReadyLine bounds the child's first stdout line.
const maxReadyLine = 64 << 10

// Child is an embedded default to start as a child process.
type Child struct {
	Path string // ServerName's path (ServerPath)
	// Dir is its working directory: the helper's, so that a relative
	// sqlite: path names the same file.
	Dir string
	// Env is its environment. It reads no configuration from it (the
	// options come on its stdin), so it needs no secret there.
	Env    []string
	Stderr io.Writer // where its log lines go: the helper's stderr
	// Options are what it serves, as StartEmbedded in this process would:
	// Tokens is asked again on each Conn.Reload, Logger says what goes
	// wrong with the child.
	Options Options
	// LogFormat, LogLevel and Secrets configure its logger like the
	// helper's; LogLevel and Secrets are asked again on each Conn.Reload.
	LogFormat string
	LogLevel  slog.Leveler
	Secrets   func() []string
}

// childSpec is what the helper writes to the child's stdin: Options as
// values, one JSON line at the start, and one again after each
// configuration reload, of which the child takes the serve tokens, the log
// level and the secrets to redact (what a reload changes in process too).
// Secrets travel here rather than in the child's environment, which other
// processes of the user may read.
type childSpec struct {
	DB                  string        `json:"db"`
	Token               string        `json:"token"`
	TokenFile           string        `json:"token_file,omitempty"`
	HelperToken         string        `json:"helper_token,omitempty"`
	ServeTokens         []childToken  `json:"serve_tokens,omitempty"`
	Issued              string        `json:"issued,omitempty"` // tokens.File's path
	NotifyURL           string        `json:"notify_url,omitempty"`
	AllowUncheckedLocal bool          `json:"allow_unchecked_local,omitempty"`
	PublicURL           string        `json:"public_url,omitempty"`
	MaxEventBytes       int64         `json:"max_event_bytes,omitempty"`
	MaxBatchBytes       int64         `json:"max_batch_bytes,omitempty"`
	MaxStreamsPerToken  int           `json:"max_streams_per_token,omitempty"`
	DataDir             string        `json:"data_dir,omitempty"`
	AllowedHosts        []string      `json:"allowed_hosts,omitempty"`
	NotifyIncludeInput  bool          `json:"notify_include_input,omitempty"`
	Budgets             []budget.Rule `json:"budgets,omitempty"`
	Policy              []policy.Rule `json:"policy,omitempty"`
	LogFormat           string        `json:"log_format,omitempty"`
	LogLevel            slog.Level    `json:"log_level"`
	Secrets             []string      `json:"secrets,omitempty"`
}

// childToken is a config.ServeToken with its value (Secret marshals as ***).
type childToken struct {
	Name   string         `json:"name,omitempty"`
	Token  string         `json:"token"`
	Scopes []tokens.Scope `json:"scopes,omitempty"`
}

// specOf is c's spec of the moment.
func specOf(c *Child) childSpec {
	o := c.Options
	s := childSpec{DB: o.DB, Token: o.Token.Reveal(), TokenFile: o.TokenFile, HelperToken: o.HelperToken.Reveal(),
		NotifyURL: o.NotifyURL, AllowUncheckedLocal: o.AllowUncheckedLocal, PublicURL: o.PublicURL,
		MaxEventBytes: o.MaxEventBytes, MaxBatchBytes: o.MaxBatchBytes, MaxStreamsPerToken: o.MaxStreamsPerToken,
		DataDir: o.DataDir, AllowedHosts: o.AllowedHosts, NotifyIncludeInput: o.NotifyIncludeInput, LogFormat: c.LogFormat,
		Budgets: o.Budgets, Policy: o.Policy}
	if o.Tokens != nil {
		for _, t := range o.Tokens() {
			s.ServeTokens = append(s.ServeTokens, childToken{Name: t.Name, Token: t.Token.Reveal(), Scopes: t.Scopes})
		}
	}
	if o.Issued != nil {
		s.Issued = o.Issued.Path()
	}
	if c.LogLevel != nil {
		s.LogLevel = c.LogLevel.Level()
	}
	if c.Secrets != nil {
		s.Secrets = c.Secrets()
	}
	return s
}

// serveTokens are the spec's serve tokens as the configuration has them.
func (s *childSpec) serveTokens() []config.ServeToken {
	out := make([]config.ServeToken, len(s.ServeTokens))
	for i, t := range s.ServeTokens {
		out[i] = config.ServeToken{Name: t.Name, Token: config.Secret(t.Token), Scopes: t.Scopes}
	}
	return out
}

// childReady is the child's one stdout line: where it listens, or why it
// does not.
type childReady struct {
	URL     string `json:"url,omitempty"`
	Version string `json:"version,omitempty"`
	Error   string `json:"error,omitempty"`
}

// StartChild starts the embedded default as a child process running
// ChildCommand, and returns once it listens, or failed to.
//
// The child lives as long as its stdin: Conn.Close closes it, and so does
// the kernel when the helper dies however it dies; on Linux the child also
// gets SIGTERM then (Pdeathsig). It has a process group of its own, so a
// Ctrl-C at the terminal stops the helper's run but not the backend the
// helper drains its spool to afterwards.
func StartChild(ctx context.Context, c Child) (*Conn, error) {
	log := c.Options.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// kill ends the child if Close's wait runs out: SIGTERM, then SIGKILL
	// after WaitDelay.
	killCtx, kill := context.WithCancel(context.Background())
	cmd := exec.CommandContext(killCtx, c.Path, ChildCommand)
	cmd.Dir, cmd.Env, cmd.Stderr = c.Dir, c.Env, c.Stderr
	cmd.SysProcAttr = proc.SysProcAttr()
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = childKillWait
	ready := &readyWriter{got: make(chan childReady, 1)}
	cmd.Stdout = ready // exec's copy goroutine writes it; Wait waits for it
	stdin, err := cmd.StdinPipe()
	if err != nil {
		kill()
		return nil, fmt.Errorf("embedded backend: %w", err)
	}
	if err := cmd.Start(); err != nil {
		kill()
		return nil, fmt.Errorf("embedded backend: start %s: %w", c.Path, err)
	}
	ch := &child{stdin: stdin, exited: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		if ch.up.Load() && !ch.closing.Load() {
			log.Error("the embedded backend stopped on its own; events wait in the spool until the next start of a helper, or `claude-relay serve`",
				"path", c.Path, "err", err)
		}
		ch.waitErr = err
		close(ch.exited)
	}()
	stop := sync.OnceFunc(func() {
		ch.closing.Store(true)
		ch.mu.Lock()
		ch.stdin.Close() // the child's cue to stop
		ch.mu.Unlock()
		t := time.NewTimer(childStopWait)
		defer t.Stop()
		select {
		case <-ch.exited:
		case <-t.C:
			log.Warn("the embedded backend did not stop within its time; ending it", "wait", childStopWait)
			kill()
			<-ch.exited
		}
		kill()
	})
	if err := ch.send(specOf(&c)); err != nil {
		stop()
		return nil, fmt.Errorf("embedded backend: handing %s its options: %w (%v)", c.Path, err, ch.waitErr)
	}
	select {
	case r := <-ready.got:
		if r.Error != "" || r.URL == "" {
			stop()
			return nil, &ChildError{Msg: cmp.Or(r.Error, "embedded backend: no address in its ready line")}
		}
		if r.Version != version.Version {
			log.Warn("claude-relay-server and claude-relay are of different versions; install them together",
				"path", c.Path, "server_version", r.Version, "version", version.Version)
		}
		ch.up.Store(true)
		conn := NewConn(r.URL, c.Options.Token, stop)
		conn.reload = func() {
			if err := ch.send(specOf(&c)); err != nil {
				log.Warn("cannot hand the embedded backend the reloaded configuration", "err", err)
			}
		}
		return conn, nil
	case <-ch.exited:
		stop()
		return nil, fmt.Errorf("embedded backend: %s exited before it listened (%v); its error is above", c.Path, ch.waitErr)
	case <-ctx.Done():
		stop()
		return nil, fmt.Errorf("embedded backend: %w", ctx.Err())
	}
}

// ChildError is what the child said went wrong, starting.
type ChildError struct{ Msg string }

func (e *ChildError) Error() string { return e.Msg }

// child is the helper's side of a started child.
type child struct {
	mu      sync.Mutex // serialises writes to stdin, and Close's close of it
	stdin   io.WriteCloser
	up      atomic.Bool // it said it listens: an exit is news from then on
	closing atomic.Bool
	exited  chan struct{}
	waitErr error // set before exited closes
}

// send writes one spec line, unless Close has begun.
func (ch *child) send(s childSpec) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.closing.Load() {
		return nil
	}
	_, err = ch.stdin.Write(append(b, '\n'))
	return err
}

// readyWriter takes the child's stdout: the first line is its ready line,
// anything after it is dropped (the child writes nothing more).
type readyWriter struct {
	buf  []byte
	done bool
	got  chan childReady
}

func (w *readyWriter) Write(p []byte) (int, error) {
	if w.done {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	line, _, found := bytes.Cut(w.buf, []byte("\n"))
	switch {
	case found:
		var r childReady
		if err := json.Unmarshal(line, &r); err != nil {
			r = childReady{Error: fmt.Sprintf("embedded backend: unreadable ready line %.200q: %v", line, err)}
		}
		w.finish(r)
	case len(w.buf) > maxReadyLine:
		w.finish(childReady{Error: fmt.Sprintf("embedded backend: no ready line in its first %d bytes", maxReadyLine)})
	}
	return len(p), nil
}

func (w *readyWriter) finish(r childReady) {
	w.done, w.buf = true, nil
	w.got <- r
}

// errSpec marks a child that could not read its options.
var errSpec = errors.New("embedded backend: reading the helper's options")

// RunChild is the child's side (ChildCommand): it reads the options from
// in, starts the backend with start, says where it listens on out, takes
// reloads from in until in ends (the helper closed it, or died) or ctx
// does, then stops the backend. A start that fails is said on out, where
// the helper reads it, and returned.
func RunChild(ctx context.Context, in io.Reader, out, stderr io.Writer, start func(context.Context, Options) (*Conn, error)) error {
	dec := json.NewDecoder(in)
	var spec childSpec
	if err := dec.Decode(&spec); err != nil {
		err = fmt.Errorf("%w: %w", errSpec, err)
		writeReady(out, childReady{Error: err.Error()})
		return err
	}
	var live atomic.Pointer[childSpec]
	live.Store(&spec)
	var level slog.LevelVar
	level.Set(spec.LogLevel)
	log := logging.New(stderr, spec.LogFormat, &level, func() []string { return live.Load().Secrets })
	o := Options{DB: spec.DB, Token: config.Secret(spec.Token), TokenFile: spec.TokenFile, HelperToken: config.Secret(spec.HelperToken),
		Tokens:    func() []config.ServeToken { return live.Load().serveTokens() },
		NotifyURL: spec.NotifyURL, AllowUncheckedLocal: spec.AllowUncheckedLocal, PublicURL: spec.PublicURL, Logger: log,
		MaxEventBytes: spec.MaxEventBytes, MaxBatchBytes: spec.MaxBatchBytes, MaxStreamsPerToken: spec.MaxStreamsPerToken,
		DataDir: spec.DataDir, AllowedHosts: spec.AllowedHosts, NotifyIncludeInput: spec.NotifyIncludeInput,
		Budgets: spec.Budgets, Policy: spec.Policy}
	if spec.Issued != "" {
		o.Issued = tokens.Open(spec.Issued)
	}
	conn, err := start(ctx, o)
	if err != nil {
		writeReady(out, childReady{Error: err.Error()})
		return err
	}
	defer conn.Close()
	writeReady(out, childReady{URL: conn.URL, Version: version.Version})

	// The reader ends with in; when ctx ends first, the process is about
	// to exit, which ends it.
	reloads := make(chan childSpec)
	done := make(chan struct{})
	defer close(done)
	go func() {
		defer close(reloads)
		for {
			var s childSpec
			if err := dec.Decode(&s); err != nil {
				return
			}
			select {
			case reloads <- s:
			case <-done:
				return
			}
		}
	}()
	for {
		select {
		case s, ok := <-reloads:
			if !ok {
				return nil
			}
			live.Store(&s)
			level.Set(s.LogLevel)
			log.Debug("embedded backend: configuration reloaded")
		case <-ctx.Done():
			return nil
		}
	}
}

func writeReady(out io.Writer, r childReady) {
	b, _ := json.Marshal(r)
	_, _ = out.Write(append(b, '\n'))
}
