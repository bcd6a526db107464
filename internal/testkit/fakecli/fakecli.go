package fakecli

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Mode selects how the fake CLI behaves.
type Mode string

// The modes a test can ask for. A "turn" starts when the fake reads a
// "user" line on stdin; control requests are answered in every mode but
// ModeHang.
const (
	// ModeNormal runs a text-only turn: system/init, assistant, result.
	// After stdin EOF it exits 0.
	ModeNormal Mode = "normal"
	// ModeTool runs a turn with a Bash tool_use that needs permission: a
	// hook_callback for each PreToolUse hook registered at initialize (as
	// the real CLI does), then can_use_tool unless a hook decided. Allow
	// gives a tool_result, deny a tool_result with is_error and the deny
	// message; the result follows.
	ModeTool Mode = "tool"
	// ModeMalformed runs a normal turn interleaved with a line that is not
	// JSON, a truncated JSON line, an empty line and a line of unknown type.
	ModeMalformed Mode = "malformed"
	// ModeHugeLine emits one assistant line whose text block is
	// WithHugeLineSize bytes (DefaultHugeLineSize), then a normal result.
	ModeHugeLine Mode = "hugeline"
	// ModeHang writes nothing, reads nothing and sleeps until killed.
	ModeHang Mode = "hang"
	// ModeCrash emits init and an assistant line, writes to stderr and exits
	// with status 3 without a result.
	ModeCrash Mode = "crash"
	// ModeANSI writes ANSI-coloured lines to stderr at start, then behaves
	// like ModeNormal.
	ModeANSI Mode = "ansi"
	// ModeIgnoreSignals ignores SIGINT and SIGTERM; its turn emits init and
	// then never ends. Interrupts are answered with success but change
	// nothing, and stdin EOF does not end it either.
	ModeIgnoreSignals Mode = "ignoresignals"
	// ModeGrandchild ignores SIGINT and SIGTERM like ModeIgnoreSignals; its
	// turn emits init, starts a child which starts a grandchild in a session
	// of its own (as the Bash tool does) that ignores SIGINT and SIGTERM,
	// writes the three pids to the pid file and then never ends.
	ModeGrandchild Mode = "grandchild"
	// ModeSlow runs a normal turn with WithLineDelay (DefaultSlowDelay)
	// between lines, so a test can cancel mid-turn. An interrupt ends the
	// turn at once with an error_during_execution result.
	ModeSlow Mode = "slow"
	// ModeFlood emits WithFloodLines (DefaultFloodLines) stream_event lines
	// of about 250 bytes as fast as it can, then an assistant line and a
	// result. Output is flushed only when the buffer fills and at the end.
	ModeFlood Mode = "flood"
	// ModeNoExit runs normal turns but never exits: after stdin EOF it
	// sleeps, stdout still open, until a signal kills it, as a CLI wedged
	// after its final result would.
	ModeNoExit Mode = "noexit"
	// ModeApprovals measures approval round trips: its turn emits init,
	// then asks can_use_tool for a Bash call WithApprovals
	// (DefaultApprovals) times in a row, each after the answer to the one
	// before. Each request's input carries StampField, the wall clock
	// (UnixNano) just before the line was written. An answer whose
	// updatedInput carries AnswerStampField (the UnixNano at which the host
	// wrote it) yields one sample, the time from that stamp to the moment
	// the fake read the answer; the samples go to WithSampleFile at the
	// end of the turn. Then an assistant line and the result say how many
	// calls were allowed and denied. Both stamps are CLOCK_REALTIME, which
	// processes on one machine share.
	ModeApprovals Mode = "approvals"

	// Sub-modes of ModeGrandchild: the process tree it spawns.
	modeTreeChild Mode = "grandchild-child"
	modeTreeLeaf  Mode = "grandchild-leaf"
)

// Environment variables that carry the mode and the options to the fake.
const (
	// EnvHelper is set to "1" in the fake CLI's environment; RunIfHelper
	// takes over the process only when it is set.
	EnvHelper = "CLAUDE_RELAY_FAKE_CLI_HELPER"
	// EnvMode holds the Mode.
	EnvMode = "CLAUDE_RELAY_FAKE_CLI_MODE"

	envPidFile    = "CLAUDE_RELAY_FAKE_CLI_PIDFILE"
	envSessionID  = "CLAUDE_RELAY_FAKE_CLI_SESSION_ID"
	envHugeSize   = "CLAUDE_RELAY_FAKE_CLI_HUGE_SIZE"
	envFlood      = "CLAUDE_RELAY_FAKE_CLI_FLOOD_LINES"
	envFloodFinal = "CLAUDE_RELAY_FAKE_CLI_FLOOD_ASSISTANT"
	envDelay      = "CLAUDE_RELAY_FAKE_CLI_LINE_DELAY"
	envRecord     = "CLAUDE_RELAY_FAKE_CLI_RECORD"
	envApprovals  = "CLAUDE_RELAY_FAKE_CLI_APPROVALS"
	envSamples    = "CLAUDE_RELAY_FAKE_CLI_SAMPLES"
	envConfigured = "CLAUDE_RELAY_FAKE_CLI_CONFIGURED_MODE"
	envNoAccount  = "CLAUDE_RELAY_FAKE_CLI_NO_ACCOUNT"
)

