package executor

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/claude-relay/claude-relay/internal/billing"
	"github.com/claude-relay/claude-relay/internal/streamjson"
)

// aggregator builds the result from the stream; only the stdout reader
// touches it, and Run reads it after the reader has ended.
type aggregator struct {
	stdout         strings.Builder
	conversationID string
	result         *streamjson.Result
	limitNotice    string

	// A keep-alive run has a result per turn. The CLI reports each turn's
	// own usage and num_turns, but total_cost_usd summed over its process
	// so far (seen with 2.1.330): a turn's cost is the difference.
	results    int // results seen
	usage      streamjson.Usage
	numTurns   int
	cost       float64 // the latest total_cost_usd
	turnCost   float64 // what the latest result added to it
	turnStdout strings.Builder
	turnNotice string
}

// limitText recognises rate and usage limit notices in CLI text.
var limitText = regexp.MustCompile(`(?i)(usage limit|rate limit|rate_limit|hit your limit|limit reached|limit will reset|quota exceeded|overloaded)`)

func (a *aggregator) add(m streamjson.Message) {
	// A result that ends a run before any turn (a --resume of an unknown
	// conversation) echoes the requested ID: no conversation exists under it,
	// so it must not be offered for resuming.
	if a.conversationID == "" && !(m.Result != nil && m.Result.IsError && m.Result.NumTurns == 0) {
		if id, ok := streamjson.ConversationID(m); ok && id != "" {
			a.conversationID = id
		}
	}
	switch {
	case m.Assistant != nil:
		// An error the CLI gave up on comes as a synthetic assistant message
		// ("Not logged in · Please run /login"): the result's stderr says it
		// in words a claude-relay user can act on, so it is no answer. A
		// limit notice stays (seed 003: the run completes with it).
		if e := m.Assistant.Error; e != "" && !limitText.MatchString(e) {
			break
		}
		for _, b := range m.Assistant.Message.Blocks() {
			if b.Type == streamjson.BlockText {
				a.stdout.WriteString(b.Text)
				a.stdout.WriteByte('\n')
				a.turnStdout.WriteString(b.Text)
				a.turnStdout.WriteByte('\n')
			}
		}
		// The CLI marks an API error it gave up on in the assistant message.
		if e := m.Assistant.Error; e != "" && limitText.MatchString(e) && (a.limitNotice == "" || a.turnNotice == "") {
			a.notice(firstNonEmpty(strings.TrimSpace(m.Assistant.Text()), e))
		}
	case m.Result != nil:
		a.result = m.Result
		a.results++
		a.usage.Add(m.Result.Usage)
		a.numTurns += m.Result.NumTurns
		a.turnCost = m.Result.TotalCostUSD - a.cost
		if a.turnCost < 0 {
			// The CLI started counting afresh; what it reports is this turn's.
			a.turnCost = m.Result.TotalCostUSD
		}
		a.cost = m.Result.TotalCostUSD
		if m.Result.IsError && (a.limitNotice == "" || a.turnNotice == "") {
			text := m.Result.Result + " " + strings.Join(m.Result.Errors, " ")
			if limitText.MatchString(text) || apiStatus(m) == 429 {
				a.notice(strings.TrimSpace(firstNonEmpty(m.Result.Result, strings.Join(m.Result.Errors, "; "), "rate limited (HTTP 429)")))
			}
		}
	}
}

// notice records a limit notice: the run keeps its first, a turn its own.
func (a *aggregator) notice(text string) {
	if a.limitNotice == "" {
		a.limitNotice = text
	}
	if a.turnNotice == "" {
		a.turnNotice = text
	}
}

// totalCost is the cost of every turn so far.
func (a *aggregator) totalCost() float64 { return a.cost }

