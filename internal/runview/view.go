package runview

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	neturl "net/url"
	"strings"
	"sync"
	"time"

	"github.com/claude-relay/claude-relay/extension"
	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/relay"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/tooltitle"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// Options say where and how a run is shown.
type Options struct {
	Stdout, Stderr io.Writer
	Logger         *slog.Logger
	TTY            bool // Stdout is a terminal: a live view with a spinner
	JSON           bool // the extension protocol's events, one per line, instead
	Interactive    bool // -i: each turn's answer is shown when the turn ends
	// Approvals and PermissionMode are the run's: they say which tool
	// calls run without asking anyone.
	Approvals      bool
	PermissionMode streamjson.PermissionMode
	Dashboard      string      // the backend's dashboard, for links; "" none
	Core           *relay.Core // where answers to approvals go
	Embedded       bool        // the backend ends with this run
	ServeAddr      string      // where `claude-relay serve` will listen
	SpoolDir       string      // where undelivered events wait
	Ask            *Asker      // the terminal to ask on; nil: approvals are not asked here
}

// View shows a run: its protocol events with JSON, a live view on a
// terminal, plain lines otherwise. It is the run's relay.Sink.
type View struct {
	o     Options
	json  *extension.Writer
	done  chan int      // the run's exit status, once it ended
	turns chan struct{} // a live run's turn ended: it waits for the next message

	mu       sync.Mutex
	start    time.Time
	status   string
	outTok   int64
	spinning bool
	streamed bool // --partial printed this turn's answer as it came
	// midLine: --partial text ends the screen's last line, with no newline
	// yet; clear ends that line instead of erasing the text.
	midLine bool
	// lastError is the last error event's message, which a failed run's
	// end line does not repeat.
	lastError string
	stop      chan struct{}
	spinWG    sync.WaitGroup
}

// New returns the View of one run.
func New(o Options) *View {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Dashboard = strings.TrimRight(o.Dashboard, "/")
	o.TTY = o.TTY && !o.JSON
	v := &View{o: o, done: make(chan int, 1), turns: make(chan struct{}, 1),
		start: time.Now(), status: "starting", stop: make(chan struct{})}
	if o.JSON {
		v.json = extension.NewWriter(o.Stdout)
	}
	return v
}

// Done gives the run's exit status once it ended.
func (v *View) Done() <-chan int { return v.done }

// Turns ticks when a live run's turn ended and it waits for the next
// message.
func (v *View) Turns() <-chan struct{} { return v.turns }

// startSpinner starts the spinner on a terminal; stopSpinner stops it and
// waits for it.
func (v *View) StartSpinner() {
	if v.o.TTY {
		v.spinWG.Go(v.spin)
	}
}

func (v *View) StopSpinner() {
	v.mu.Lock()
	select {
	case <-v.stop:
	default:
		close(v.stop)
	}
	v.mu.Unlock()
	v.spinWG.Wait()
}

// Event implements relay.Sink: each run event becomes its protocol events,
// shown as they come.
func (v *View) Event(e relay.Event) {
	if e.Kind == relay.KindApprovalCancelled && v.o.Ask != nil {
		// Decided elsewhere (the dashboard) or timed out: the question on
		// the terminal ends, saying so.
		v.o.Ask.interrupt(e.Approval.ID, goneLine(e.Decided, e.Reason))
	}
	for _, ev := range extension.EventsOf(e) {
		v.handle(ev)
	}
}

func (v *View) handle(ev extension.Event) {
	if v.json != nil {
		v.EmitJSON(ev)
	}
	switch ev.Event {
	case extension.EventRunCompleted, extension.EventRunFailed, extension.EventRunCancelled:
		code := ev.Result.ExitCode
		if ev.Event == extension.EventRunCancelled {
			code = ExitCancelled
		}
		if v.json == nil {
			v.final(ev)
		}
		v.done <- code
		return
	case extension.EventTurnCompleted:
		if v.json == nil {
			v.turnEnd(ev)
		}
		v.turns <- struct{}{}
		return
	case extension.EventApprovalRequested:
		v.approve(ev)
	case extension.EventPartial:
		if v.json == nil {
			v.partialText(ev.Payload)
		}
		return
	}
	if v.json == nil {
		v.render(ev)
	}
}

