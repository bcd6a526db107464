//go:build linux

package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/server/store/sqlite"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
	"github.com/claude-relay/claude-relay/internal/testkit/proctag"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
)

// budget bounds the scenario once the .vsix is built: code-server, three
// runs in the browser, the checks, serve's dashboard. It takes under a
// minute on a 2-core machine.
const budget = 5 * time.Minute

// buildBudget bounds `make vsix`: seconds when the Go build cache is warm
// (`make test` builds the .vsix first), minutes on a cold one.
const buildBudget = 10 * time.Minute

// backendWait bounds a wait for the embedded backend to hold an event: the
// forwarder delivers after the spool has the line, not before the UI shows it.
const backendWait = 30 * time.Second

// usage makes each scripted turn cost something visible ($0.0…).
var usage = mockapi.Usage{InputTokens: 2000, OutputTokens: 400}

// step is one line drive.mjs prints.
type step struct {
	Step       string          `json:"step"`
	OK         bool            `json:"ok"`
	MS         int64           `json:"ms"`
	Screenshot string          `json:"screenshot"`
	Error      string          `json:"error"`
	Detail     json.RawMessage `json:"detail"`
}

// driveConfig is drive.mjs's scenario file.
type driveConfig struct {
	URL        string   `json:"url"`
	Chromium   string   `json:"chromium"`
	Playwright string   `json:"playwright"`
	Shots      string   `json:"shots"`
	Steps      []string `json:"steps"`
	HoldAfter  []string `json:"holdAfter"`
	WaitMS     int      `json:"waitMs"`
	Bash       struct {
		Prompt  string   `json:"prompt"`
		Command string   `json:"command"`
		Output  []string `json:"output"`
	} `json:"bash"`
	Write struct {
		Prompt string `json:"prompt"`
		Path   string `json:"path"`
	} `json:"write"`
	Terminal struct {
		Prompt string `json:"prompt"`
		Expect string `json:"expect"`
	} `json:"terminal"`
}

