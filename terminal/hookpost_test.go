//go:build unix

package terminal

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hookPostBound is far above the helper's own 3s timeout: the helper must
// give up by itself, whatever the callback server does.
const hookPostBound = 15 * time.Second

// runHookPost runs `claude-relay hook-post url` as the CLI runs a command
// hook, with a broken config file that must not matter.
func runHookPost(t *testing.T, url, stdin string) (stdout, stderr string, took time.Duration, err error) {
	t.Helper()
	home := t.TempDir()
	cfg := filepath.Join(home, ".config", "claude-relay")
	if err := os.MkdirAll(cfg, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg, "config.yaml"), []byte("no_such_key: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*hookPostBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, relayBinary(t), "hook-post", url)
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	began := time.Now()
	err = cmd.Run()
	return out.String(), errb.String(), time.Since(began), err
}

func TestHookPostDelivers(t *testing.T) {
	got := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s with Content-Type %q, want a JSON POST", r.Method, r.Header.Get("Content-Type"))
		}
		got <- b
	}))
	defer srv.Close()
	const in = `{"hook_event_name":"SessionStart","session_id":"s"}`
	stdout, stderr, _, err := runHookPost(t, srv.URL+"/hook/x", in)
	if err != nil || stdout != "" || stderr != "" {
		t.Errorf("hook-post: %v, stdout %q, stderr %q; want exit 0 and silence", err, stdout, stderr)
	}
	select {
	case b := <-got:
		if string(b) != in {
			t.Errorf("posted %q, want stdin %q", b, in)
		}
	default:
		t.Error("nothing was posted")
	}
}

// A callback server that is gone or stuck never blocks or fails the CLI.
func TestHookPostNeverBlocksTheCLI(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/hook/x"
	ln.Close()

	stuck := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stuck:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(stuck)

	posted := make(chan struct{}, 1)
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { posted <- struct{}{} }))
	defer other.Close()
	_, port, _ := net.SplitHostPort(other.Listener.Addr().String())

	for _, tc := range []struct{ name, url string }{
		{"closed port", closed},
		{"stuck server", slow.URL + "/hook/x"},
		{"not 127.0.0.1", "http://localhost:" + port + "/hook/x"},
		{"not a URL", "http://127.0.0.1:%zz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, took, err := runHookPost(t, tc.url, `{"hook_event_name":"Notification"}`)
			if err != nil || stdout != "" || stderr != "" {
				t.Errorf("hook-post: %v, stdout %q, stderr %q; want exit 0 and silence", err, stdout, stderr)
			}
			if took > hookPostBound {
				t.Errorf("hook-post took %v, want it to give up by itself (3s)", took)
			}
		})
	}
	select {
	case <-posted:
		t.Error("hook-post posted to a host other than 127.0.0.1")
	default:
	}
}
