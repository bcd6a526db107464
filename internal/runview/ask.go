package runview

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/claude-relay/claude-relay/extension"
	"github.com/claude-relay/claude-relay/internal/relay"
	"github.com/claude-relay/claude-relay/internal/tooltitle"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// Asker asks questions on the controlling terminal, which works even
// when stdin carries the prompt and stdout is piped. One approval is asked
// at a time. A question whose approval is decided elsewhere meanwhile (the
// dashboard, the timeout) ends at once, saying so: interrupt cuts the read
// short with a read deadline, which the terminal's file supports (it is
// pollable); where it does not, the answer typed next is dropped instead.
type Asker struct {
	mu sync.Mutex // one dialogue at a time
	f  *os.File
	r  *bufio.Reader

	imu    sync.Mutex
	asking string            // the approval whose dialogue is on the terminal
	gone   map[string]string // approvals expected or asked → why they went ("" while pending)
}

func OpenTTY() (*Asker, error) {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	return &Asker{f: f, r: bufio.NewReader(f), gone: map[string]string{}}, nil
}

// expect notes an approval that decide will ask about, so that an
// interrupt that comes before its turn is kept.
func (t *Asker) expect(approvalID string) {
	t.imu.Lock()
	defer t.imu.Unlock()
	t.gone[approvalID] = ""
}

// interrupt ends the dialogue about approvalID, now or when its turn
// comes, with the line why.
func (t *Asker) interrupt(approvalID, why string) {
	t.imu.Lock()
	defer t.imu.Unlock()
	if _, ok := t.gone[approvalID]; !ok {
		return // answered here, or never asked
	}
	t.gone[approvalID] = why
	if t.asking == approvalID {
		_ = t.f.SetReadDeadline(time.Now()) // no deadlines: the answer typed next is dropped (end)
	}
}

// errGone: the approval being asked about was decided elsewhere.
var errGone = errors.New("the approval is no longer pending")

// interrupted reports whether the approval being asked about went.
func (t *Asker) interrupted() bool {
	t.imu.Lock()
	defer t.imu.Unlock()
	return t.asking != "" && t.gone[t.asking] != ""
}

// begin starts the dialogue about approvalID; it returns why when the
// approval went before its turn.
func (t *Asker) begin(approvalID string) string {
	t.imu.Lock()
	defer t.imu.Unlock()
	_ = t.f.SetReadDeadline(time.Time{}) // an earlier interrupt's is spent
	if why := t.gone[approvalID]; why != "" {
		delete(t.gone, approvalID)
		return why
	}
	t.asking = approvalID
	return ""
}

// end finishes the dialogue begin started: why, if the approval went
// meanwhile.
func (t *Asker) end(approvalID string) string {
	t.imu.Lock()
	defer t.imu.Unlock()
	why := t.gone[approvalID]
	delete(t.gone, approvalID)
	t.asking = ""
	return why
}

// say prints a line on the terminal between dialogues.
func (t *Asker) say(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintln(t.f, s)
}

// line prints prompt and returns the answer's line, trimmed; io.EOF when
// the terminal is gone.
func (t *Asker) line(prompt string) (string, error) {
	if t.interrupted() {
		return "", errGone // no new prompt for a question that is moot
	}
	fmt.Fprint(t.f, prompt)
	line, err := t.r.ReadString('\n')
	if err != nil && line == "" {
		return "", err
	}
	return strings.TrimSpace(line), nil
}

// ask is line, lower-case; "" when the terminal is gone.
func (t *Asker) ask(prompt string) string {
	s, _ := t.line(prompt)
	return strings.ToLower(s)
}

func (t *Asker) Close() error { return t.f.Close() }

// decide holds the dialogue for one approval on the terminal and returns the
// reply: a tool offers [y]es / [a]lways / [e]dit / [n]o, a plan its three
// options, a question each of its questions. ok is false when the approval
// went (interrupt) before an answer: the dialogue ends with why.
func (t *Asker) decide(ev extension.Event) (rep relay.Reply, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if why := t.begin(ev.ApprovalID); why != "" {
		fmt.Fprint(t.f, indent("? ", "  ", firstNonBlank(ev.Title, ev.ToolName))+"\n"+why+"\n")
		return relay.Reply{}, false
	}
	switch ev.Kind {
	case wire.ApprovalPlan:
		rep = t.plan(ev)
	case wire.ApprovalQuestion:
		rep = t.questions(ev)
	default:
		rep = t.tool(ev)
	}
	if why := t.end(ev.ApprovalID); why != "" {
		// The cut-short read left the cursor after the question.
		fmt.Fprint(t.f, "\n"+why+"\n")
		return relay.Reply{}, false
	}
	return rep, true
}