func (v *View) EmitJSON(ev extension.Event) {
	if err := v.json.Emit(ev); err != nil {
		v.o.Logger.Debug("stdout closed", "err", err)
	}
}

// partialText prints a text delta as it comes (--partial).
func (v *View) partialText(payload json.RawMessage) {
	var se struct {
		Event struct {
			Type  string `json:"type"`
			Delta struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"delta"`
		} `json:"event"`
	}
	if json.Unmarshal(payload, &se) != nil || se.Event.Type != "content_block_delta" || se.Event.Delta.Type != "text_delta" {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.midLine {
		v.clear()
		fmt.Fprint(v.o.Stdout, "\n")
	}
	v.streamed, v.midLine, v.spinning = true, true, false
	fmt.Fprint(v.o.Stdout, se.Event.Delta.Text)
}

// answer prints a turn's answer, unless --partial already did; callers
// have cleared, which ended a streamed answer's line.
func (v *View) answer(text string) {
	if v.streamed {
		fmt.Fprint(v.o.Stdout, "\n")
		v.streamed = false
		return
	}
	if text != "" {
		fmt.Fprintf(v.o.Stdout, "\n%s\n\n", text)
	}
}

// turnEnd shows a live run's turn: its answer and figures; the > prompt
// follows.
func (v *View) turnEnd(ev extension.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.spinning = false
	v.clear()
	v.answer(ev.Result.Stdout)
	switch ev.Status {
	case wire.StatusInterrupted:
		fmt.Fprintf(v.o.Stdout, "turn interrupted: %s\n", firstNonBlank(ev.Reason, "stopped"))
	case wire.StatusFailed:
		fmt.Fprintf(v.o.Stdout, "turn failed: %s\n", firstLine(firstNonBlank(ev.Reason, ev.Result.Stderr)))
	}
	fmt.Fprintln(v.o.Stdout, figures(ev))
}

// forwarderError shows a delivery problem (a refused token, a dead
// letter) as it happens.
func (v *View) ForwarderError(e forwarder.Error) {
	ev := extension.ForwarderErrorEvent(e)
	if v.json != nil {
		v.EmitJSON(ev)
		return
	}
	v.render(ev)
}

// shutdown says what the drain left behind: the shutdown event with
// --json, one sentence on stderr otherwise (CONTRACT §3).
func (v *View) Shutdown(drainErr error, st forwarder.Stats) {
	ev := extension.ShutdownEvent("run ended", drainErr, st)
	if v.json != nil {
		v.EmitJSON(ev)
	}
	if ev.Message != "" {
		fmt.Fprintln(v.o.Stderr, "claude-relay:", v.leftover(ev))
	}
}

func (v *View) render(ev extension.Event) {
	switch ev.Event {
	case extension.EventRunStarted:
		where := ""
		if v.o.Dashboard != "" {
			where = " · events: " + sessionLink(v.o.Dashboard, ev.SessionID)
		}
		v.Line(fmt.Sprintf("run %s started in %s%s", short(ev.RunID), ev.Cwd, where))
		switch {
		case v.o.Approvals:
		case v.o.PermissionMode == streamjson.PermissionModePlan:
			v.Line("plan mode: nothing changes until you approve the plan; then tools run without asking (--approvals asks first)")
		default:
			v.Line("tools run without asking (auto-allowed); --approvals asks first")
		}
	case extension.EventStream:
		msg, err := streamjson.Decode(ev.Payload)
		if err != nil {
			return
		}
		switch {
		case msg.Assistant != nil:
			v.mu.Lock()
			v.outTok += msg.Assistant.Message.Usage.OutputTokens
			v.mu.Unlock()
			for _, tu := range msg.Assistant.ToolUses() {
				title, _ := tooltitle.Of(tu.Name, tu.Input)
				v.SetStatus(title)
				mark := ""
				if v.autoAllows(tu.Name) {
					mark = "  (auto-allowed)"
				}
				v.Line(indent("● ", "  ", tooltitle.Full(tu.Name, tu.Input)) + mark)
			}
			if msg.Assistant.Text() != "" {
				v.SetStatus("writing")
			}
		case msg.User != nil:
			for _, tr := range msg.User.ToolResults() {
				if out := toolOutput(tr, toolOutputLines); out != "" {
					v.Line(out)
				}
			}
		case msg.System != nil && msg.System.Subtype == "api_retry":
			v.Line(apiRetry(ev.Payload))
		}
	case extension.EventLimitNotice:
		v.Line("! limit: " + ev.Message)
	case extension.EventError:
		v.Line(fmt.Sprintf("! %s: %s", ev.Code, ev.Message))
		v.mu.Lock()
		v.lastError = ev.Message
		v.mu.Unlock()
	}
}

// toolOutputLines is how many lines of a tool's output the live view shows.
const toolOutputLines = 4

// toolOutput is a tool result as the live view shows it: its first lines,
// indented under the call, and how many more there are.
func toolOutput(tr streamjson.ToolResult, max int) string {
	c := tr.Parse()
	text := strings.TrimRight(c.Text, "\n")
	switch c.Kind {
	case streamjson.ToolResultImage:
		text = "[image " + c.Image.MediaType + "]"
	case streamjson.ToolResultMixed:
		text = fmt.Sprintf("[%d blocks of text and images]", len(c.Blocks))
	}
	if strings.TrimSpace(text) == "" {
		return ""
	}
	lines := strings.Split(text, "\n")
	var b strings.Builder
	bar := "  │ "
	if tr.IsError {
		bar = "  ✗ "
	}
	for i, l := range lines {
		if i == max {
			n := len(lines) - max
			fmt.Fprintf(&b, "%s… %d more %s\n", bar, n, Inflect(n, "line", "lines"))
			break
		}
		b.WriteString(bar + l + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// apiRetry renders the CLI's api_retry system line.
func apiRetry(payload []byte) string {
	var r struct {
		Attempt     int             `json:"attempt"`
		MaxRetries  int             `json:"max_retries"`
		DelayMS     int64           `json:"retry_delay_ms"`
		ErrorStatus *int            `json:"error_status"`
		Error       json.RawMessage `json:"error"`
	}
	_ = json.Unmarshal(payload, &r)
	why := "API error"
	if r.ErrorStatus != nil {
		why = fmt.Sprintf("API error %d", *r.ErrorStatus)
	}
	var msg string
	if json.Unmarshal(r.Error, &msg) == nil && msg != "" {
		why += " (" + msg + ")"
	}
	delay := (time.Duration(r.DelayMS) * time.Millisecond).Round(100 * time.Millisecond)
	return fmt.Sprintf("↻ %s: retrying in %s, attempt %d of %d", why, delay, r.Attempt, r.MaxRetries)
}

// indent prefixes the first line of s with first and every other line
// with rest, so a multi-line command stays readable and whole.
func indent(first, rest, s string) string {
	return first + strings.ReplaceAll(s, "\n", "\n"+rest)
}

// Inflect is one or many by n: "1 event", "2 events" (doctor and the spool
// commands say counts the same way).
func Inflect[N int64OrInt](n N, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// int64OrInt lets Inflect take token counts and line counts alike.
type int64OrInt interface{ ~int | ~int64 }

func (v *View) final(ev extension.Event) {
	// Under mu: the spinner and the backend probe print too.
	v.mu.Lock()
	defer v.mu.Unlock()
	v.spinning = false
	v.clear()
	out := v.o.Stdout
	if !v.o.Interactive { // -i showed each turn's answer already
		v.answer(ev.Result.Stdout)
	}
	switch ev.Event {
	case extension.EventRunFailed:
		if why := firstLine(ev.Result.Stderr); why != "" && why != firstLine(v.lastError) {
			fmt.Fprintf(out, "run failed (exit %d): %s\n", ev.Result.ExitCode, why)
		} else {
			fmt.Fprintf(out, "run failed (exit %d)\n", ev.Result.ExitCode) // the error line above said why
		}
	case extension.EventRunCancelled:
		if ev.Reason != "" {
			fmt.Fprintf(out, "run cancelled: %s\n", ev.Reason)
		} else {
			fmt.Fprintln(out, "run cancelled")
		}
	}
	fmt.Fprintln(out, figures(ev))
	// A run that failed before the model answered anything left nothing to
	// resume (a refused login, an unknown --resume).
	nothing := ev.Event == extension.EventRunFailed && (ev.Usage == nil || ev.Usage.InputTokens+ev.Usage.OutputTokens == 0)
	if ev.ConversationID != "" && !nothing {
		fmt.Fprintf(out, "conversation %s\nresume: claude-relay run --session %s --resume %s 'next prompt'\n",
			ev.ConversationID, ev.SessionID, ev.ConversationID)
	}
	// The embedded backend ends with this run; serve shows the same data.
	if line := EventsLine(v.o.Dashboard, v.o.Embedded, v.o.ServeAddr, ev.SessionID); line != "" {
		fmt.Fprintln(out, line)
	}
}

// ExitCancelled is a cancelled run's exit status (seed 002).
const ExitCancelled = 130

// EventsLine says where a session's events can be seen once its run ended,
// in the same words for `run` and `terminal`: the embedded default stops
// with the command, so it names serve and the address serve will listen on
// (serveAddr); "" when the backend has no dashboard we know of (a
// configured backend.url).
func EventsLine(dashboard string, embedded bool, serveAddr, session string) string {
	page := "/sessions/" + neturl.PathEscape(session)
	switch {
	case embedded:
		return "events stored; see them with: claude-relay serve, then open http://" + serveAddr + page
	case dashboard != "":
		return "events: " + dashboard + page
	}
	return ""
}

// sessionLink is a session's page on the dashboard at base, the ID escaped
// so that any session ID makes a link that opens it (as eventsLine does).
func sessionLink(base, session string) string {
	return base + "/sessions/" + neturl.PathEscape(session)
}

// autoAllows reports whether a tool call runs without asking anyone: not
// with --approvals, not in plan mode, never a plan or a question.
func (v *View) autoAllows(tool string) bool {
	return !v.o.Approvals && v.o.PermissionMode != streamjson.PermissionModePlan &&
		tool != "ExitPlanMode" && tool != "AskUserQuestion"
}

// approve answers an approval request on the terminal. runRun refuses
// --approvals without a terminal, but plans and questions ask whatever
// --approvals says: without a terminal they are sent back, never approved.
func (v *View) approve(ev extension.Event) {
	if ev.Approver == "dashboard" {
		// The central policy lets only the dashboard decide: say so and
		// wait; the run goes on when the dashboard answers.
		v.Line(dashboardOnlyLine(ev))
		return
	}
	answer := func(rep relay.Reply) {
		rep.By = wire.ByTTY
		// A gone approval (cancelled, timed out) needs no answer.
		_ = v.o.Core.Answer(ev.RunID, ev.ApprovalID, rep)
	}
	if v.o.Ask == nil {
		const why = "nobody can answer here: claude-relay run has no terminal to ask on"
		what := map[wire.Kind]string{wire.ApprovalPlan: "the plan", wire.ApprovalQuestion: "the model's question"}[ev.Kind]
		v.Line(fmt.Sprintf("%s was not approved: this run has no terminal to ask on (run it in a terminal, or answer through `claude-relay extension`)",
			firstNonBlank(what, ev.ToolName)))
		if ev.Kind == wire.ApprovalPlan {
			answer(relay.Reply{Decision: wire.DecisionKeepPlanning, Reason: why})
		} else {
			answer(relay.Reply{Decision: wire.DecisionDeny, Reason: why})
		}
		return
	}
	v.mu.Lock()
	v.spinning = false
	v.clear()
	v.mu.Unlock()
	// Ask on a goroutine: events (a cancel, the approval's own timeout, a
	// decision in the dashboard) must keep flowing while the question
	// waits; they end it (interrupt). An answer that came a moment too late
	// says who won.
	v.o.Ask.expect(ev.ApprovalID)
	go func() {
		rep, ok := v.o.Ask.decide(ev)
		if !ok {
			return
		}
		rep.By = wire.ByTTY
		var lost *relay.DecidedError
		if err := v.o.Core.Answer(ev.RunID, ev.ApprovalID, rep); errors.As(err, &lost) {
			v.o.Ask.say(goneLine(&lost.Decided, ""))
		}
	}()
}

// goneLine ends the terminal's question about an approval that another
// side decided, or that timed out: "decided in the dashboard: allow".
func goneLine(d *relay.Decided, reason string) string {
	if d == nil {
		return firstNonBlank(reason, "no longer pending")
	}
	switch d.By {
	case wire.ByDashboard:
		// Who there is in the backend's record; here, where matters.
		return "decided in the dashboard: " + string(d.Decision)
	case wire.ByTimeout, wire.ByCancelled:
		return firstNonBlank(reason, d.String())
	}
	return "decided by " + d.Who() + ": " + string(d.Decision)
}

// diffLines is how much of a file change the approval question shows.
const diffLines = 12

// approvalQuestion shows what will run in full (the command, path or URL;
// the model's description after it), a short diff for file changes, then
// asks.
func approvalQuestion(ev extension.Event) string {
	title := ev.Title
	if title == "" {
		title = tooltitle.Full(ev.ToolName, ev.Input)
	}
	var b strings.Builder
	b.WriteString(indent("? ", "  ", title) + "\n")
	if d := tooltitle.Diff(ev.ToolName, ev.Input, diffLines); d != "" {
		b.WriteString(indent("  ", "  ", d) + "\n")
	}
	return b.String()
}

// figures is a run's or turn's duration, tokens and cost on one line.
func figures(ev extension.Event) string {
	f := []string{(time.Duration(ev.Result.DurationMS) * time.Millisecond).Round(100 * time.Millisecond).String()}
	if ev.Usage != nil {
		f = append(f, fmt.Sprintf("%d %s in, %d out", ev.Usage.InputTokens, Inflect(ev.Usage.InputTokens, "token", "tokens"), ev.Usage.OutputTokens))
	}
	if ev.TotalCostUSD != nil {
		f = append(f, fmt.Sprintf("$%.4f", *ev.TotalCostUSD))
	}
	return strings.Join(f, " · ")
}

// leftover says in one sentence what the drain deadline left in the spool.
func (v *View) leftover(ev extension.Event) string {
	f := ev.Forwarder
	if f == nil || f.Pending == 0 {
		return ev.Message
	}
	why := ""
	if f.LastError != "" {
		why = " (last error: " + f.LastError + ")"
	}
	return fmt.Sprintf("the backend has not taken %d %s yet%s; they wait in %s, and `claude-relay spool flush` or the next run delivers them",
		f.Pending, Inflect(f.Pending, "event", "events"), why, v.o.SpoolDir)
}

func (v *View) SetStatus(s string) {
	v.mu.Lock()
	v.status = s
	v.spinning = true
	v.mu.Unlock()
}

// line prints a lasting line above the spinner.
func (v *View) Line(s string) {
	if v.o.JSON {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.clear()
	fmt.Fprintln(v.o.Stdout, s)
}

// clear erases the spinner's line, or ends a line of streamed text, which
// must stay; callers hold mu.
func (v *View) clear() {
	switch {
	case v.midLine:
		fmt.Fprint(v.o.Stdout, "\n")
		v.midLine = false
	case v.o.TTY:
		fmt.Fprint(v.o.Stdout, "\r\x1b[2K")
	}
}

var frames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func (v *View) spin() {
	t := time.NewTicker(120 * time.Millisecond)
	defer t.Stop()
	v.SetStatus("thinking")
	for i := 0; ; i++ {
		select {
		case <-v.stop:
			return
		case <-t.C:
		}
		v.mu.Lock()
		if v.spinning && !v.midLine { // drawing would erase the streamed text
			fmt.Fprintf(v.o.Stdout, "\r\x1b[2K%s %s · %s · %d %s out", frames[i%len(frames)],
				time.Since(v.start).Round(100*time.Millisecond), v.status, v.outTok, Inflect(v.outTok, "token", "tokens"))
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

// dashboardOnlyLine tells the terminal that an approval waits for the
// dashboard (serve.policy's approver: dashboard).
func dashboardOnlyLine(ev extension.Event) string {
	line := fmt.Sprintf("%s waits for the dashboard: the central policy (rule %s) lets only an approve-scope token there decide",
		firstNonBlank(ev.Title, ev.ToolName), ev.PolicyRule)
	if ev.PolicyReason != "" {
		line += " (" + ev.PolicyReason + ")"
	}
	return line
}
