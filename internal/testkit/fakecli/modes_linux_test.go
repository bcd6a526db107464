package fakecli_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/testkit/fakecli"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
)

func TestNormalAnswersControlRequestsAndRunsATurn(t *testing.T) {
	p := start(t, fakecli.ModeNormal, nil)
	p.sendControl("r1", map[string]any{"subtype": "initialize", "hooks": map[string]any{}})
	p.sendControl("r2", map[string]any{"subtype": "set_permission_mode", "mode": "acceptEdits"})
	p.sendControl("r3", map[string]any{"subtype": "no_such_request"})
	p.sendUser("hi")

	r1 := p.expect("control_response")
	if r1.str("response", "subtype") != "success" || r1.str("response", "request_id") != "r1" {
		t.Fatalf("initialize answer: %v", r1)
	}
	if int(r1.num("response", "response", "pid")) != p.cmd.Process.Pid {
		t.Errorf("initialize pid = %v, want %d", r1.get("response", "response", "pid"), p.cmd.Process.Pid)
	}
	r2 := p.expect("control_response")
	if r2.str("response", "request_id") != "r2" || r2.str("response", "response", "mode") != "acceptEdits" {
		t.Fatalf("set_permission_mode answer: %v", r2)
	}
	r3 := p.expect("control_response")
	if r3.str("response", "subtype") != "error" || r3.str("response", "error") == "" {
		t.Fatalf("unknown request answer: %v", r3)
	}

	cwd, _ := os.Getwd()
	init := p.expect("system")
	if init.str("subtype") != "init" || init.str("session_id") != fakecli.DefaultSessionID ||
		init.str("permissionMode") != "acceptEdits" || init.str("model") != fakecli.Model ||
		init.str("cwd") != cwd || !slices.Contains(init.get("tools").([]any), any("Bash")) {
		t.Fatalf("init: %v", init)
	}
	a := p.expect("assistant")
	if a.str("message", "content", 0, "text") != fakecli.ReplyText || a.str("session_id") != fakecli.DefaultSessionID {
		t.Fatalf("assistant: %v", a)
	}
	r := p.expect("result")
	checkSuccess(t, r, 1)
	if r.str("result") != fakecli.ReplyText || r.num("usage", "input_tokens") != 10 || r.num("usage", "output_tokens") != 5 {
		t.Fatalf("result: %v", r)
	}

	p.sendUser("again") // a second turn in the same session
	p.expect("system")
	p.expect("assistant")
	checkSuccess(t, p.expect("result"), 1)
	p.stdin.Close()
	p.expectEOF(0)
}

func checkSuccess(t *testing.T, r msg, turns int) {
	t.Helper()
	if r.str("subtype") != "success" || r.get("is_error") != false || r.num("num_turns") != float64(turns) ||
		r.num("total_cost_usd") != fakecli.CostUSD || r.get("duration_ms") == nil || r.str("session_id") == "" {
		t.Fatalf("result: %v", r)
	}
}

func TestSessionID(t *testing.T) {
	tests := []struct {
		name string
		opts []fakecli.Option
		args []string
		want string // "" means a fresh id
	}{
		{name: "default", want: fakecli.DefaultSessionID},
		{name: "option", opts: []fakecli.Option{fakecli.WithSessionID("sess-opt")}, want: "sess-opt"},
		{name: "resume", args: []string{"--resume", "sess-old"}, want: "sess-old"},
		{name: "option wins", opts: []fakecli.Option{fakecli.WithSessionID("sess-opt")}, args: []string{"--resume=sess-old"}, want: "sess-opt"},
		{name: "fork", args: []string{"--resume", "sess-old", "--fork-session"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := start(t, fakecli.ModeNormal, tt.opts, tt.args...)
			p.sendUser("hi")
			p.stdin.Close()
			var ids []string
			for line, ok := p.nextRaw(); ok; line, ok = p.nextRaw() {
				var m msg
				if err := json.Unmarshal(line, &m); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, m.str("session_id"))
			}
			if len(ids) != 3 || ids[0] != ids[1] || ids[1] != ids[2] {
				t.Fatalf("session ids of init, assistant, result: %q", ids)
			}
			switch {
			case tt.want != "" && ids[0] != tt.want:
				t.Fatalf("session_id = %q, want %q", ids[0], tt.want)
			case tt.want == "" && (ids[0] == "sess-old" || ids[0] == fakecli.DefaultSessionID || len(ids[0]) != 36):
				t.Fatalf("forked session_id = %q, want a fresh uuid", ids[0])
			}
		})
	}
}