// Values the fake puts on the wire, for tests to compare against.
const (
	// DefaultSessionID is the session_id of every line unless WithSessionID,
	// --resume or --fork-session says otherwise.
	DefaultSessionID = "f4ce0c11-5e55-4d1e-8c1e-000000000001"
	// Model is the model reported unless --model names another.
	Model = "claude-sonnet-4-5-20250929"
	// Version is the claude_code_version the fake claims to be.
	Version = "2.1.330"
	// ReplyText is the assistant text and the result text of a normal turn.
	ReplyText = "Hello from the fake Claude CLI."
	// ToolUseID is the id of the Bash tool_use in ModeTool.
	ToolUseID = "toolu_01FakeBashToolUse0001"
	// ToolCommand is the Bash command ModeTool asks to run.
	ToolCommand = "echo hello"
	// CostUSD is the total_cost_usd of every result.
	CostUSD = 0.0123

	// DefaultHugeLineSize is ModeHugeLine's text block size in bytes.
	DefaultHugeLineSize = 20 << 20
	// DefaultFloodLines is how many stream_event lines ModeFlood writes.
	DefaultFloodLines = 100000
	// DefaultSlowDelay is ModeSlow's pause between lines.
	DefaultSlowDelay = 200 * time.Millisecond
	// DefaultApprovals is how many times ModeApprovals asks.
	DefaultApprovals = 10

	// StampField is the member of a ModeApprovals request's tool input
	// that holds the request's write time (UnixNano).
	StampField = "t"
	// AnswerStampField is the member of an answer's updatedInput that
	// holds the answer's write time (UnixNano), for ModeApprovals.
	AnswerStampField = "t0"
	// ApprovalCommand is the Bash command ModeApprovals asks to run.
	ApprovalCommand = "true"
)

// config is what Command passes to the fake through the environment.
// Zero values mean "default".
type config struct {
	mode       Mode
	pidFile    string
	sessionID  string
	recordFile string
	configured string // the permission mode "settings" start it in
	hugeSize   int
	floodLines int
	floodFinal bool // flood with assistant messages, not stream_event deltas
	lineDelay  time.Duration
	approvals  int
	sampleFile string
	noAccount  bool // initialize's answer has no account (a CLI the billing guard cannot read)
}

// Option configures the fake CLI started from Command.
type Option func(*config)

// WithPidFile makes the fake write its pid to path at start, and in
// ModeGrandchild rewrite it with its own, its child's and its grandchild's
// pids, one per line, before it starts waiting. The file is replaced
// atomically, so a reader never sees half of it.
func WithPidFile(path string) Option { return func(c *config) { c.pidFile = path } }

// WithSessionID sets the session_id of every line; it wins over --resume.
func WithSessionID(id string) Option { return func(c *config) { c.sessionID = id } }

// WithHugeLineSize sets the size in bytes of ModeHugeLine's text block.
func WithHugeLineSize(n int) Option { return func(c *config) { c.hugeSize = n } }

// WithFloodLines sets how many stream_event lines ModeFlood emits.
func WithFloodLines(n int) Option { return func(c *config) { c.floodLines = n } }

// WithFloodAssistant makes ModeFlood's lines complete assistant messages,
// which the relay spools and forwards, instead of stream_event deltas,
// which are live only.
func WithFloodAssistant() Option { return func(c *config) { c.floodFinal = true } }

// WithLineDelay makes the fake wait d before each stdout line of a turn
// after the first (any mode but ModeFlood's stream_event lines); it is
// ModeSlow's knob.
func WithLineDelay(d time.Duration) Option { return func(c *config) { c.lineDelay = d } }

// WithApprovals sets how many times ModeApprovals asks can_use_tool; zero
// keeps DefaultApprovals.
func WithApprovals(n int) Option { return func(c *config) { c.approvals = n } }