// TestVSCodeExtension installs the .vsix into code-server and uses it from
// headless Chromium as a person would (CONTRACT §9): a background run whose
// Bash call is approved from the notification, a Write denied from it, and
// "Run in Terminal". It checks what the browser shows (drive.mjs) and what
// only the test can see: nothing runs until the extension is used (no
// helper, no `npm root -g`) and the first run starts the helper, the tool
// ran, the backend holds the run's events, the denied file does not exist,
// `claude-relay terminal` ran the prompt.
// Then `claude-relay serve` on the same data dir shows the three sessions
// in its dashboard (record_test.go): each list row and page, with figures
// equal to the CLI's own records. The dashboard's screenshots go to the
// shots dir beside drive.mjs's (dashboard-*.png).
func TestVSCodeExtension(t *testing.T) {
	if testing.Short() {
		t.Skip("the VS Code end-to-end test takes minutes; it does not run with -short")
	}
	tl := requireTools(t)
	cli := realcli.RealCLI(t)
	vsix := buildVSIX(t, buildBudget)
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()

	dir := keepDir(t)
	ws, ud, ext, shots, tmp := filepath.Join(dir, "workspace"), filepath.Join(dir, "user-data"),
		filepath.Join(dir, "extensions"), filepath.Join(dir, "shots"), filepath.Join(dir, "tmp")
	for _, d := range []string{ws, filepath.Join(ud, "User"), ext, shots, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatalf("create %s: %v", d, err)
		}
	}
	cli.TrustDir(ws) // the interactive CLI of "Run in Terminal" asks otherwise

	nonce := randomHex(t)
	// touch makes the command one the CLI asks about (it lets read-only
	// commands such as a bare echo run unasked) and leaves proof it ran.
	// printf's output ("e2e-out-<nonce>") is not in the command's text, so
	// finding it in the run's output shows the tool's result, not its call.
	touched := filepath.Join(ws, "touched-"+nonce)
	bashCommand := "touch " + touched + " && printf 'e2e-out-%s\\ne2e-tail-%s\\n' " + nonce + " " + nonce
	bashOutput := []string{"e2e-out-" + nonce, "e2e-tail-" + nonce}
	denied := filepath.Join(ws, "denied-"+nonce+".txt")
	terminalReply := "terminal-reply-" + nonce
	api := newRoutedAPI(t,
		routeSpec{"route-bash", mockapi.Script{
			{Blocks: []mockapi.Block{mockapi.ToolUse("Bash", map[string]any{"command": bashCommand, "description": "Print two markers"})}, Usage: usage},
			{Blocks: []mockapi.Block{mockapi.Text("Both markers printed.")}, Usage: usage},
		}},
		routeSpec{"route-write", mockapi.Script{
			{Blocks: []mockapi.Block{mockapi.ToolUse("Write", map[string]any{"file_path": denied, "content": "this file must not exist\n"})}, Usage: usage},
			{Blocks: []mockapi.Block{mockapi.Text("The write was denied, so I left the file alone.")}, Usage: usage},
		}},
		routeSpec{"route-terminal", mockapi.Script{{Blocks: []mockapi.Block{mockapi.Text(terminalReply)}, Usage: usage}}},
	)

	tag := fmt.Sprintf("%d-%s", os.Getpid(), nonce)
	// Registered after the scripted APIs, so it runs before they close.
	t.Cleanup(func() { proctag.Kill(t, tag) })
	env := codeServerEnv(cli.Env(t, api.URL()),
		"CLAUDE_RELAY_CLAUDE_PATH="+cli.Path,
		"TMPDIR="+tmp,
		"SHELL=/bin/bash",
		"LANG=C.UTF-8",
		proctag.Entry(tag),
	)

	helper := installExtension(t, ctx, tl, env, ud, ext, vsix)
	writeSettings(t, ud)
	cs := start(t, ctx, filepath.Join(dir, "code-server.log"), env, tl.node24, tl.codeServer,
		"--auth", "none", "--bind-addr", "127.0.0.1:0",
		"--disable-telemetry", "--disable-update-check", "--disable-workspace-trust",
		"--disable-getting-started-override",
		"--user-data-dir", ud, "--extensions-dir", ext, ws)
	base := cs.waitListening(t, 60*time.Second)
	t.Logf("code-server at %s (log %s)", base, cs.log)

	cfg := driveConfig{
		URL:        base + "/?folder=" + url.QueryEscape(ws),
		Chromium:   tl.chromium,
		Playwright: tl.playwright,
		Shots:      shots,
		Steps:      []string{"idle", "bash", "write", "terminal"},
		WaitMS:     60_000,
	}
	cfg.Bash.Prompt = "Print the two markers with a shell command (route-bash)"
	cfg.Bash.Command = bashCommand
	cfg.Bash.Output = bashOutput
	cfg.Write.Prompt = "Write the marker file (route-write)"
	cfg.Write.Path = denied
	cfg.Terminal.Prompt = "Say hello in the terminal (route-terminal)"
	cfg.Terminal.Expect = terminalReply

	steps, err := drive(t, ctx, tl, dir, tag, cfg, map[string]func(step){
		"idle":        func(s step) { checkNothingStarted(t, tag, s) },
		"bash-prompt": func(step) { checkHelperStarted(t, tag) },
	})
	if err != nil {
		diagnose(t, dir, ud)
		t.Fatalf("driving the workbench: %v", err)
	}
	done := make(map[string]bool)
	for _, s := range steps {
		done[s.Step] = s.OK
	}
	for _, want := range []string{"workbench", "idle", "bash-prompt", "bash-approval", "bash-output", "runs-view", "write-prompt", "write-approval", "write-end", "terminal-prompt", "terminal-output"} {
		if !done[want] {
			diagnose(t, dir, ud)
			t.Fatalf("drive.mjs ended without step %q passing", want)
		}
	}

	if _, err := os.Stat(touched); err != nil {
		t.Errorf("the approved Bash command did not run in the workspace: %v", err)
	}
	checkBash(t, api.API("route-bash"), cli.Home, nonce, bashOutput)
	checkDenied(t, api.API("route-write"), denied)
	checkTerminal(t, tag, cli.Home)

	// The record (issue 23): `serve` on the same data dir, its dashboard in
	// headless Chromium, each session's list row and page against the CLI's
	// own records as the backend stored them.
	d := startDashboard(t, ctx, helper, filepath.Join(dir, "serve.log"), cli.Home, shots, env)
	checkRecord(t, d, cfg, api)
	if t.Failed() {
		diagnose(t, dir, ud)
	}
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("random nonce: %v", err)
	}
	return hex.EncodeToString(b)
}

