package cli

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store/sqlite"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
	"github.com/claude-relay/claude-relay/internal/testkit/syncbuf"
)

// One SIGINT (or SIGTERM) to `run` while a tool runs cancels the run, drains
// and exits 130 (143), leaving no process behind. It used to print "run
// cancelled" and hang until a second signal.
func TestRunOneSignalEndsIt(t *testing.T) {
	for _, tt := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(tt.sig.String(), func(t *testing.T) {
			t.Parallel()
			cli := realcli.RealCLI(t)
			cwd := trustedDir(t, cli)
			marker := strconv.Itoa(4000 + int(tt.sig))
			api := mockapi.New(t, mockapi.Script{
				mockapi.ToolTurn("Bash", map[string]any{"command": "echo start && sleep " + marker, "description": "Wait"}),
				mockapi.TextTurn("never"),
			})
			cmd := exec.Command(os.Args[0], "run", "--max-turns=4", "wait")
			cmd.Env = append(helperEnv(t, cli, api), envTestMain+"=1")
			cmd.Dir = cwd
			// Its own process group, as a shell gives a job: the signal goes
			// to the group, as Ctrl-C does.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var out, errb syncbuf.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			waitFor(t, "the tool to run", func() bool { return len(sleepers(marker)) > 0 })
			if err := syscall.Kill(-cmd.Process.Pid, tt.sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				if code := exitCode(err); code != tt.code {
					t.Errorf("exit status %d, want %d", code, tt.code)
				}
			case <-time.After(extTimeout):
				cmd.Process.Kill() //nolint:errcheck
				t.Fatalf("run still alive after one %s; stdout:\n%s\nstderr:\n%s", tt.sig, out.String(), errb.String())
			}
			if !strings.Contains(out.String(), "run cancelled") {
				t.Errorf("stdout:\n%s", out.String())
			}
			waitFor(t, "no process left", func() bool { return len(sleepers(marker)) == 0 })
		})
	}
}

// sleepers lists live processes running `sleep arg`.
func sleepers(arg string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if strings.Contains(string(stat), ") Z ") {
			continue // zombies: pid 1 here does not reap
		}
		if string(b) == "sleep\x00"+arg+"\x00" {
			pids = append(pids, pid)
		}
	}
	return pids
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	poll.Until(t, extTimeout, what, ok)
}

// The words of the prompt are joined into one prompt, as `claude -p` does.
func TestRunJoinsPromptWords(t *testing.T) {
	cli := realcli.RealCLI(t)
	api := mockapi.New(t, mockapi.Script{mockapi.TextTurn("ok")})
	home, cwd := t.TempDir(), trustedDir(t, cli)
	env := map[string]string{"HOME": home, "CLAUDE_RELAY_CLAUDE_PATH": cli.Path}
	cliEnv := cli.Env(t, api.URL())
	code, out, errb := runApp(t, env, cliEnv, cwd, "run", "--session=words", "--max-turns=2", "say", "two", "words")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	st, err := sqlite.Open(t.Context(), filepath.Join(home, ".local/share/claude-relay/relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	evs, err := st.Events(t.Context(), "words", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var started struct{ Prompt string }
	for _, e := range evs {
		if e.EventType == "relay.run_started" {
			json.Unmarshal(e.EventData, &started) //nolint:errcheck
		}
	}
	if started.Prompt != "say two words" {
		t.Errorf("prompt %q, want %q", started.Prompt, "say two words")
	}
}

// Usage mistakes exit 2, whatever kind they are.
func TestRunUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{
		{"run", ""}, {"run"}, {"run", "--max-turns=abc", "x"}, {"nope"}, {"run", "--fork", "x"},
		{"run", "--resume=x", "y"}, {"run", "--cwd=/nonexistent", "x"}, {"run", "--approvals", "x"},
	} {
		if slices.Contains(args, "--approvals") {
			if tty, err := os.Open("/dev/tty"); err == nil {
				tty.Close()
				continue // a terminal to ask on: not a usage error here
			}
		}
		var out, errb strings.Builder
		home := t.TempDir()
		a := &App{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
			LookupEnv: func(k string) (string, bool) { return home, k == "HOME" }, Getwd: os.Getwd}
		if code := a.Run(t.Context(), args); code != exitUsage || !strings.HasPrefix(errb.String(), "claude-relay: ") {
			t.Errorf("%q: exit %d, stderr %q", args, code, errb.String())
		}
	}
}

// An unreachable backend is said at the start; the run still goes ahead
// and its events wait in the spool.
func TestRunSaysTheBackendIsUnreachable(t *testing.T) {
	cli := realcli.RealCLI(t)
	api := mockapi.New(t, mockapi.Script{mockapi.TextTurn("fine")})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	home, cwd := t.TempDir(), trustedDir(t, cli)
	env := map[string]string{"HOME": home, "CLAUDE_RELAY_CLAUDE_PATH": cli.Path, "CLAUDE_RELAY_BACKEND_URL": dead,
		"CLAUDE_RELAY_FORWARDER_DRAIN_TIMEOUT": "1s"}
	cliEnv := cli.Env(t, api.URL())
	code, out, errb := runApp(t, env, cliEnv, cwd, "run", "--max-turns=2", "hello")
	t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	if code != 0 || !strings.Contains(out.String(), "fine") {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(out.String(), "! the backend "+dead+" is not reachable (") ||
		!strings.Contains(out.String(), "events wait in the spool and go out when it answers") {
		t.Error("no word of the unreachable backend")
	}
	want := regexpLine(`^claude-relay: the backend has not taken \d+ events yet \(last error: .+\); they wait in .+/spool, and ` +
		"`claude-relay spool flush` or the next run delivers them$")
	if !want.MatchString(errb.String()) {
		t.Errorf("end-of-run line:\n%s", errb.String())
	}
}

func regexpLine(expr string) *regexp.Regexp { return regexp.MustCompile("(?m)" + expr) }

// The CLI's API retries show in the live view as they happen.
func TestRunShowsAPIRetries(t *testing.T) {
	cli := realcli.RealCLI(t)
	turn := mockapi.TextTurn("after the retry")
	turn.Fail = &mockapi.Failure{Status: 500, RetryAfter: 10 * time.Millisecond}
	api := mockapi.New(t, mockapi.Script{turn})
	home, cwd := t.TempDir(), trustedDir(t, cli)
	env := map[string]string{"HOME": home, "CLAUDE_RELAY_CLAUDE_PATH": cli.Path}
	cliEnv := cli.Env(t, api.URL())
	code, out, errb := runApp(t, env, cliEnv, cwd, "run", "--max-turns=2", "hello")
	t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	if code != 0 || !strings.Contains(out.String(), "after the retry") {
		t.Fatalf("exit %d", code)
	}
	if !regexpLine(`^↻ API error 500.*: retrying in [0-9.]+m?s, attempt 1 of \d+$`).MatchString(out.String()) {
		t.Error("no retry line in the live view")
	}
}
