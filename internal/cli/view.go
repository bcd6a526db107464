package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/claude-relay/claude-relay/extension"
	"github.com/claude-relay/claude-relay/internal/ndjson"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/tooltitle"
)

// view renders a run's events: the events themselves with --json, a live
// view on a terminal, plain lines otherwise.
type view struct {
	a         *App
	o         runOptions
	dashboard string
	embedded  bool   // the backend ends with this run
	serveAddr string // where `claude-relay serve` will listen
	session   string
	runID     string
	cmds      *commandWriter
	tty       bool

	mu       sync.Mutex
	start    time.Time
	status   string
	outTok   int64
	spinning bool
	stop     chan struct{}
}

func newView(a *App, o runOptions, dashboard, session string, cmds *commandWriter) *view {
	return &view{a: a, o: o, dashboard: dashboard, session: session, cmds: cmds,
		tty: !o.json && isTerminal(a.Stdout), start: time.Now(), status: "starting", stop: make(chan struct{})}
}

// consume reads events until the server's shutdown event and returns the
// exit status of the run.
func (v *view) consume(r io.Reader) int {
	code := 1
	lr := ndjson.NewReader(r, 0)
	if v.tty {
		go v.spin()
		defer close(v.stop)
	}
	for {
		line, err := lr.Next()
		if line == nil && err != nil {
			return code
		}
		var ev extension.Event
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		if v.o.json {
			fmt.Fprintf(v.a.Stdout, "%s\n", line)
		}
		switch ev.Event {
		case extension.EventRunCompleted, extension.EventRunFailed, extension.EventRunCancelled:
			code = ev.Result.ExitCode
			if ev.Event == extension.EventRunCancelled {
				code = 130
			}
			if !v.o.json {
				v.final(ev)
			}
		case extension.EventShutdown:
			if ev.Message != "" {
				// Events the drain deadline left behind: say so (CONTRACT §3).
				fmt.Fprintln(v.a.Stderr, "claude-relay:", ev.Message+"; `claude-relay spool flush` delivers them")
			}
			return code
		case extension.EventError:
			if ev.RequestID != "" && ev.RunID == "" && ev.RequestID == v.runID {
				// The prompt itself was refused: no run, so no run event comes.
				fmt.Fprintln(v.a.Stderr, "claude-relay:", ev.Message)
				v.cmds.send(extension.Command{Action: extension.ActionShutdown})
				code = exitUsage
				continue
			}
		case extension.EventApprovalRequested:
			v.approve(ev)
		}
		if !v.o.json {
			v.render(ev)
		}
	}
}

func (v *view) render(ev extension.Event) {
	switch ev.Event {
	case extension.EventRunStarted:
		where := ""
		if v.dashboard != "" {
			where = " · events: " + v.dashboard + "/sessions/" + ev.SessionID
		}
		v.line(fmt.Sprintf("run %s started in %s%s", short(ev.RunID), ev.Cwd, where))
	case extension.EventStream:
		msg, err := streamjson.Decode(ev.Payload)
		if err != nil {
			return
		}
		if msg.Assistant != nil {
			v.mu.Lock()
			v.outTok += msg.Assistant.Message.Usage.OutputTokens
			v.mu.Unlock()
			for _, tu := range msg.Assistant.ToolUses() {
				title, _ := tooltitle.Of(tu.Name, tu.Input)
				v.setStatus(title)
				v.line("● " + title)
			}
			if msg.Assistant.Text() != "" {
				v.setStatus("writing")
			}
		}
	case extension.EventLimitNotice:
		v.line("! limit: " + ev.Message)
	case extension.EventError:
		v.line(fmt.Sprintf("! %s: %s", ev.Code, ev.Message))
	}
}

func (v *view) final(ev extension.Event) {
	v.mu.Lock()
	v.spinning = false
	v.mu.Unlock()
	v.clear()
	out := v.a.Stdout
	if ev.Result.Stdout != "" {
		fmt.Fprintf(out, "\n%s\n\n", ev.Result.Stdout)
	}
	switch ev.Event {
	case extension.EventRunFailed:
		fmt.Fprintf(out, "run failed (exit %d): %s\n", ev.Result.ExitCode, firstLine(ev.Result.Stderr))
	case extension.EventRunCancelled:
		fmt.Fprintln(out, "run cancelled")
	}
	var figures []string
	figures = append(figures, (time.Duration(ev.Result.DurationMS) * time.Millisecond).Round(100*time.Millisecond).String())
	if ev.Usage != nil {
		figures = append(figures, fmt.Sprintf("%d tokens in, %d out", ev.Usage.InputTokens, ev.Usage.OutputTokens))
	}
	if ev.TotalCostUSD != nil {
		figures = append(figures, fmt.Sprintf("$%.4f", *ev.TotalCostUSD))
	}
	fmt.Fprintln(out, strings.Join(figures, " · "))
	if ev.ConversationID != "" {
		fmt.Fprintf(out, "conversation %s\nresume: claude-relay run --resume %s 'next prompt'\n", ev.ConversationID, ev.ConversationID)
	}
	switch {
	case v.embedded:
		// The embedded backend ends with this run; serve shows the same data.
		fmt.Fprintf(out, "events stored; see them with: claude-relay serve, then open http://%s/sessions/%s\n", v.serveAddr, ev.SessionID)
	case v.dashboard != "":
		fmt.Fprintf(out, "events: %s/sessions/%s\n", v.dashboard, ev.SessionID)
	}
}

// approve answers an approval request: y/n on a terminal, else deny (a
// non-interactive run cannot be asked).
func (v *view) approve(ev extension.Event) {
	title, _ := tooltitle.Of(ev.ToolName, ev.Input)
	answer := func(allow bool) {
		d := "deny"
		if allow {
			d = "allow"
		}
		v.cmds.send(extension.Command{Action: extension.ActionApprove, RunID: ev.RunID, ApprovalID: ev.ApprovalID, Decision: d,
			Reason: "denied at the claude-relay run prompt"})
	}
	if !v.tty && !isTerminal(v.a.Stdin) {
		answer(false) // nobody to ask
		return
	}
	v.mu.Lock()
	v.spinning = false
	v.mu.Unlock()
	v.clear()
	// Ask on a goroutine: events (a cancel, the approval's own timeout) must
	// keep flowing while the question waits. Its answer to a gone approval
	// is an unknown_approval error, which is harmless.
	go answer(askTTY(fmt.Sprintf("Allow %s (%s)? [y/N] ", ev.ToolName, title)))
}

func (v *view) setStatus(s string) {
	v.mu.Lock()
	v.status = s
	v.spinning = true
	v.mu.Unlock()
}

// line prints a lasting line above the spinner.
func (v *view) line(s string) {
	if v.o.json {
		return
	}
	v.clear()
	fmt.Fprintln(v.a.Stdout, s)
}

func (v *view) clear() {
	if v.tty {
		fmt.Fprint(v.a.Stdout, "\r\x1b[2K")
	}
}

var frames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func (v *view) spin() {
	t := time.NewTicker(120 * time.Millisecond)
	defer t.Stop()
	v.setStatus("thinking")
	for i := 0; ; i++ {
		select {
		case <-v.stop:
			return
		case <-t.C:
		}
		v.mu.Lock()
		if v.spinning {
			fmt.Fprintf(v.a.Stdout, "\r\x1b[2K%s %s · %s · %d tokens out", frames[i%len(frames)],
				time.Since(v.start).Round(100*time.Millisecond), v.status, v.outTok)
		}
		v.mu.Unlock()
	}
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