// codeServerEnv is the CLI's isolated environment (private HOME, the
// scripted API, no real ANTHROPIC_* or CLAUDE* of the caller's) with a PATH
// that has no claude-relay, so the extension uses the binary bundled in the
// .vsix, plus extra. The extension host, and so the helper, inherit it.
func codeServerEnv(cliEnv []string, extra ...string) []string {
	env := make([]string, 0, len(cliEnv)+len(extra))
	for _, kv := range cliEnv {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			kv = "PATH=" + pathWithoutHelper(p)
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// installExtension installs the .vsix the way a user does, checks that the
// bundled helper arrived executable (the extension's last resort) and
// returns its path.
func installExtension(t *testing.T, ctx context.Context, tl tools, env []string, ud, ext, vsix string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, tl.node24, tl.codeServer, "--user-data-dir", ud, "--extensions-dir", ext, "--install-extension", vsix)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "successfully installed") {
		t.Fatalf("code-server --install-extension %s: %v\n%s", vsix, err, out)
	}
	helpers, _ := filepath.Glob(filepath.Join(ext, "claude-relay.claude-relay-*", "bin", "claude-relay"))
	if len(helpers) != 1 {
		t.Fatalf("the installed extension has no bundled helper: %s matches %v (make vsix must put bin/claude-relay in the .vsix)",
			filepath.Join(ext, "claude-relay.claude-relay-*", "bin", "claude-relay"), helpers)
	}
	st, err := os.Stat(helpers[0])
	if err != nil {
		t.Fatalf("the bundled helper: %v", err)
	}
	if st.Mode().Perm()&0o111 == 0 {
		t.Fatalf("the bundled helper %s is not executable after install (mode %v): the extension cannot start it; the .vsix must keep bin/claude-relay's mode", helpers[0], st.Mode())
	}
	return helpers[0]
}

// writeSettings turns off what would stand between the test and the
// extension: workspace trust, the welcome page, AI chat panels, and the
// terminal's WebGL renderer (Chromium runs without a GPU; the DOM renderer
// also lets drive.mjs read the terminal's text).
func writeSettings(t *testing.T, ud string) {
	t.Helper()
	settings := map[string]any{
		"security.workspace.trust.enabled":                 false,
		"workbench.startupEditor":                          "none",
		"workbench.tips.enabled":                           false,
		"workbench.welcomePage.walkthroughs.openOnInstall": false,
		"workbench.secondarySideBar.defaultVisibility":     "hidden",
		"chat.disableAIFeatures":                           true,
		"telemetry.telemetryLevel":                         "off",
		"update.mode":                                      "none",
		"extensions.autoCheckUpdates":                      false,
		"extensions.autoUpdate":                            false,
		"terminal.integrated.gpuAcceleration":              "off",
	}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		t.Fatalf("encode settings: %v", err)
	}
	if err := os.WriteFile(filepath.Join(ud, "User", "settings.json"), b, 0o644); err != nil {
		t.Fatalf("write settings: %v", err)
	}
}

// drive runs drive.mjs on cfg, logging each step as it ends, and returns
// the steps; err says why the script failed. After a step named in checks
// passes, the script waits while its check runs.
func drive(t *testing.T, ctx context.Context, tl tools, dir, tag string, cfg driveConfig, checks map[string]func(step)) ([]step, error) {
	t.Helper()
	cfg.HoldAfter = slices.Sorted(maps.Keys(checks))
	cfgFile := filepath.Join(dir, "drive.json")
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatalf("encode the driver's config: %v", err)
	}
	if err := os.WriteFile(cfgFile, b, 0o644); err != nil {
		t.Fatalf("write %s: %v", cfgFile, err)
	}
	script := filepath.Join(moduleRoot(t), "editors", "vscode", "test", "e2e", "drive.mjs")
	stderr, err := os.Create(filepath.Join(dir, "drive.log"))
	if err != nil {
		t.Fatalf("create the driver's log: %v", err)
	}
	defer stderr.Close()
	cmd := exec.CommandContext(ctx, tl.node, script, cfgFile)
	// Chromium gets a HOME of its own and the tag, so cleanup finds it.
	cmd.Env = append(withoutVars(os.Environ(), "HOME", proctag.Env), "HOME="+filepath.Join(dir, "browser-home"), proctag.Entry(tag))
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("driver stdout: %v", err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatalf("driver stdin: %v", err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start node %s: %v", script, err)
	}
	var steps []step
	var failed *step
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		var s step
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Logf("drive.mjs: %s", sc.Bytes())
			continue
		}
		steps = append(steps, s)
		if s.OK {
			t.Logf("step %s passed in %.1fs (%s) %s", s.Step, float64(s.MS)/1000, s.Screenshot, s.Detail)
			if check := checks[s.Step]; check != nil {
				check(s)
				// A driver that has died no longer reads: Wait reports why.
				_, _ = io.WriteString(stdin, "go on\n")
			}
		} else {
			t.Logf("step %s FAILED after %.1fs: %s\n  screenshot: %s", s.Step, float64(s.MS)/1000, s.Error, s.Screenshot)
			failed = &steps[len(steps)-1]
		}
	}
	waitErr := cmd.Wait()
	switch {
	case failed != nil:
		return steps, fmt.Errorf("step %s failed: %s (screenshot %s; driver log %s)", failed.Step, failed.Error, failed.Screenshot, stderr.Name())
	case waitErr != nil:
		return steps, fmt.Errorf("node %s: %w; its log %s:\n%s", script, waitErr, stderr.Name(), tail(stderr.Name(), 4000))
	}
	return steps, nil
}