func TestToolPermission(t *testing.T) {
	tests := []struct {
		name     string
		hooks    map[string]any
		decision string // the hook's permissionDecision, when hooked
		answer   map[string]any
		denied   string // the tool_result text on deny
	}{
		{name: "allow", answer: map[string]any{"behavior": "allow", "updatedInput": map[string]any{"command": fakecli.ToolCommand}}},
		{name: "deny", answer: map[string]any{"behavior": "deny", "message": "not today"}, denied: "not today"},
		{
			name:     "hook asks, then allow",
			hooks:    map[string]any{"PreToolUse": []any{map[string]any{"matcher": "Bash", "hookCallbackIds": []string{"hook_0"}}}},
			decision: "ask",
			answer:   map[string]any{"behavior": "allow", "updatedInput": map[string]any{}},
		},
		{
			name:     "hook denies",
			hooks:    map[string]any{"PreToolUse": []any{map[string]any{"matcher": "Bash|Edit", "hookCallbackIds": []string{"hook_0"}}}},
			decision: "deny",
			denied:   "Blocked by hook: policy",
		},
		{
			name:   "hook for another tool",
			hooks:  map[string]any{"PreToolUse": []any{map[string]any{"matcher": "Edit", "hookCallbackIds": []string{"hook_0"}}}},
			answer: map[string]any{"behavior": "allow", "updatedInput": map[string]any{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := start(t, fakecli.ModeTool, nil)
			p.sendControl("r1", map[string]any{"subtype": "initialize", "hooks": tt.hooks})
			p.sendUser("run it")
			p.expect("control_response")
			p.expect("system")
			a := p.expect("assistant")
			if a.str("message", "content", 0, "type") != "tool_use" || a.str("message", "content", 0, "name") != "Bash" ||
				a.str("message", "content", 0, "id") != fakecli.ToolUseID {
				t.Fatalf("assistant: %v", a)
			}
			if tt.decision != "" {
				h := p.expect("control_request")
				if h.str("request", "subtype") != "hook_callback" || h.str("request", "callback_id") != "hook_0" ||
					h.str("request", "input", "tool_name") != "Bash" || h.str("request", "input", "hook_event_name") != "PreToolUse" {
					t.Fatalf("hook_callback: %v", h)
				}
				p.sendControlResponse(h.str("request_id"), map[string]any{"hookSpecificOutput": map[string]any{
					"hookEventName": "PreToolUse", "permissionDecision": tt.decision, "permissionDecisionReason": "policy",
				}})
			}
			if tt.answer != nil {
				c := p.expect("control_request")
				if c.str("request", "subtype") != "can_use_tool" || c.str("request", "tool_name") != "Bash" ||
					c.str("request", "input", "command") != fakecli.ToolCommand || c.str("request", "tool_use_id") != fakecli.ToolUseID {
					t.Fatalf("can_use_tool: %v", c)
				}
				p.sendControlResponse("someone-else", map[string]any{"behavior": "deny"}) // ignored: wrong id
				p.sendControlResponse(c.str("request_id"), tt.answer)
			}
			u := p.expect("user")
			isErr := u.get("message", "content", 0, "is_error")
			if u.str("message", "content", 0, "tool_use_id") != fakecli.ToolUseID || isErr != (tt.denied != "") {
				t.Fatalf("tool_result: %v", u)
			}
			if tt.denied != "" && u.str("message", "content", 0, "content") != tt.denied {
				t.Fatalf("deny text = %q, want %q", u.str("message", "content", 0, "content"), tt.denied)
			}
			p.expect("assistant")
			r := p.expect("result")
			checkSuccess(t, r, 2)
			if denials, _ := r.get("permission_denials").([]any); len(denials) != map[bool]int{true: 1}[tt.denied != ""] {
				t.Fatalf("permission_denials: %v", r.get("permission_denials"))
			}
			p.stdin.Close()
			p.expectEOF(0)
		})
	}
}

func TestToolStdinClosedWhileAsking(t *testing.T) {
	p := start(t, fakecli.ModeTool, nil)
	p.sendUser("run it")
	p.expect("system")
	p.expect("assistant")
	p.expect("control_request")
	p.stdin.Close()
	if u := p.expect("user"); u.get("message", "content", 0, "is_error") != true {
		t.Fatalf("tool_result after EOF: %v", u)
	}
	p.expect("assistant")
	p.expect("result")
	p.expectEOF(0)
}

func TestSlow(t *testing.T) {
	t.Run("completes", func(t *testing.T) {
		p := start(t, fakecli.ModeSlow, []fakecli.Option{fakecli.WithLineDelay(time.Millisecond)})
		p.sendUser("hi")
		p.expect("system")
		p.expect("assistant")
		checkSuccess(t, p.expect("result"), 1)
		p.stdin.Close()
		p.expectEOF(0)
	})
	t.Run("interrupt", func(t *testing.T) {
		p := start(t, fakecli.ModeSlow, []fakecli.Option{fakecli.WithLineDelay(time.Hour)})
		p.sendUser("hi")
		p.expect("system")
		p.sendControl("int1", map[string]any{"subtype": "interrupt"})
		if c := p.expect("control_response"); c.str("response", "subtype") != "success" || c.str("response", "request_id") != "int1" {
			t.Fatalf("interrupt answer: %v", c)
		}
		r := p.expect("result")
		if _, has := r["result"]; r.str("subtype") != "error_during_execution" || r.get("is_error") != true || has {
			t.Fatalf("interrupted result: %v", r)
		}
		p.stdin.Close()
		p.expectEOF(0)
	})
}

func TestMalformed(t *testing.T) {
	p := start(t, fakecli.ModeMalformed, nil)
	p.sendUser("hi")
	var notJSON, empty, unknown, results int
	var types []string
	for results == 0 {
		line, ok := p.nextRaw()
		if !ok {
			t.Fatal("stdout ended before the result")
		}
		var m msg
		switch {
		case len(bytes.TrimSpace(line)) == 0:
			empty++
		case json.Unmarshal(line, &m) != nil:
			notJSON++
		default:
			types = append(types, m.str("type"))
			switch m.str("type") {
			case "system", "assistant":
			case "result":
				checkSuccess(t, m, 1)
				results++
			default:
				unknown++
			}
		}
	}
	if notJSON < 2 || empty != 1 || unknown != 1 || !slices.Contains(types, "assistant") {
		t.Fatalf("not JSON %d, empty %d, unknown %d, types %v", notJSON, empty, unknown, types)
	}
	p.stdin.Close()
	p.expectEOF(0)
}

func TestHugeLine(t *testing.T) {
	t.Run("sized", func(t *testing.T) {
		const size = 1<<20 + 7 // not a multiple of the chunk size
		p := start(t, fakecli.ModeHugeLine, []fakecli.Option{fakecli.WithHugeLineSize(size)})
		p.sendUser("hi")
		p.expect("system")
		a := p.expect("assistant")
		if n := len(a.str("message", "content", 0, "text")); n != size {
			t.Fatalf("text block is %d bytes, want %d", n, size)
		}
		checkSuccess(t, p.expect("result"), 1)
	})
	t.Run("default", func(t *testing.T) {
		p := start(t, fakecli.ModeHugeLine, nil)
		p.sendUser("hi")
		p.expect("system")
		line, _ := p.nextRaw()
		// Decoding 20 MB under -race is slow; the sized case checks the shape.
		if len(line) < fakecli.DefaultHugeLineSize || !bytes.HasPrefix(line, []byte(`{"type":"assistant"`)) ||
			!bytes.HasSuffix(line, []byte("}")) {
			t.Fatalf("huge line: %d bytes, starts %.40q", len(line), line)
		}
		checkSuccess(t, p.expect("result"), 1)
	})
}

func TestHang(t *testing.T) {
	p := start(t, fakecli.ModeHang, nil)
	p.sendControl("r1", map[string]any{"subtype": "initialize"})
	p.sendUser("hi")
	if pids := waitPids(t, p.pidFile, 1); pids[0] != p.cmd.Process.Pid {
		t.Fatalf("pid file lists %v, want %d", pids, p.cmd.Process.Pid)
	}
	select {
	case line, ok := <-p.lines:
		t.Fatalf("hang wrote %q (open %v)", line, ok)
	case <-time.After(300 * time.Millisecond):
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the fake's group: %v", err)
	}
	if _, ok := p.nextRaw(); ok {
		t.Fatal("output after kill")
	}
	var exit *exec.ExitError
	if err := p.wait(); !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("wait: %v, want killed by SIGKILL", err)
	}
	if s := p.stderr.String(); s != "" {
		t.Fatalf("stderr: %q", s)
	}
}

