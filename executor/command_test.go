package executor

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/internal/launch"
	"github.com/claude-relay/claude-relay/internal/proc"
	"github.com/claude-relay/claude-relay/internal/streamjson"
)

func TestCommandArgs(t *testing.T) {
	e := New(Options{CLIPath: "/bin/claude", Model: "default-model", Args: []string{"--config-arg"}})
	tests := []struct {
		name string
		req  Request
		want []string
		not  []string
	}{
		{"defaults", Request{RunID: "r"}, []string{"-p", "--verbose", "--permission-prompt-tool", "--model=default-model", "--config-arg"}, []string{"--resume", "--continue"}},
		{"user values cannot become flags", Request{RunOptions: RunOptions{Model: "--dangerously-skip-permissions", SystemPromptAppend: "-x"}, RunID: "r"},
			[]string{"--model=--dangerously-skip-permissions", "--append-system-prompt=-x"}, []string{"--dangerously-skip-permissions"}},
		{"resume and fork", Request{RunOptions: RunOptions{Resume: "abc", Fork: true, MaxTurns: 4}, RunID: "r"}, []string{"--resume=abc", "--fork-session", "--max-turns=4"}, nil},
		{"continue and extra args", Request{RunOptions: RunOptions{Continue: true, AdditionalArgs: []string{"--add-dir=/x"}}, RunID: "r"}, []string{"--continue", "--add-dir=/x"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, args, _, err := e.command(tt.req)
			if err != nil || prog != "/bin/claude" {
				t.Fatalf("%s %v", prog, err)
			}
			for _, w := range tt.want {
				if !slices.Contains(args, w) {
					t.Errorf("args %v lack %q", args, w)
				}
			}
			for _, n := range tt.not {
				if slices.ContainsFunc(args, func(a string) bool { return a == n || strings.HasPrefix(a, n+"=") }) {
					t.Errorf("args %v contain %q", args, n)
				}
			}
		})
	}
}

// TestCommandArgsOrder: protocol flags, then the session's, then claude.args,
// then the run's own arguments, which may thus override claude.args.
func TestCommandArgsOrder(t *testing.T) {
	e := New(Options{CLIPath: "/bin/claude", Model: "default-model", Args: []string{"--config-arg"}})
	_, args, _, err := e.command(Request{
		RunOptions: RunOptions{
			Model:              "m",
			Resume:             "c-1",
			Fork:               true,
			MaxTurns:           2,
			SystemPromptAppend: "sp",
			AdditionalArgs:     []string{"--run-arg"},
		},
		RunID: "r",
	})
	want := append(slices.Clone(protocolArgs), "--model=m", "--resume=c-1", "--fork-session", "--max-turns=2",
		"--append-system-prompt=sp", "--config-arg", "--run-arg")
	if err != nil || !slices.Equal(args, want) {
		t.Errorf("args %q, %v; want %q", args, err, want)
	}
}

// TestBaseCommandOverrideIsShellSplit: launch splits the override (its own
// tests cover the quoting); a bad one is a bad request, naming the command.
func TestBaseCommandOverrideIsShellSplit(t *testing.T) {
	e := New(Options{CLIPath: "/bin/claude", BaseCommand: `npx -y '@anthropic-ai/claude-code@2.1.330' "--a b"`})
	prog, args, _, err := e.command(Request{RunID: "r"})
	if err != nil || prog != "npx" || !slices.Equal(args[:4], []string{"-y", "@anthropic-ai/claude-code@2.1.330", "--a b", "-p"}) {
		t.Fatalf("%s %q %v", prog, args, err)
	}
	for bad, want := range map[string]error{`npx 'open`: launch.ErrUnterminatedQuote, `"x`: launch.ErrUnterminatedQuote, "   ": launch.ErrEmptyCommand} {
		_, _, _, err := New(Options{BaseCommand: bad}).command(Request{RunID: "r"})
		if !errors.Is(err, ErrBadRequest) || !errors.Is(err, want) {
			t.Errorf("base command %q: %v, want %v and %v", bad, err, ErrBadRequest, want)
		}
	}
	if _, _, _, err := New(Options{}).command(Request{}); !errors.Is(err, ErrBadRequest) || !errors.Is(err, launch.ErrNoCLI) {
		t.Errorf("no CLI: %v", err)
	}
}