// endTurn returns the Result of the turn the latest result ended (a
// keep-alive run's) and starts the next turn's text and notice afresh.
// Status, exit code and stderr follow seed 002 and 003 as for a whole run.
func (a *aggregator) endTurn() *Result {
	r := a.result
	res := &Result{
		ConversationID: a.conversationID,
		Subtype:        r.Subtype,
		NumTurns:       r.NumTurns,
		Usage:          r.Usage,
		TotalCostUSD:   a.turnCost,
		HasUsage:       true,
		LimitNotice:    a.turnNotice,
	}
	res.Stdout = strings.TrimSpace(a.turnStdout.String())
	res.DurationMS = r.DurationMS
	switch {
	case res.LimitNotice != "":
		res.Status, res.ExitCode = StatusCompleted, 0
	case r.IsError:
		res.Status, res.ExitCode = StatusFailed, 1
		res.Stderr, res.Cause = errorText(r)
		res.Reason = res.Stderr
	default:
		res.Status, res.ExitCode = StatusCompleted, 0
	}
	a.turnStdout.Reset()
	a.turnNotice = ""
	return res
}

// apiStatus reads the result's api_error_status, which the CLI sets when it
// gave up on the Messages API.
func apiStatus(m streamjson.Message) int {
	var v struct {
		Status int `json:"api_error_status"`
	}
	_ = jsonUnmarshal(m.Raw, &v)
	return v.Status
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if strings.TrimSpace(x) != "" {
			return x
		}
	}
	return ""
}

// result turns what the run saw into a Result, following seed 002 for the
// command result and seed 003 for limits and cancels.
func (r *run) result(o outcome) (*Result, error) {
	a := &r.agg
	res := &Result{
		ConversationID: a.conversationID,
		StderrTail:     r.stderr.String(),
		CLIExitCode:    -1,
		LimitNotice:    a.limitNotice,
	}
	res.Stdout = strings.TrimSpace(a.stdout.String())
	if o.state != nil {
		res.CLIExitCode = o.state.ExitCode()
	}
	if a.result != nil {
		res.Subtype, res.NumTurns = a.result.Subtype, a.result.NumTurns
		res.Usage, res.TotalCostUSD, res.HasUsage = a.result.Usage, a.result.TotalCostUSD, true
		if r.req.KeepAlive {
			// Every turn counts, each once.
			res.NumTurns, res.Usage, res.TotalCostUSD = a.numTurns, a.usage, a.totalCost()
		}
	}
	switch {
	case o.refused != nil:
		res.Status, res.ExitCode, res.Reason = StatusFailed, billing.ExitStatus, o.refused.Error()
		res.Stderr, res.Cause = res.Reason, o.refused
		return res, o.refused
	case o.cancelled:
		// Whatever the CLI reported after our interrupt, we cancelled it.
		res.Status, res.ExitCode, res.Stderr = StatusCancelled, 130, "Cancelled"
		res.Reason, res.StoppedBy = o.why, o.by
		return res, nil
	case o.timedOut:
		err := fmt.Errorf("%w: no output within %s", ErrStartupTimeout, r.e.opts.StartupTimeout)
		res.Status, res.ExitCode, res.Reason = StatusFailed, 1, err.Error()
		res.Stderr = strings.TrimSpace(err.Error() + "\n" + res.StderrTail)
		return res, err
	case a.result == nil && r.req.Idle && r.lv.started == 0 && r.lv.closed && (res.CLIExitCode == 0 || o.closed):
		// An idle start that ended before its first message: nothing ran.
		res.Status, res.ExitCode = StatusCompleted, 0
		return res, nil
	case a.result != nil && r.req.KeepAlive:
		// Each turn's error or limit was its own turn's, told with it; the
		// run ends as it was asked to (or as the CLI died).
		return r.liveResult(res)
	case a.result != nil && a.result.IsError && r.stoppedBy().why != "":
		// The CLI calls a turn an approval stopped an error during
		// execution; the user stopped it, or nobody answered.
		stop := r.stoppedBy()
		if stop.timedOut {
			res.Status, res.ExitCode, res.Reason = StatusFailed, 1, stop.why
			res.Stderr = stop.why
			return res, errors.New(stop.why)
		}
		res.Status, res.ExitCode, res.Reason, res.Stderr = StatusCancelled, 130, stop.why, "Cancelled: "+stop.why
		return res, nil
	case a.limitNotice != "":
		// Seed 003: hitting a limit ends the run as a completion, not a failure.
		res.Status, res.ExitCode = StatusCompleted, 0
		return res, nil
	case a.result != nil && a.result.IsError:
		res.Status, res.ExitCode = StatusFailed, 1
		res.Stderr, res.Cause = errorText(a.result)
		res.Reason = res.Stderr
		if res.Cause != nil {
			return res, fmt.Errorf("%w: %s", res.Cause, res.Stderr)
		}
		return res, fmt.Errorf("the Claude CLI reported an error: %s", res.Stderr)
	case a.result != nil:
		res.Status, res.ExitCode = StatusCompleted, 0
		return res, nil
	default:
		res.Status, res.ExitCode = StatusFailed, res.CLIExitCode
		if res.ExitCode <= 0 {
			res.ExitCode = 1
		}
		res.Stderr = firstNonEmpty(res.StderrTail, ErrNoResult.Error())
		res.Reason = fmt.Sprintf("%s (exit status %d)", ErrNoResult, res.CLIExitCode)
		return res, fmt.Errorf("%w: exit status %d", ErrNoResult, res.CLIExitCode)
	}
}