func (t *Asker) tool(ev extension.Event) relay.Reply {
	fmt.Fprint(t.f, approvalQuestion(ev))
	for {
		switch t.ask(fmt.Sprintf("Allow %s? [y]es / [a]lways / [e]dit / [n]o ", ev.ToolName)) {
		case "y", "yes":
			return relay.Reply{Decision: wire.DecisionAllow}
		case "a", "always":
			return relay.Reply{Decision: wire.DecisionAllowAlways}
		case "e", "edit":
			input, err := editInput(t.f, ev.Input)
			if err != nil {
				fmt.Fprintf(t.f, "  %v\n", err)
				continue
			}
			fmt.Fprint(t.f, indent("  will run: ", "  ", tooltitle.Full(ev.ToolName, input))+"\n")
			return relay.Reply{Decision: wire.DecisionAllow, UpdatedInput: input}
		case "n", "no", "":
			return relay.Reply{Decision: wire.DecisionDeny, Reason: "denied at the claude-relay run prompt"}
		default:
			fmt.Fprintln(t.f, "  answer y, a, e or n")
		}
	}
}

func (t *Asker) plan(ev extension.Event) relay.Reply {
	fmt.Fprint(t.f, indent("? ", "  ", ev.Title)+"\n")
	for {
		switch t.ask("Approve the plan? [a]ccept edits / [d]efault: ask before each edit / [k]eep planning ") {
		case "a", "accept", "accept edits":
			return relay.Reply{Decision: wire.DecisionAcceptEdits}
		case "d", "default":
			return relay.Reply{Decision: wire.DecisionDefault}
		case "k", "keep", "keep planning", "":
			why, _ := t.line("What should change? ")
			return relay.Reply{Decision: wire.DecisionKeepPlanning, Reason: orDefault(why, "keep planning")}
		default:
			fmt.Fprintln(t.f, "  answer a, d or k")
		}
	}
}

// questions asks each question with its options numbered; an answer is a
// number, several (comma-separated) where the question allows, or the
// user's own words.
func (t *Asker) questions(ev extension.Event) relay.Reply {
	qs := wire.Questions(ev.Questions)
	if len(qs) == 0 {
		return relay.Reply{Decision: wire.DecisionDeny, Reason: "the question could not be shown"}
	}
	answers := map[string]string{}
	for _, q := range qs {
		fmt.Fprintf(t.f, "? %s\n", q.Question)
		for i, o := range q.Options {
			fmt.Fprintf(t.f, "  %d. %s", i+1, o.Label)
			if o.Description != "" {
				fmt.Fprintf(t.f, " — %s", o.Description)
			}
			fmt.Fprintln(t.f)
		}
		prompt := "Answer (a number, or your own words; empty to skip the questions) "
		if q.MultiSelect {
			prompt = "Answer (numbers separated by commas, or your own words; empty to skip the questions) "
		}
		s, err := t.line(prompt)
		if err != nil || s == "" {
			return relay.Reply{Decision: wire.DecisionDeny, Reason: "the user skipped the question"}
		}
		answers[q.Question] = chosen(q, s)
	}
	b, err := json.Marshal(answers)
	if err != nil {
		return relay.Reply{Decision: wire.DecisionDeny, Reason: err.Error()}
	}
	return relay.Reply{Decision: wire.DecisionAllow, Answers: b}
}

// chosen turns "2" or "1, 3" into the options' labels; anything else is the
// user's own answer.
func chosen(q wire.Question, s string) string {
	var labels []string
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 || n > len(q.Options) || (len(labels) > 0 && !q.MultiSelect) {
			return s
		}
		labels = append(labels, q.Options[n-1].Label)
	}
	return strings.Join(labels, ", ")
}

// editInput opens $VISUAL or $EDITOR (vi when neither is set) on the tool's
// input as indented JSON, on the terminal, and returns what was saved: a
// JSON object, or an error that says what is wrong so the user can retry.
func editInput(tty *os.File, input json.RawMessage) (json.RawMessage, error) {
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, input, "", "  "); err != nil {
		pretty.Reset()
		pretty.WriteString("{}")
	}
	f, err := os.CreateTemp("", "claude-relay-input-*.json")
	if err != nil {
		return nil, fmt.Errorf("cannot create a file to edit the input in: %w", err)
	}
	defer os.Remove(f.Name())
	_, werr := f.Write(append(pretty.Bytes(), '\n'))
	if err := errors.Join(werr, f.Close()); err != nil {
		return nil, fmt.Errorf("cannot write %s: %w", f.Name(), err)
	}
	editor := firstNonBlank(os.Getenv("VISUAL"), os.Getenv("EDITOR"), "vi")
	// Through the shell, so that EDITOR may carry arguments ("code --wait").
	cmd := exec.Command("/bin/sh", "-c", editor+` "$1"`, "editor", f.Name())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("the editor (%s) failed: %w; set EDITOR to one that works, or answer y or n", editor, err)
	}
	b, err := os.ReadFile(f.Name())
	if err != nil {
		return nil, fmt.Errorf("cannot read the edited input back: %w", err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("the edited input is not a JSON object (%v); edit again, or answer y or n", err)
	}
	return json.RawMessage(bytes.TrimSpace(b)), nil
}

func firstNonBlank(s ...string) string {
	for _, v := range s {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