func TestEnvPrecedence(t *testing.T) {
	var logs bytes.Buffer
	e := New(Options{
		BaseEnv:      []string{"A=base", "B=base", "C=base", "CLAUDECODE=1", "ANTHROPIC_API_KEY=k", "ANTHROPIC_BASE_URL=http://x"},
		Env:          map[string]string{"B=": "", "B": "config", "C": "config", "NUL\x00NAME": "x"},
		RemoveAPIKey: true,
		Logger:       slog.New(slog.NewTextHandler(&logs, nil)),
	})
	env := e.environ(Request{RunOptions: RunOptions{Env: map[string]string{"C": "run", "R=UN": "x"}}, RunID: "run-1"})
	get := func(k string) (string, bool) {
		for _, kv := range env {
			if name, v, _ := strings.Cut(kv, "="); name == k {
				return v, true
			}
		}
		return "", false
	}
	for k, want := range map[string]string{"A": "base", "B": "config", "C": "run", "ANTHROPIC_BASE_URL": "http://x", proc.MarkerEnv: "run-1"} {
		if v, _ := get(k); v != want {
			t.Errorf("%s = %q, want %q", k, v, want)
		}
	}
	for _, gone := range []string{"CLAUDECODE", "ANTHROPIC_API_KEY", "NUL", "R"} {
		if _, ok := get(gone); ok {
			t.Errorf("%s should be removed: %q", gone, env)
		}
	}
	// Dropped entries are said so, naming them and where they came from.
	for _, want := range []string{`claude.env entry \"B=\"`, `claude.env entry \"NUL\\x00NAME\"`, `the run's env entry \"R=UN\"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, &logs)
		}
	}
}

// TestCommandTypedOptions: each typed prompt option becomes the pinned
// CLI's flag, as --flag=value, one per list value, so that no value can be
// read as a flag and no variadic flag swallows what follows.
func TestCommandTypedOptions(t *testing.T) {
	e := New(Options{CLIPath: "/bin/claude"})
	for _, tt := range []struct {
		name string
		req  Request
		want []string
	}{
		{"allowed_tools", Request{RunOptions: RunOptions{AllowedTools: []string{"Bash(git *)", "Edit"}}}, []string{"--allowedTools=Bash(git *)", "--allowedTools=Edit"}},
		{"session_id", Request{SessionID: "0b8f8a57-6a55-4a43-9d55-6d7a1b0f3c21"}, []string{"--session-id=0b8f8a57-6a55-4a43-9d55-6d7a1b0f3c21"}},
		{"disallowed_tools", Request{RunOptions: RunOptions{DisallowedTools: []string{"-x", "WebFetch"}}}, []string{"--disallowedTools=-x", "--disallowedTools=WebFetch"}},
		{"mcp_servers", Request{RunOptions: RunOptions{MCPServers: json.RawMessage("{\n \"fs\": {\"command\": \"npx\", \"args\": [\"-y\", \"srv\"]}\n}")}},
			[]string{`--mcp-config={"mcpServers":{"fs":{"command":"npx","args":["-y","srv"]}}}`}},
		{"add_dirs", Request{RunOptions: RunOptions{AddDirs: []string{"/a", "/b c"}}}, []string{"--add-dir=/a", "--add-dir=/b c"}},
		{"fallback_model", Request{RunOptions: RunOptions{FallbackModel: "sonnet"}}, []string{"--fallback-model=sonnet"}},
		{"max_budget_usd", Request{RunOptions: RunOptions{MaxBudgetUSD: 2.5}}, []string{"--max-budget-usd=2.5"}},
		{"max_budget_usd whole", Request{RunOptions: RunOptions{MaxBudgetUSD: 10}}, []string{"--max-budget-usd=10"}},
		{"system_prompt", Request{RunOptions: RunOptions{SystemPrompt: "--be brief\nand kind"}}, []string{"--system-prompt=--be brief\nand kind"}},
		{"agents", Request{RunOptions: RunOptions{Agents: json.RawMessage(`{ "reviewer": { "description": "Reviews", "prompt": "You review." } }`)}},
			[]string{`--agents={"reviewer":{"description":"Reviews","prompt":"You review."}}`}},
		{"setting_sources", Request{RunOptions: RunOptions{SettingSources: &[]string{"user", "project"}}}, []string{"--setting-sources=user,project"}},
		{"setting_sources [] is none", Request{RunOptions: RunOptions{SettingSources: &[]string{}}}, []string{"--setting-sources="}},
		{"setting_sources absent", Request{}, nil},
		{"null objects are none", Request{RunOptions: RunOptions{MCPServers: json.RawMessage("null"), Agents: json.RawMessage(" null")}}, nil},
		{"partial_messages", Request{RunOptions: RunOptions{PartialMessages: true}}, []string{"--include-partial-messages"}},
		{"nothing set", Request{}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.RunID = "r"
			_, args, _, err := e.command(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			// Only the protocol flags come first; everything after them is
			// this option's.
			if got := args[len(protocolArgs):]; !slices.Equal(got, tt.want) {
				t.Errorf("args %q, want %q", got, tt.want)
			}
		})
	}
}

// TestCommandTypedOptionsOrder: the typed options come after the session
// flags and before claude.args and the run's own arguments, which thus
// still have the last word.
func TestCommandTypedOptionsOrder(t *testing.T) {
	e := New(Options{CLIPath: "/bin/claude", Args: []string{"--config-arg"}})
	_, args, _, err := e.command(Request{
		RunOptions: RunOptions{
			Model:          "m",
			MaxBudgetUSD:   1,
			AllowedTools:   []string{"Read"},
			SystemPrompt:   "sp",
			AdditionalArgs: []string{"--run-arg"},
		},
		RunID: "r",
	})
	want := append(slices.Clone(protocolArgs), "--max-budget-usd=1", "--model=m", "--allowedTools=Read", "--system-prompt=sp",
		"--config-arg", "--run-arg")
	if err != nil || !slices.Equal(args, want) {
		t.Errorf("args %q, %v; want %q", args, err, want)
	}
}

// TestMaxThinkingTokensEnv: the pinned CLI has no flag for it; the
// environment variable it reads goes over claude.env and the run's env,
// without changing the caller's map.
func TestMaxThinkingTokensEnv(t *testing.T) {
	e := New(Options{BaseEnv: []string{"MAX_THINKING_TOKENS=1"}, Env: map[string]string{"MAX_THINKING_TOKENS": "2"}})
	runEnv := map[string]string{"MAX_THINKING_TOKENS": "3", "A": "b"}
	env := e.environ(Request{RunOptions: RunOptions{Env: runEnv, MaxThinkingTokens: 4096}, RunID: "r"})
	if !slices.Contains(env, "MAX_THINKING_TOKENS=4096") || !slices.Contains(env, "A=b") {
		t.Errorf("env %q lacks MAX_THINKING_TOKENS=4096 or A=b", env)
	}
	if runEnv["MAX_THINKING_TOKENS"] != "3" {
		t.Errorf("the request's env map was changed: %v", runEnv)
	}
	if env := e.environ(Request{RunID: "r"}); !slices.Contains(env, "MAX_THINKING_TOKENS=2") {
		t.Errorf("without the option claude.env stands: %q", env)
	}
	if env := e.environ(Request{RunOptions: RunOptions{MaxThinkingTokens: 100}, RunID: "r"}); !slices.Contains(env, "MAX_THINKING_TOKENS=100") {
		t.Errorf("with no run env: %q", env)
	}
}

// TestValidateTypedOptions: a bad option is a bad request whose message
// names the option as the protocol spells it, the entry, and the value.
func TestValidateTypedOptions(t *testing.T) {
	cwd := t.TempDir()
	if err := os.Mkdir(filepath.Join(cwd, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(cwd, "file.txt")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		req  Request
		want string // "" = valid
	}{
		{Request{RunOptions: RunOptions{AllowedTools: []string{"Read", " "}}}, `allowed_tools[1]: empty tool name`},
		{Request{SessionID: "abc"}, `session id "abc" is not a UUID`},
		{Request{RunOptions: RunOptions{Resume: "x"}, SessionID: "0b8f8a57-6a55-4a43-9d55-6d7a1b0f3c21"}, `a session id names a new conversation`},
		{Request{RunOptions: RunOptions{Resume: "x", Fork: true}, SessionID: "0b8f8a57-6a55-4a43-9d55-6d7a1b0f3c21"}, ``},
		{Request{Idle: true}, `an idle start is a keep-alive run with no prompt`},
		{Request{RunOptions: RunOptions{KeepAlive: true}, Idle: true, Prompt: "x"}, `an idle start is a keep-alive run with no prompt`},
		{Request{RunOptions: RunOptions{DisallowedTools: []string{""}}}, `disallowed_tools[0]: empty tool name`},
		{Request{RunOptions: RunOptions{MCPServers: json.RawMessage(`["fs"]`)}}, `mcp_servers: not a JSON object`},
		{Request{RunOptions: RunOptions{MCPServers: json.RawMessage(`true`)}}, `mcp_servers: not a JSON object`},
		{Request{RunOptions: RunOptions{MCPServers: json.RawMessage(`{"a": {}, "b": [], "c": 1}`)}}, `mcp_servers.b: not a JSON object`},
		{Request{RunOptions: RunOptions{MCPServers: json.RawMessage(` null `), Agents: json.RawMessage(`null`)}}, ""},
		{Request{RunOptions: RunOptions{MCPServers: json.RawMessage(`{"fs": "npx srv"}`)}}, `mcp_servers.fs: not a JSON object`},
		{Request{RunOptions: RunOptions{MCPServers: json.RawMessage(`{"fs": {`)}}, `mcp_servers: not a JSON object`},
		{Request{RunOptions: RunOptions{Agents: json.RawMessage(`"reviewer"`)}}, `agents: not a JSON object`},
		{Request{RunOptions: RunOptions{Agents: json.RawMessage(`{"reviewer": 1}`)}}, `agents.reviewer: not a JSON object`},
		{Request{RunOptions: RunOptions{AddDirs: []string{"/nonexistent/x"}}}, `add_dirs[0]: "/nonexistent/x": no such directory`},
		{Request{RunOptions: RunOptions{Cwd: cwd, AddDirs: []string{"sub", "nope"}}}, `add_dirs[1]: "nope": no such directory`},
		{Request{RunOptions: RunOptions{AddDirs: []string{file}}}, `add_dirs[0]: "` + file + `": not a directory`},
		{Request{RunOptions: RunOptions{AddDirs: []string{""}}}, `add_dirs[0]: empty path`},
		{Request{RunOptions: RunOptions{Model: "opus", FallbackModel: "opus"}}, `fallback_model: "opus" is the model itself`},
		{Request{RunOptions: RunOptions{MaxBudgetUSD: -1}}, `max_budget_usd: -1 is negative`},
		{Request{RunOptions: RunOptions{MaxBudgetUSD: math.NaN()}}, `max_budget_usd: NaN is not a number of dollars`},
		{Request{RunOptions: RunOptions{MaxBudgetUSD: math.Inf(1)}}, `max_budget_usd: +Inf is not a number of dollars`},
		{Request{RunOptions: RunOptions{MaxThinkingTokens: -5}}, `max_thinking_tokens: -5 is negative`},
		{Request{RunOptions: RunOptions{SettingSources: &[]string{"user", "global"}}}, `setting_sources[1]: "global" (allowed: user, project, local)`},
		{Request{RunOptions: RunOptions{SettingSources: &[]string{"User"}}}, `setting_sources[0]: "User" (allowed: user, project, local)`},
		{Request{
			RunOptions: RunOptions{
				Cwd:               cwd,
				AllowedTools:      []string{"Bash(git *)"},
				DisallowedTools:   []string{"Write"},
				MCPServers:        json.RawMessage(`{}`),
				Agents:            json.RawMessage(`{"a":{"description":"d","prompt":"p"}}`),
				AddDirs:           []string{"sub", cwd},
				Model:             "opus",
				FallbackModel:     "sonnet",
				MaxBudgetUSD:      0.5,
				MaxThinkingTokens: 1024,
				SystemPrompt:      "x",
				SettingSources:    &[]string{},
			},
		}, ""},
	} {
		err := Validate(tt.req)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("Validate(%+v) = %v, want nil", tt.req, err)
		case tt.want != "" && (!errors.Is(err, ErrBadRequest) || err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("Validate(%+v) = %v, want ErrBadRequest with %q", tt.req, err, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, req := range []Request{
		{RunOptions: RunOptions{PermissionMode: "yolo"}}, {RunOptions: RunOptions{Fork: true}},
		{RunOptions: RunOptions{MaxTurns: -1}}, {RunOptions: RunOptions{Cwd: "/nonexistent/dir"}},
	} {
		if err := validate(req); !errors.Is(err, ErrBadRequest) {
			t.Errorf("validate(%+v) = %v", req, err)
		}
	}
	if permissionMode(Request{RunOptions: RunOptions{PermissionMode: streamjson.PermissionModeBypassPermissions}}) != streamjson.PermissionModeDefault {
		t.Error("bypassPermissions must not be sent to the CLI (refused as root)")
	}
}

func TestStopGitCheck(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	r := &run{req: Request{RunOptions: RunOptions{Cwd: dir}}}
	cb := &streamjson.HookCallbackRequest{CallbackID: callbackStopGit, Input: []byte(`{"hook_event_name":"Stop"}`)}
	if got := r.hookAnswer(t.Context(), cb).(map[string]any)["decision"]; got != "approve" {
		t.Errorf("clean tree: %v", got)
	}
	if err := exec.Command("touch", dir+"/new.txt").Run(); err != nil {
		t.Fatal(err)
	}
	if got := r.hookAnswer(t.Context(), cb).(map[string]any)["decision"]; got != "block" {
		t.Errorf("dirty tree: %v", got)
	}
	cb.Input = []byte(`{"hook_event_name":"Stop","stop_hook_active":true}`)
	if got := r.hookAnswer(t.Context(), cb).(map[string]any)["decision"]; got != "approve" {
		t.Errorf("second stop must not loop: %v", got)
	}
}

func TestAggregatorLimitNotice(t *testing.T) {
	lines := []string{
		`{"type":"assistant","session_id":"s","message":{"role":"assistant","content":[{"type":"text","text":"Claude AI usage limit reached|1760000000"}]},"error":"rate_limit"}`,
		`{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|1760000000","session_id":"s","api_error_status":429}`,
	}
	var a aggregator
	for _, l := range lines {
		m, err := streamjson.Decode([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		a.add(m)
	}
	if a.limitNotice == "" || a.conversationID != "s" {
		t.Fatalf("%+v", a)
	}
	var b aggregator
	m, _ := streamjson.Decode([]byte(`{"type":"assistant","session_id":"s","message":{"role":"assistant","content":[{"type":"text","text":"Rate limits in your API design matter."}]}}`))
	b.add(m)
	if b.limitNotice != "" {
		t.Error("ordinary text about limits is not a limit notice")
	}
}
