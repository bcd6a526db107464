package localbackend

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
)

// The test binary plays claude-relay-server's ChildCommand (fakeChild),
// a helper that starts one and is then killed (fakeHelper), and a
// claude-relay that looks for its server (ServerPath).
const envChildTest = "CLAUDE_RELAY_CHILD_TEST"

// runChildTestMode runs the test binary as envChildTest says, if it does.
func runChildTestMode() {
	switch os.Getenv(envChildTest) {
	case "child":
		os.Exit(fakeChild(os.Getenv("CHILD_FAIL")))
	case "helper":
		os.Exit(fakeHelper())
	case "serverpath":
		p, err := ServerPath()
		fmt.Println(p, err)
		os.Exit(0)
	}
}

// fakeChild is RunChild with a backend that answers /healthz and, on
// /tokens, the serve tokens and the secrets it has now.
func fakeChild(fail string) int {
	start := func(_ context.Context, o Options) (*Conn, error) {
		if fail != "" {
			return nil, errors.New(fail)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }) //nolint:errcheck
		mux.HandleFunc("/tokens", func(w http.ResponseWriter, _ *http.Request) {
			var names []string
			for _, t := range o.Tokens() {
				names = append(names, t.Name+"="+t.Token.Reveal())
			}
			fmt.Fprintf(w, "%s token=%s helper=%s", strings.Join(names, ","), o.Token.Reveal(), o.HelperToken.Reveal())
		})
		srv := &http.Server{Handler: mux}
		go srv.Serve(ln) //nolint:errcheck // ends at Close
		return NewConn("http://"+ln.Addr().String(), o.Token, func() { srv.Close() }), nil
	}
	if err := RunChild(context.Background(), os.Stdin, os.Stdout, os.Stderr, start); err != nil {
		return 1
	}
	return 0
}

// fakeHelper starts a child, prints its pid and waits to be killed.
func fakeHelper() int {
	exe, _ := os.Executable()
	conn, err := StartChild(context.Background(), Child{Path: exe, Env: childEnv("child"), Stderr: os.Stderr,
		Options: Options{DB: "sqlite:x", Token: "t"}})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println(conn.URL)
	select {}
}

func childEnv(mode string, extra ...string) []string {
	// A -race binary sleeps 1 s at exit otherwise.
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	return append([]string{envChildTest + "=" + mode, "PATH=" + os.Getenv("PATH"), "GORACE=" + gorace}, extra...)
}

// get returns url's body, or "" when it does not answer.
func get(t *testing.T, url string) string {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Close = true // no idle connection left for goleak
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func testChild(t *testing.T, extraEnv ...string) Child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Child{Path: exe, Env: childEnv("child", extraEnv...), Stderr: io.Discard,
		Options: Options{DB: "sqlite:x", Token: "data-dir-token", HelperToken: "helper-token"}}
}

// TestChildServesAndStops: the child gets the options (tokens included)
// on its stdin, answers where it said, takes a reload, and Close stops it
// (twice is fine).
func TestChildServesAndStops(t *testing.T) {
	t.Parallel()
	c := testChild(t)
	tokens := []config.ServeToken{{Name: "ops", Token: "configured"}}
	c.Options.Tokens = func() []config.ServeToken { return tokens }
	conn, err := StartChild(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if !conn.Embedded || conn.Token != "data-dir-token" || !strings.HasPrefix(conn.URL, "http://127.0.0.1:") || conn.Dashboard != conn.URL {
		t.Errorf("conn: %+v", conn)
	}
	if got, want := get(t, conn.URL+"/tokens"), "ops=configured token=data-dir-token helper=helper-token"; got != want {
		t.Errorf("the child serves %q, want %q", got, want)
	}
	tokens = []config.ServeToken{{Name: "ops", Token: "reloaded"}}
	conn.Reload()
	poll.Until(t, 10*time.Second, "the child to take the reload", func() bool {
		return strings.HasPrefix(get(t, conn.URL+"/tokens"), "ops=reloaded ")
	})
	conn.Close()
	conn.Close()
	if got := get(t, conn.URL+"/healthz"); got != "" {
		t.Errorf("%s still answers after Close", conn.URL)
	}
}

// TestChildStartError: a child that cannot start says why, and that is
// StartChild's error, word for word.
func TestChildStartError(t *testing.T) {
	t.Parallel()
	const why = `embedded backend: serve.db "mysql://x": allowed: sqlite:PATH or a postgres:// URL`
	_, err := StartChild(t.Context(), testChild(t, "CHILD_FAIL="+why))
	var ce *ChildError
	if !errors.As(err, &ce) || err.Error() != why {
		t.Errorf("StartChild: %v, want the child's %q", err, why)
	}
}

// TestChildEndsWithItsHelper: a SIGKILLed helper's child stops (its stdin
// ends; on Linux SIGTERM comes too), so no backend outlives its helper.
func TestChildEndsWithItsHelper(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = childEnv("helper")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }() //nolint:errcheck // killed on purpose
	kill := func() {
		cmd.Process.Signal(syscall.SIGKILL) //nolint:errcheck // it may have ended
		<-exited
	}
	t.Cleanup(kill)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://") {
		t.Fatalf("helper said %q (%v)", line, err)
	}
	url := strings.TrimSpace(line)
	if get(t, url+"/healthz") != "ok" {
		t.Fatalf("the child does not answer at %s", url)
	}
	kill()
	poll.Until(t, 10*time.Second, "the child to stop with its helper", func() bool { return get(t, url+"/healthz") == "" })
}

// TestServerPath: claude-relay-server is looked for beside the executable
// only, and must be an executable file.
func TestServerPath(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	relay := filepath.Join(dir, "claude-relay")
	if err := os.Link(exe, relay); err != nil {
		t.Skip("cannot link the test binary:", err)
	}
	lookup := func() string {
		cmd := exec.Command(relay)
		cmd.Env = childEnv("serverpath")
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	server := filepath.Join(dir, ServerName)
	if got := lookup(); !strings.Contains(got, "claude-relay-server not found beside claude-relay (looked for "+server+": ") ||
		!strings.Contains(got, "no such file") {
		t.Errorf("none there: %q", got)
	}
	if err := os.WriteFile(server, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := lookup(); !strings.Contains(got, "not an executable file") {
		t.Errorf("not executable: %q", got)
	}
	if err := os.Chmod(server, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := lookup(); got != server+" <nil>" {
		t.Errorf("found: %q, want %s", got, server)
	}
}

// TestReadyWriter: the first line counts, split or not; what follows is
// dropped; a child that never ends its line is refused.
func TestReadyWriter(t *testing.T) {
	w := &readyWriter{got: make(chan childReady, 1)}
	b, _ := json.Marshal(childReady{URL: "http://127.0.0.1:1", Version: "v"})
	line := append(b, '\n')
	w.Write(line[:5])                                    //nolint:errcheck
	w.Write(append(line[5:], []byte("more\n")...))       //nolint:errcheck
	w.Write([]byte(`{"url":"http://elsewhere"}` + "\n")) //nolint:errcheck
	if r := <-w.got; r.URL != "http://127.0.0.1:1" || r.Version != "v" {
		t.Errorf("ready %+v", r)
	}
	w = &readyWriter{got: make(chan childReady, 1)}
	w.Write(make([]byte, maxReadyLine+1)) //nolint:errcheck
	if r := <-w.got; !strings.Contains(r.Error, "no ready line") {
		t.Errorf("an endless line: %+v", r)
	}
}
