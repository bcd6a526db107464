package acp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
)

// summary is one update in a line of text, so a whole replay reads as a
// list: "user: hi", "tool_call execute pending $ ls", "update completed
// [text]", ...
func summarize(t *testing.T, u acpsdk.SessionUpdate) string {
	t.Helper()
	m := onWire(t, u)
	text := func(c any) string {
		cm, _ := c.(map[string]any)
		if cm["type"] == "image" {
			return fmt.Sprintf("[image %v]", cm["mimeType"])
		}
		s, _ := cm["text"].(string)
		return s
	}
	switch m["sessionUpdate"] {
	case "user_message_chunk":
		return "user: " + text(m["content"])
	case "agent_message_chunk":
		return "agent: " + text(m["content"])
	case "agent_thought_chunk":
		return "thought: " + text(m["content"])
	case "tool_call":
		return fmt.Sprintf("tool_call %v %v %v", m["kind"], m["status"], m["title"])
	case "tool_call_update":
		var parts []string
		cs, _ := m["content"].([]any)
		for _, c := range cs {
			cm, _ := c.(map[string]any)
			switch cm["type"] {
			case "diff":
				parts = append(parts, fmt.Sprintf("diff %v", filepath.Base(fmt.Sprint(cm["path"]))))
			case "content":
				inner, _ := cm["content"].(map[string]any)
				parts = append(parts, fmt.Sprint(inner["type"]))
			}
		}
		return fmt.Sprintf("update %v %v", m["status"], parts)
	case "plan":
		var parts []string
		es, _ := m["entries"].([]any)
		for _, e := range es {
			em, _ := e.(map[string]any)
			parts = append(parts, fmt.Sprintf("%v (%v)", em["content"], em["status"]))
		}
		return "plan: " + strings.Join(parts, "; ")
	}
	return fmt.Sprint(m["sessionUpdate"])
}

func summarizeAll(t *testing.T, us []acpsdk.SessionUpdate) []string {
	t.Helper()
	out := make([]string, 0, len(us))
	for _, u := range us {
		out = append(out, summarize(t, u))
	}
	return out
}