// checkBash: the approved command ran (its output went back to the model)
// and the embedded backend holds the run: its start, the tool call and its
// output, and the turn's result with a cost. The extension's runs stay open
// for a follow-up (keep_alive), so there is no run_completed yet.
func checkBash(t *testing.T, api *mockapi.Server, home, nonce string, output []string) {
	t.Helper()
	var ran bool
	for _, tr := range api.ToolResults() {
		if strings.Contains(tr.Content, strings.Join(output, "\n")) && !tr.IsError {
			ran = true
		}
	}
	if !ran {
		t.Errorf("the approved Bash command's output never reached the model; tool results: %+v", api.ToolResults())
	}
	var why string
	ok := poll.Within(backendWait, func() bool {
		found, reason := findSession(t, home, func(_ store.Session, evs []store.Event) string {
			var types []string
			has := map[string]bool{}
			for _, ev := range evs {
				types = append(types, ev.EventType)
				has[ev.EventType] = true
				data := string(ev.EventData)
				switch {
				case ev.EventType == "assistant" && strings.Contains(data, "touched-"+nonce):
					has["tool call"] = true
				case ev.EventType == "user" && strings.Contains(data, output[0]):
					has["tool output"] = true
				case ev.EventType == "result":
					var r struct {
						Cost float64 `json:"total_cost_usd"`
					}
					if json.Unmarshal(ev.EventData, &r) == nil && r.Cost > 0 {
						has["result with a cost"] = true
					}
				}
			}
			for _, want := range []string{"relay.run_started", "tool call", "tool output", "result with a cost"} {
				if !has[want] {
					return fmt.Sprintf("no %s among %v", want, types)
				}
			}
			return ""
		})
		why = reason
		return found
	})
	if !ok {
		t.Errorf("the embedded backend does not hold the Bash run (start, tool call and output, result with a cost) within %s: %s", backendWait, why)
	}
}

// checkDenied: the Write was refused to the model and left no file.
func checkDenied(t *testing.T, api *mockapi.Server, path string) {
	t.Helper()
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the denied Write left %s (stat: %v)", path, err)
	}
	trs := api.ToolResults()
	if len(trs) != 1 || !trs[0].IsError {
		t.Errorf("the denied Write should give the model one error tool result; got %+v", trs)
	}
}

// relayProcs lists the command lines of the test's claude-relay processes
// (argv[0] named claude-relay) and of its `npm root -g` runs, the CLI
// discovery a helper does when it starts.
func relayProcs(tag string) (relay, npmRoot []string) {
	for _, pid := range proctag.Find(tag) {
		c := cmdline(pid)
		f := strings.Fields(c)
		switch {
		case len(f) > 0 && filepath.Base(f[0]) == "claude-relay":
			relay = append(relay, c)
		case isNpmRoot(f):
			npmRoot = append(npmRoot, c)
		}
	}
	return relay, npmRoot
}

// isNpmRoot: `npm root -g`, run as npm itself or as node on npm's script.
func isNpmRoot(argv []string) bool {
	for i, a := range argv {
		if i > 1 {
			return false
		}
		if strings.HasPrefix(filepath.Base(a), "npm") {
			return slices.Equal(argv[i+1:], []string{"root", "-g"})
		}
	}
	return false
}