func TestNoExit(t *testing.T) {
	p := start(t, fakecli.ModeNoExit, nil)
	pid := p.cmd.Process.Pid
	p.sendUser("hi")
	p.expect("system")
	p.expect("assistant")
	checkSuccess(t, p.expect("result"), 1)
	p.stdin.Close()
	select {
	case line, ok := <-p.lines:
		t.Fatalf("want no more output and stdout open, got %q (open %v)", line, ok)
	case <-time.After(300 * time.Millisecond):
	}
	if !alive(pid) {
		t.Fatal("the fake exited after stdin EOF; ModeNoExit must keep running")
	}
	// SIGINT is not ignored: the first signal of a kill ends it.
	if err := syscall.Kill(pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var exit *exec.ExitError
	if err := p.wait(); !errors.As(err, &exit) {
		t.Fatalf("wait: %v, want an exit by signal", err)
	}
}

func TestCrash(t *testing.T) {
	p := start(t, fakecli.ModeCrash, nil)
	p.sendUser("hi")
	p.expect("system")
	p.expect("assistant")
	p.expectEOF(3)
	if !strings.Contains(p.stderr.String(), "crash") {
		t.Fatalf("stderr: %q", p.stderr.String())
	}
}

func TestANSI(t *testing.T) {
	p := start(t, fakecli.ModeANSI, nil)
	p.sendUser("hi")
	p.expect("system")
	p.expect("assistant")
	checkSuccess(t, p.expect("result"), 1)
	p.stdin.Close()
	p.expectEOF(0)
	if s := p.stderr.String(); !strings.Contains(s, "\x1b[31merror: boom\x1b[0m") {
		t.Fatalf("stderr: %q", s)
	}
}

func TestIgnoreSignals(t *testing.T) {
	p := start(t, fakecli.ModeIgnoreSignals, nil)
	pid := p.cmd.Process.Pid
	p.sendUser("hi")
	p.expect("system")
	// Both signals are discarded when sent, since the disposition is SIG_IGN.
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		if err := syscall.Kill(pid, sig); err != nil {
			t.Fatal(err)
		}
	}
	p.sendControl("int1", map[string]any{"subtype": "interrupt"})
	if c := p.expect("control_response"); c.str("response", "subtype") != "success" {
		t.Fatalf("interrupt answer: %v", c)
	}
	p.stdin.Close()
	select {
	case line, ok := <-p.lines:
		t.Fatalf("want no more output, got %q (open %v)", line, ok)
	case <-time.After(200 * time.Millisecond):
	}
	if !alive(pid) {
		t.Fatal("the fake died; it should ignore SIGTERM, SIGINT, interrupt and EOF")
	}
}

