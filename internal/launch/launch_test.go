package launch

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/internal/proc"
)

func TestProgram(t *testing.T) {
	for _, tc := range []struct {
		name, path, base string
		prog             string
		args             []string
		err              error
	}{
		{"path", "/bin/claude", "", "/bin/claude", nil, nil},
		{"base command replaces the path", "/bin/claude", `npx -y '@anthropic-ai/claude-code@2.1.330' "--a b"`,
			"npx", []string{"-y", "@anthropic-ai/claude-code@2.1.330", "--a b"}, nil},
		{"backslashes and quotes", "", `a\ b "c\"d" 'e"f' g""h`, "a b", []string{`c"d`, `e"f`, "gh"}, nil},
		{"unterminated single quote", "/bin/claude", `npx 'open`, "", nil, ErrUnterminatedQuote},
		{"unterminated double quote", "", `"x`, "", nil, ErrUnterminatedQuote},
		{"blank base command", "/bin/claude", "   ", "", nil, ErrEmptyCommand},
		{"nothing", "", "", "", nil, ErrNoCLI},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prog, args, err := Program(tc.path, tc.base)
			if !errors.Is(err, tc.err) || prog != tc.prog || !slices.Equal(args, tc.args) {
				t.Errorf("Program(%q, %q) = %q %q %v, want %q %q %v", tc.path, tc.base, prog, args, err, tc.prog, tc.args, tc.err)
			}
			if err != nil && tc.base != "" && tc.err != ErrEmptyCommand && !strings.Contains(err.Error(), tc.base) {
				t.Errorf("error %q does not name the base command %q", err, tc.base)
			}
		})
	}
}

func TestSessionArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Session
		want []string
	}{
		{"nothing", Session{}, nil},
		{"every flag, in order", Session{Model: "opus", Resume: "c-1", Fork: true, Continue: true, MaxTurns: 4,
			AppendSystemPrompt: "be brief", Extra: []string{"--add-dir=/x", "--verbose"}},
			[]string{"--model=opus", "--resume=c-1", "--fork-session", "--continue", "--max-turns=4",
				"--append-system-prompt=be brief", "--add-dir=/x", "--verbose"}},
		{"user values cannot become flags", Session{Model: "--dangerously-skip-permissions", AppendSystemPrompt: "-x"},
			[]string{"--model=--dangerously-skip-permissions", "--append-system-prompt=-x"}},
		{"fork without resume", Session{Fork: true}, nil},
		{"fork with continue", Session{Fork: true, Continue: true}, []string{"--continue", "--fork-session"}},
		{"no max turns", Session{MaxTurns: 0, Continue: true}, []string{"--continue"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.Args(); !slices.Equal(got, tc.want) {
				t.Errorf("Args() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestSessionTypedArgs: typed options become --flag=value, one per list
// value (the CLI's list flags are variadic: only the = form keeps them from
// swallowing the next argument), after the session flags and before Extra.
func TestSessionTypedArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Session
		want []string
	}{
		{"every typed flag, in order", Session{Model: "opus", AllowedTools: []string{"Bash(git *)", "Read"},
			DisallowedTools: []string{"Write"}, MCPConfig: `{"mcpServers":{}}`, AddDirs: []string{"/a", "/b"},
			FallbackModel: "sonnet", SystemPrompt: "sp", Agents: `{"r":{}}`, SettingSources: []string{"user", "local"},
			Extra: []string{"--verbose"}},
			[]string{"--model=opus", "--allowedTools=Bash(git *)", "--allowedTools=Read", "--disallowedTools=Write",
				`--mcp-config={"mcpServers":{}}`, "--add-dir=/a", "--add-dir=/b", "--fallback-model=sonnet",
				"--system-prompt=sp", `--agents={"r":{}}`, "--setting-sources=user,local", "--verbose"}},
		{"no setting sources at all", Session{HasSettingSources: true}, []string{"--setting-sources="}},
		{"empty and unset: the CLI's default", Session{SettingSources: []string{}}, nil},
		{"a list counts without the flag", Session{SettingSources: []string{"project"}}, []string{"--setting-sources=project"}},
		{"values cannot become flags", Session{SystemPrompt: "-p", AddDirs: []string{"--help"}},
			[]string{"--add-dir=--help", "--system-prompt=-p"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.Args(); !slices.Equal(got, tc.want) {
				t.Errorf("Args() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestEnvLayers(t *testing.T) {
	env, dropped := Env{
		Base: []string{"A=base", "B=base", "C=base", "CLAUDECODE=1", "ANTHROPIC_API_KEY=k", "ANTHROPIC_BASE_URL=http://x",
			proc.MarkerEnv + "=stale-run", "=C:=C:\\odd", "NOEQUALS"},
		Config:       map[string]string{"B": "config", "C": "config", "EMPTY": ""},
		Run:          map[string]string{"C": "run"},
		RemoveAPIKey: true,
		RunID:        "run-1",
	}.Build()
	want := []string{"A=base", "ANTHROPIC_BASE_URL=http://x", "B=config", "C=run", "EMPTY=", proc.MarkerEnvEntry("run-1")}
	if !slices.Equal(env, want) || len(dropped) != 0 {
		t.Errorf("Build() = %q, %v; want %q and nothing dropped", env, dropped, want)
	}
	if env, _ := (Env{Base: []string{"ANTHROPIC_API_KEY=k"}}).Build(); !slices.Contains(env, "ANTHROPIC_API_KEY=k") {
		t.Errorf("without RemoveAPIKey the key must stay: %q", env)
	}
}

// TestEnvDropsWhatWouldCorruptTheBlock: both modes build their environment
// here, so an entry is refused the same way for background and terminal
// runs, and said so.
func TestEnvDropsWhatWouldCorruptTheBlock(t *testing.T) {
	env, dropped := Env{
		Base:   []string{"OK=base", "NULVAL=base"},
		Config: map[string]string{"B=": "x", "NUL\x00NAME": "x", "": "x", "NULVAL": "a\x00b", "GOOD": "config"},
		Run:    map[string]string{"R=UN": "x", "RUN": "ok"},
		RunID:  "run-2",
	}.Build()
	want := []string{"GOOD=config", "OK=base", "RUN=ok", proc.MarkerEnvEntry("run-2")}
	if !slices.Equal(env, want) {
		t.Errorf("env %q, want %q", env, want)
	}
	wantDropped := []Dropped{{"", FromConfig}, {"B=", FromConfig}, {"NUL\x00NAME", FromConfig}, {"NULVAL", FromConfig}, {"R=UN", FromRun}}
	if !slices.Equal(dropped, wantDropped) {
		t.Errorf("dropped %q, want %q", dropped, wantDropped)
	}
	msg := Dropped{Name: "B=", From: FromConfig}.String()
	for _, part := range []string{`"B="`, "claude.env", "rename"} {
		if !strings.Contains(msg, part) {
			t.Errorf("message %q lacks %q", msg, part)
		}
	}
}

// FuzzProgram: any base command either splits into at least one word or
// fails with one of Program's errors; it never panics.
func FuzzProgram(f *testing.F) {
	for _, s := range []string{`npx -y '@a/b@1' "--a b"`, `a\ b "c\"d"`, `'open`, `"x`, " ", `\`, `"\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		prog, _, err := Program("/bin/claude", s)
		switch {
		case s == "":
			if err != nil || prog != "/bin/claude" {
				t.Fatalf("empty base command: %q %v", prog, err)
			}
		case err != nil && !errors.Is(err, ErrEmptyCommand) && !errors.Is(err, ErrUnterminatedQuote):
			t.Fatalf("unexpected error %v", err)
		}
	})
}

// TestBuildDropsRelaySecrets: claude-relay's own credentials inherited from
// the helper never reach the CLI (every tool would see them); other
// CLAUDE_RELAY_ variables, and what claude.env or the run set on purpose,
// do.
func TestBuildDropsRelaySecrets(t *testing.T) {
	base := []string{
		"CLAUDE_RELAY_BACKEND_TOKEN=t1", "CLAUDE_RELAY_BACKEND_TOKEN_FILE=/f", "CLAUDE_RELAY_BACKEND_TOKEN_FD=3",
		"CLAUDE_RELAY_SERVE_TOKENS=t2", "CLAUDE_RELAY_SERVE_NOTIFY_URL=https://ntfy/x", "CLAUDE_RELAY_SERVE_DB=postgres://u:p@h/db",
		"claude_relay_backend_token=t3", "CLAUDE_RELAY_DATA_DIR=/d", "CLAUDE_RELAY_BACKEND_URL=http://b", "ANTHROPIC_API_KEY=k",
		"PATH=/bin",
	}
	env, _ := Env{Base: base, Config: map[string]string{"CLAUDE_RELAY_MY_KEY": "chosen"}, RunID: "r"}.Build()
	got := strings.Join(env, "\n")
	for _, gone := range []string{"t1", "/f", "TOKEN_FD", "t2", "ntfy", "postgres", "t3"} {
		if strings.Contains(got, gone) {
			t.Errorf("the CLI's environment holds %q:\n%s", gone, got)
		}
	}
	for _, kept := range []string{"CLAUDE_RELAY_DATA_DIR=/d", "CLAUDE_RELAY_BACKEND_URL=http://b", "ANTHROPIC_API_KEY=k",
		"PATH=/bin", "CLAUDE_RELAY_MY_KEY=chosen"} {
		if !strings.Contains(got, kept) {
			t.Errorf("the CLI's environment lacks %q:\n%s", kept, got)
		}
	}
}
