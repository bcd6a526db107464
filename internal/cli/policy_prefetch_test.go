package cli

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/policy"
	"github.com/claude-relay/claude-relay/internal/relay"
)

// prefetchHelper is a helper on backend with a data dir of its own; no CLI
// runs (claude.command is set, so nothing is discovered).
func prefetchHelper(t *testing.T, backend string) (*helper, string) {
	t.Helper()
	home := t.TempDir()
	env := map[string]string{"HOME": home, "CLAUDE_RELAY_DATA_DIR": filepath.Join(home, "data"),
		"CLAUDE_RELAY_BACKEND_URL": backend, "CLAUDE_RELAY_BACKEND_TOKEN": "helper-tok",
		"CLAUDE_RELAY_CLAUDE_COMMAND": "/bin/false"}
	a := &App{Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{},
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Getwd:     func() (string, error) { return home, nil }}
	if err := a.load(nil); err != nil {
		t.Fatal(err)
	}
	h, err := a.newHelper(t.Context(), false)
	if err != nil {
		t.Fatal(err)
	}
	return h, filepath.Join(home, "data", policy.CacheFile)
}

// A started helper fetches the central policy before any tool call asks
// for it, so the cache file for offline starts exists from the first start.
func TestHelperPrefetchesPolicy(t *testing.T) {
	fetched := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/policy" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"rules":[{"rule":"Bash(rm *)","effect":"deny","reason":"people delete files"}]}`)) //nolint:errcheck // the test fails on the cache below
		select {
		case fetched <- struct{}{}:
		default:
		}
	}))
	defer srv.Close()
	h, cache := prefetchHelper(t, srv.URL)
	h.Start(nil)
	defer h.close(relay.StopClosed)
	select { // no tool call asks: only the prefetch can fetch
	case <-fetched:
	case <-time.After(30 * time.Second):
		t.Fatal("the started helper never asked the backend for the policy")
	}
	// The prefetch writes the cache before it lets go of the client's lock,
	// so a Current that returns from memory has it on disk.
	if _, src := h.policy.Current(t.Context()); src != policy.FromBackend {
		t.Fatalf("policy source %q; want %q", src, policy.FromBackend)
	}
	b, err := os.ReadFile(cache)
	if err != nil || !strings.Contains(string(b), "Bash(rm *)") {
		t.Fatalf("cache %s: %v\n%s", cache, err, b)
	}
}

// close stops a prefetch stuck on a backend that does not answer: the
// request is cancelled then, not at the client's own timeout.
func TestHelperCloseStopsPrefetch(t *testing.T) {
	asked, gaveUp := make(chan struct{}), make(chan struct{})
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/policy" {
			http.NotFound(w, r)
			return
		}
		close(asked)
		select {
		case <-r.Context().Done():
			close(gaveUp)
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	h, cache := prefetchHelper(t, srv.URL)
	h.Start(nil) // does not wait for the backend
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the started helper never asked the backend for the policy")
	}
	h.close(relay.StopClosed)
	// Not a speed check: the bound tells a request cancelled by close from
	// one ended by the client's own 5s timeout.
	select {
	case <-gaveUp:
	case <-time.After(3 * time.Second):
		t.Fatal("the policy request was still open after close")
	}
	if _, err := os.Stat(cache); !os.IsNotExist(err) {
		t.Errorf("cache after a fetch that never answered: %v", err)
	}
}