// errorText is seed 002's stderr for an error result, followed by what the
// CLI said went wrong (its errors), so a user can act on it; cause is
// ErrNotLoggedIn when that is what it says.
func errorText(r *streamjson.Result) (text string, cause error) {
	detail := strings.Join(r.Errors, "; ")
	switch r.Subtype {
	case streamjson.ResultErrorMaxTurns:
		text = "Maximum turns reached"
	case streamjson.ResultErrorDuringExecution:
		text = "Error during execution"
	case streamjson.ResultErrorMaxBudgetUSD:
		// --max-budget-usd: the user's own, or what the budgets left
		// (issue 26); the CLI's errors say the amount.
		text = "Maximum budget reached"
	default:
		text, detail = firstNonEmpty(r.Result, detail, "Error: "+r.Subtype), ""
	}
	if detail != "" {
		text += ": " + detail
	}
	if notLoggedIn.MatchString(text) {
		cause = ErrNotLoggedIn
	}
	return translateCLIError(text), cause
}

// notLoggedIn is how the CLI says it has no credentials; its own advice
// (/login) means nothing in a background run.
var notLoggedIn = regexp.MustCompile(`(?i)not logged in|please run /login|invalid api key`)

// translateCLIError turns CLI messages that point at the CLI's own UI into
// what the user of claude-relay can do.
func translateCLIError(text string) string {
	if notLoggedIn.MatchString(text) {
		return "Not logged in: set ANTHROPIC_API_KEY (and leave claude.disable_api_key off) or log in with `claude`; " +
			"see `claude-relay doctor` (the CLI said: " + text + ")"
	}
	return text
}

// tail keeps the last stderrTailBytes of stderr for the result.
type tail struct {
	mu    sync.Mutex
	lines []string
	size  int
}

const stderrTailBytes = 8 << 10

func (t *tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(line) > stderrTailBytes {
		line = line[len(line)-stderrTailBytes:]
	}
	t.lines = append(t.lines, line)
	t.size += len(line) + 1
	for t.size > stderrTailBytes && len(t.lines) > 1 {
		t.size -= len(t.lines[0]) + 1
		t.lines = t.lines[1:]
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}

// ansi matches CSI and OSC sequences and two-byte escapes.
var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]`)

func stripANSI(s string) string {
	if !strings.Contains(s, "\x1b") {
		return s
	}
	return ansi.ReplaceAllString(s, "")
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