// WithSampleFile makes ModeApprovals write its answer-leg samples to path,
// in nanoseconds, one decimal number per line in the order of the
// requests. The file is replaced atomically before the turn's result line,
// so it is complete once the result has been read.
func WithSampleFile(path string) Option { return func(c *config) { c.sampleFile = path } }

// WithRecordFile makes the fake append to path a JSON array of its
// command-line arguments, then every line it reads from stdin, verbatim.
// Tests use it to check what a runner sent.
func WithRecordFile(path string) Option { return func(c *config) { c.recordFile = path } }

// WithConfiguredMode starts the fake in mode when no --permission-mode
// names one, as the real CLI's permissions.defaultMode setting does.
func WithConfiguredMode(mode string) Option { return func(c *config) { c.configured = mode } }

// WithoutAccount leaves `account` out of the answer to initialize, as a CLI
// that does not say where its credentials come from would.
func WithoutAccount() Option { return func(c *config) { c.noAccount = true } }

// Command returns how to start the fake CLI in mode: path is the running test
// binary and env holds the variables to add to the child's environment (on
// top of os.Environ()). The consuming package's TestMain must call
// RunIfHelper. Command panics if the test binary cannot be located, which
// only a broken platform causes.
func Command(mode Mode, opts ...Option) (path string, env []string) {
	c := config{mode: mode}
	for _, o := range opts {
		o(&c)
	}
	exe, err := os.Executable()
	if err != nil {
		panic(fmt.Sprintf("fakecli: cannot locate the test binary to re-execute: %v", err))
	}
	return exe, c.env()
}

// RunIfHelper runs the fake CLI and exits when the process was started from
// Command; otherwise it returns at once. Call it first thing in TestMain,
// before m.Run parses the test flags.
func RunIfHelper() {
	if os.Getenv(EnvHelper) != "1" {
		return
	}
	os.Exit(run())
}

func (c config) env() []string {
	env := []string{
		EnvHelper + "=1",
		EnvMode + "=" + string(c.mode),
		// A -race binary sleeps 1s on every exit with status 0 to let late
		// race reports out; for a fake CLI that exits after each test that
		// is most of the suite's time. Races are still reported.
		"GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"),
	}
	add := func(key, val string) {
		if val != "" {
			env = append(env, key+"="+val)
		}
	}
	add(envPidFile, c.pidFile)
	add(envSessionID, c.sessionID)
	add(envRecord, c.recordFile)
	add(envConfigured, c.configured)
	add(envSamples, c.sampleFile)
	if c.hugeSize > 0 {
		add(envHugeSize, strconv.Itoa(c.hugeSize))
	}
	if c.floodLines > 0 {
		add(envFlood, strconv.Itoa(c.floodLines))
	}
	if c.lineDelay > 0 {
		add(envDelay, c.lineDelay.String())
	}
	if c.floodFinal {
		add(envFloodFinal, "1")
	}
	if c.noAccount {
		add(envNoAccount, "1")
	}
	if c.approvals > 0 {
		add(envApprovals, strconv.Itoa(c.approvals))
	}
	return env
}

// configFromEnv is the inverse of config.env, with the defaults filled in.
func configFromEnv() (config, error) {
	c := config{
		mode:       Mode(os.Getenv(EnvMode)),
		pidFile:    os.Getenv(envPidFile),
		sessionID:  os.Getenv(envSessionID),
		recordFile: os.Getenv(envRecord),
		configured: os.Getenv(envConfigured),
		hugeSize:   DefaultHugeLineSize,
		floodLines: DefaultFloodLines,
		floodFinal: os.Getenv(envFloodFinal) == "1",
		noAccount:  os.Getenv(envNoAccount) == "1",
		approvals:  DefaultApprovals,
		sampleFile: os.Getenv(envSamples),
	}
	var err error
	if c.hugeSize, err = envInt(envHugeSize, c.hugeSize); err != nil {
		return c, err
	}
	if c.floodLines, err = envInt(envFlood, c.floodLines); err != nil {
		return c, err
	}
	if c.approvals, err = envInt(envApprovals, c.approvals); err != nil {
		return c, err
	}
	if v := os.Getenv(envDelay); v != "" {
		if c.lineDelay, err = time.ParseDuration(v); err != nil {
			return c, fmt.Errorf("%s=%q is not a duration: %w", envDelay, v, err)
		}
	}
	if c.mode == ModeSlow && c.lineDelay <= 0 {
		c.lineDelay = DefaultSlowDelay
	}
	return c, nil
}

func envInt(key string, def int) (int, error) {
	v := os.Getenv(key)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q is not a non-negative integer", key, v)
	}
	return n, nil
}