func assertSummaries(t *testing.T, got []acpsdk.SessionUpdate, want []string) {
	t.Helper()
	g := summarizeAll(t, got)
	if !reflect.DeepEqual(g, want) {
		t.Errorf("replay:\n  %s\nwant:\n  %s", strings.Join(g, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestReplayTranscript replays a real transcript (CLI 2.1.330; the API
// request copies and system-prompt snapshots trimmed): thinking, text,
// Bash, TodoWrite, Write, Edit, an image Read and a failing Bash.
func TestReplayTranscript(t *testing.T) {
	got, err := replay("testdata/transcript_tools.jsonl", "/work/proj")
	if err != nil {
		t.Fatal(err)
	}
	assertSummaries(t, got, []string{
		"user: do the things please",
		"thought: Let me look around first.",
		"agent: I will run a command now.",
		"tool_call execute pending $ echo hi-there && echo second-line — Say hi",
		"update completed [text]",
		"plan: Write the file (in_progress); Edit the file (pending)",
		"tool_call edit pending Write /work/proj/old.txt",
		"update completed [diff old.txt]",
		"tool_call edit pending Edit /work/proj/old.txt",
		"update completed [diff old.txt]",
		"tool_call read pending Read /work/proj/pic.png",
		"update completed [image]",
		"tool_call execute pending $ ls /nonexistent-zz — List",
		"update failed [text]",
		"agent: All done here.",
	})
	// The Write's old text is the file as it was then (the result's
	// originalFile), never the disk now.
	for _, u := range got {
		if tu := u.ToolCallUpdate; tu != nil && len(tu.Content) == 1 && tu.Content[0].Diff != nil && tu.Content[0].Diff.NewText == "brand new\n" {
			if old := tu.Content[0].Diff.OldText; old == nil || *old != "line one\nline two\n" {
				t.Errorf("Write diff old text %v, want the original file", old)
			}
		}
	}
}

// TestReplayCommands replays a real transcript with an image prompt, a
// background subagent, its notification, and a /context slash command.
func TestReplayCommands(t *testing.T) {
	got, err := replay("testdata/transcript_commands.jsonl", "/work/proj")
	if err != nil {
		t.Fatal(err)
	}
	g := summarizeAll(t, got)
	if len(g) > 0 && strings.HasPrefix(g[len(g)-1], "agent: ## Context Usage") {
		g[len(g)-1] = "agent: ## Context Usage…" // the table is long
	}
	want := []string{
		"user: what is in this picture?",
		"user: [image image/png]",
		"tool_call think pending Subagent: List the files — Look around",
		"update completed [text]",
		"agent: Subagent finished.",
		// Another message right after: a break, or the client glues them.
		"agent: \n\nsecond run answer",
		"user: /context",
		"agent: ## Context Usage…",
	}
	if !reflect.DeepEqual(g, want) {
		t.Errorf("replay:\n  %s\nwant:\n  %s", strings.Join(g, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestReplaySkips(t *testing.T) {
	lines := []string{
		`{"type":"summary","summary":"Earlier work","leafUuid":"x"}`,
		`{"type":"user","isSidechain":true,"message":{"role":"user","content":"List the files"},"sessionId":"s1"}`,
		`{"type":"assistant","isSidechain":true,"message":{"id":"m0","role":"assistant","content":[{"type":"text","text":"subagent talk"}]},"sessionId":"s1"}`,
		`{"type":"user","isMeta":true,"message":{"role":"user","content":[{"type":"text","text":"[Image: source: /tmp/1.png]"}]},"sessionId":"s1"}`,
		`{"type":"user","isCompactSummary":true,"isVisibleInTranscriptOnly":true,"message":{"role":"user","content":"This session is being continued from a previous conversation."},"sessionId":"s1"}`,
		`{"type":"system","subtype":"compact_boundary","content":"Conversation compacted","sessionId":"s1"}`,
		`{"type":"user","message":{"role":"user","content":"<system-reminder>\nremember\n</system-reminder>"},"sessionId":"s1"}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]},"sessionId":"s1"}`,
		`{"type":"user","message":{"role":"user","content":"<command-name>/model</command-name>\n<command-message>model</command-message>\n<command-args>opus</command-args>"},"sessionId":"s1"}`,
		`{"type":"user","message":{"role":"user","content":"<local-command-stdout>Set model to opus</local-command-stdout>"},"sessionId":"s1"}`,
		`{"type":"user","message":{"role":"user","content":"go on"},"sessionId":"s1"}`,
		// The run stopped before this call's result.
		`{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"toolu_open","name":"Bash","input":{"command":"sleep 300"}}]},"sessionId":"s1"}`,
		`{"type":"assistant","message":{"id":"m2","role":"assist`, // torn by a crash
	}
	path := filepath.Join(t.TempDir(), "s1.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := replay(path, "/w")
	if err != nil {
		t.Fatal(err)
	}
	assertSummaries(t, got, []string{
		"user: /model opus",
		"agent: Set model to opus",
		"user: go on",
		"tool_call execute pending $ sleep 300",
		"update failed []",
	})
}

func TestReplayMissingTranscript(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.jsonl")
	_, err := replay(path, "/w/proj")
	if err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "/w/proj") ||
		!strings.Contains(err.Error(), "session id") {
		t.Errorf("error %v: want one that names the path and the cwd and says what to check", err)
	}
}

func TestEachLine(t *testing.T) {
	long := strings.Repeat("x", 200)
	in := "a\n\n" + long + "\n  \nb\r\n" + long + "c"
	var got []string
	if err := eachLine(strings.NewReader(in), 100, func(l []byte) { got = append(got, strings.TrimSpace(string(l))) }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("lines %q, want %q (long lines skipped, blank ones too)", got, want)
	}
}

func TestTranscriptPath(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	long := "/tmp/TestZZPathRule3971610561/003/" + strings.Repeat("long-dir-name.", 16)
	tests := []struct{ cwd, want string }{
		{"/tmp/TestZZCapture3285561613/003", "-tmp-TestZZCapture3285561613-003"},
		// Seen with CLI 2.1.330: every UTF-16 unit but [A-Za-z0-9] is '-'.
		{"/tmp/TestZZPathRule3971610561/003/a.b_c d-é~x+y@z", "-tmp-TestZZPathRule3971610561-003-a-b-c-d---x-y-z"},
		{"/w/🙂", "-w---"},
		// Seen with CLI 2.1.330: cut at 200, then a hash of the path.
		{long, "-tmp-TestZZPathRule3971610561-003-long-dir-name-long-dir-name-long-dir-name-long-dir-name-long-dir-name-long-dir-name-long-dir-name-long-dir-name-long-dir-name-long-dir-name-long-dir-name-long-dir-nam-cdpaxi"},
		// The CLI runs in the real directory.
		{link, projectDir(real)},
	}
	for _, tt := range tests {
		want := filepath.Join("/home/u", ".claude", "projects", tt.want, "abc.jsonl")
		if got := transcriptPath("/home/u", tt.cwd, "abc"); got != want {
			t.Errorf("transcriptPath(%q) =\n %s\nwant\n %s", tt.cwd, got, want)
		}
	}
}

// TestReplayRealCLI runs a conversation on the real CLI in a directory
// whose name the CLI must mangle, finds its transcript with
// transcriptPath, and replays it.
func TestReplayRealCLI(t *testing.T) {
	cli := realcli.RealCLI(t)
	cwd := filepath.Join(t.TempDir(), "proj.v2_é 🙂")
	if err := os.Mkdir(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	cli.TrustDir(cwd)
	png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
	if err := os.WriteFile(filepath.Join(cwd, "pic.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(cwd, "out.txt")
	api := mockapi.New(t, mockapi.Script{
		{Blocks: []mockapi.Block{mockapi.Thinking("Planning."), mockapi.Text("Running it."),
			mockapi.ToolUse("Bash", map[string]any{"command": "echo replay-me", "description": "Echo"})}},
		mockapi.ToolTurn("Write", map[string]any{"file_path": out, "content": "written\n"}),
		mockapi.ToolTurn("Read", map[string]any{"file_path": filepath.Join(cwd, "pic.png")}),
		mockapi.TextTurn("Finished."),
	})
	e := executor.New(executor.Options{CLIPath: cli.Path, BaseEnv: cli.Env(t, api.URL())})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := e.Run(ctx, executor.Request{RunOptions: executor.RunOptions{Cwd: cwd, MaxTurns: 6}, Prompt: "please replay me"},
		executor.ObserverFunc(func(executor.Event) {}), nil)
	if err != nil || res.Status != executor.StatusCompleted || res.ConversationID == "" {
		t.Fatalf("run: %+v, %v", res, err)
	}
	got, err := replay(transcriptPath(cli.Home, cwd, res.ConversationID), cwd)
	if err != nil {
		t.Fatal(err)
	}
	assertSummaries(t, got, []string{
		"user: please replay me",
		"thought: Planning.",
		"agent: Running it.",
		"tool_call execute pending $ echo replay-me — Echo",
		"update completed [text]",
		"tool_call edit pending Write " + out,
		"update completed [diff out.txt]",
		"tool_call read pending Read " + filepath.Join(cwd, "pic.png"),
		"update completed [image]",
		"agent: Finished.",
	})
	for _, u := range got {
		if tc := u.ToolCall; tc != nil && tc.Title == "$ echo replay-me — Echo" {
			raw, _ := json.Marshal(tc.RawInput)
			if !strings.Contains(string(raw), `"command":"echo replay-me"`) {
				t.Errorf("Bash rawInput %s", raw)
			}
		}
	}
}

func FuzzReplayLine(f *testing.F) {
	for _, p := range []string{"testdata/transcript_tools.jsonl", "testdata/transcript_commands.jsonl"} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		for l := range strings.SplitSeq(string(data), "\n") {
			if len(l) > 0 && len(l) < 4096 {
				f.Add([]byte(l))
			}
		}
	}
	r := replayer{t: newTranslator("/w")}
	r.t.read = nil
	f.Fuzz(func(t *testing.T, line []byte) {
		r.out = r.out[:0]
		r.line(line)
		for _, u := range r.out {
			if err := u.Validate(); err != nil {
				t.Fatalf("invalid update from %q: %v", line, err)
			}
			if _, err := json.Marshal(u); err != nil {
				t.Fatalf("update from %q does not encode: %v", line, err)
			}
		}
	})
}