// checkNothingStarted: the workbench is up and the extension has run a
// command (drive.mjs's "idle" step), yet no helper runs and no CLI
// discovery either: the extension starts them on first use only. Its
// status bar item says so too.
func checkNothingStarted(t *testing.T, tag string, idle step) {
	t.Helper()
	relay, npmRoot := relayProcs(tag)
	if len(relay) > 0 || len(npmRoot) > 0 {
		t.Errorf("the window started processes before anything used Claude Relay: claude-relay %q, npm root -g %q", relay, npmRoot)
	}
	var d struct {
		StatusBar string `json:"statusBar"`
	}
	if err := json.Unmarshal(idle.Detail, &d); err != nil || d.StatusBar != "Claude Relay" {
		t.Errorf("before the first run the status bar item says %q (%v), want \"Claude Relay\" (no helper started)", d.StatusBar, err)
	}
}

// checkHelperStarted: the first run started `claude-relay extension`.
func checkHelperStarted(t *testing.T, tag string) {
	t.Helper()
	var relay []string
	ok := poll.Within(30*time.Second, func() bool {
		relay, _ = relayProcs(tag)
		for _, c := range relay {
			if f := strings.Fields(c); len(f) >= 2 && f[1] == "extension" {
				return true
			}
		}
		return false
	})
	if !ok {
		t.Errorf("no `claude-relay extension` process runs after the first prompt; the test's claude-relay processes: %q", relay)
	}
}

// checkTerminal: "Run in Terminal" started `claude-relay terminal`, still
// running in the workbench's terminal, and its hooks reached the backend.
func checkTerminal(t *testing.T, tag, home string) {
	t.Helper()
	var procs []string
	found := false
	for _, pid := range proctag.Find(tag) {
		c := cmdline(pid)
		procs = append(procs, c)
		if f := strings.Fields(c); len(f) >= 2 && filepath.Base(f[0]) == "claude-relay" && f[1] == "terminal" {
			found = true
		}
	}
	if !found {
		t.Errorf("no `claude-relay terminal` process runs after \"Run in Terminal\"; the test's processes: %q", procs)
	}
	var why string
	ok := poll.Within(backendWait, func() bool {
		found, reason := findSession(t, home, func(_ store.Session, evs []store.Event) string {
			for _, ev := range evs {
				if ev.Source == "terminal" && ev.EventType == "hook.UserPromptSubmit" && strings.Contains(string(ev.EventData), "route-terminal") {
					return ""
				}
			}
			return "no terminal hook.UserPromptSubmit with the prompt"
		})
		why = reason
		return found
	})
	if !ok {
		t.Errorf("the embedded backend has no terminal run of the prompt within %s: %s", backendWait, why)
	}
}

// findSession reports whether a session in the embedded backend's database
// (under home, where the helper keeps it) satisfies match, which returns ""
// for yes and else why not; the reason is the closest session's.
func findSession(t *testing.T, home string, match func(store.Session, []store.Event) string) (bool, string) {
	t.Helper()
	db := filepath.Join(home, ".local", "share", "claude-relay", "relay.db")
	if _, err := os.Stat(db); err != nil {
		return false, fmt.Sprintf("no database yet (%v)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := sqlite.Open(ctx, db)
	if err != nil {
		return false, fmt.Sprintf("open %s: %v", db, err)
	}
	defer st.Close()
	sessions, err := st.Sessions(ctx, store.ListOptions{Limit: 100})
	if err != nil {
		return false, fmt.Sprintf("list sessions: %v", err)
	}
	reasons := []string{fmt.Sprintf("%d sessions", len(sessions))}
	for _, s := range sessions {
		evs, err := st.Events(ctx, s.ID, 0, 10000)
		if err != nil {
			return false, fmt.Sprintf("events of %s: %v", s.ID, err)
		}
		r := match(s, evs)
		if r == "" {
			return true, ""
		}
		reasons = append(reasons, s.ID+": "+r)
	}
	return false, strings.Join(reasons, "; ")
}

// diagnose logs what shows why the workbench did not do what was expected:
// code-server's log, the driver's, the extension host's, and the
// extension's output channels (VS Code keeps each channel in a file).
func diagnose(t *testing.T, dir, ud string) {
	t.Helper()
	t.Logf("code-server log (%s):\n%s", filepath.Join(dir, "code-server.log"), tail(filepath.Join(dir, "code-server.log"), 3000))
	t.Logf("driver log (%s):\n%s", filepath.Join(dir, "drive.log"), tail(filepath.Join(dir, "drive.log"), 3000))
	_ = filepath.WalkDir(filepath.Join(ud, "logs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		name := d.Name()
		if strings.Contains(name, "Claude Relay") || name == "exthost.log" {
			t.Logf("%s:\n%s", path, tail(path, 4000))
		}
		return nil
	})
}