func TestGrandchild(t *testing.T) {
	p := start(t, fakecli.ModeGrandchild, nil)
	p.sendUser("hi")
	p.expect("system")
	pids := waitPids(t, p.pidFile, 3)
	if len(pids) != 3 || pids[0] != p.cmd.Process.Pid || pids[1] == pids[2] {
		t.Fatalf("pid file lists %v; want the fake (%d), its child, its grandchild", pids, p.cmd.Process.Pid)
	}
	for _, pid := range pids {
		if !alive(pid) {
			t.Fatalf("process %d of %v is not alive", pid, pids)
		}
	}
	if sid := sessionOf(t, pids[2]); sid != pids[2] || sid == sessionOf(t, pids[0]) {
		t.Fatalf("grandchild's session is %d; want a session of its own", sid)
	}
	if err := syscall.Kill(pids[0], syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pids[2], syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.sendControl("int1", map[string]any{"subtype": "interrupt"})
	if c := p.expect("control_response"); c.str("response", "subtype") != "success" {
		t.Fatalf("interrupt answer: %v", c)
	}
	if !alive(pids[0]) || !alive(pids[2]) {
		t.Fatal("SIGTERM or interrupt ended the fake or its grandchild; both should ignore them")
	}

	// Leaf first, so each parent reaps its child and nothing stays a zombie.
	for i := len(pids) - 1; i >= 0; i-- {
		if err := syscall.Kill(pids[i], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			p.wait()
		}
		waitReaped(t, pids[i])
	}
}

// waitReaped polls until pid has no /proc entry, not even as a zombie.
func waitReaped(t *testing.T, pid int) {
	t.Helper()
	poll.Until(t, patience, fmt.Sprintf("process %d to be reaped", pid), func() bool { return procStat(pid) == nil })
}

func TestFlood(t *testing.T) {
	const n = 5000
	p := start(t, fakecli.ModeFlood, []fakecli.Option{fakecli.WithFloodLines(n)})
	p.sendUser("hi")
	p.expect("system")
	events := 0
	for {
		m := p.next()
		if m.str("type") != "stream_event" {
			if m.str("type") != "assistant" {
				t.Fatalf("after %d events got %v", events, m)
			}
			break
		}
		if m.str("session_id") != fakecli.DefaultSessionID || m.str("event", "delta", "type") != "text_delta" {
			t.Fatalf("event %d: %v", events, m)
		}
		events++
	}
	if events != n {
		t.Fatalf("got %d stream_event lines, want %d", events, n)
	}
	checkSuccess(t, p.expect("result"), 1)
	p.stdin.Close()
	p.expectEOF(0)
}

func TestRecordFile(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "record")
	p := start(t, fakecli.ModeNormal, []fakecli.Option{fakecli.WithRecordFile(rec)}, "--model", "claude-test")
	p.sendControl("r1", map[string]any{"subtype": "initialize"})
	p.sendUser("hi")
	p.expect("control_response")
	if init := p.expect("system"); init.str("model") != "claude-test" {
		t.Fatalf("--model not honoured: %v", init)
	}
	p.stdin.Close()
	for _, ok := p.nextRaw(); ok; _, ok = p.nextRaw() {
	}
	p.expectEOF(0)

	f, err := os.Open(rec)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	for s := bufio.NewScanner(f); s.Scan(); {
		lines = append(lines, s.Text())
	}
	if len(lines) != 3 || !strings.Contains(lines[0], `"--model","claude-test"`) ||
		!strings.Contains(lines[1], `"initialize"`) || !strings.Contains(lines[2], `"type":"user"`) {
		t.Fatalf("record file:\n%s", strings.Join(lines, "\n"))
	}
}
