package localbackend

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/claude-relay/claude-relay/config"
)

func TestMain(m *testing.M) {
	// Conn.Close must stop the embedded backend's goroutines.
	goleak.VerifyTestMain(m)
}

// TestToken: the generated token is created once (0600) and then reused by
// every caller, even when they race; an empty file is replaced.
func TestToken(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	toks := make([]config.Secret, 8)
	var wg sync.WaitGroup
	for i := range toks {
		wg.Go(func() {
			tok, err := Token(dir)
			if err != nil {
				t.Error(err)
			}
			toks[i] = tok
		})
	}
	wg.Wait()
	for _, tok := range toks {
		if tok == "" || tok != toks[0] {
			t.Fatalf("tokens differ or are empty: %q", toks)
		}
	}
	fi, err := os.Stat(TokenPath(dir))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v, %v; want mode 0600", TokenPath(dir), fi, err)
	}

	if err := os.WriteFile(TokenPath(dir), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if tok, err := Token(dir); err != nil || tok == "" || tok == toks[0] {
		t.Errorf("after emptying the file: %q, %v; want a new token", tok, err)
	}
}

// TestStartEmbedded: the embedded default answers on loopback, accepts its
// token and the serve tokens of the moment, and Close stops it (twice is
// fine).
func TestStartEmbedded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var mu sync.Mutex
	live := []config.Secret{"configured"}
	c, err := StartEmbedded(context.Background(), Options{
		DB: "sqlite:" + filepath.Join(dir, "relay.db"), Token: "data-dir-token", TokenFile: TokenPath(dir),
		Tokens: func() []config.Secret { mu.Lock(); defer mu.Unlock(); return live }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !c.Embedded || c.Token != "data-dir-token" || !strings.HasPrefix(c.URL, "http://127.0.0.1:") || c.Dashboard != c.URL {
		t.Errorf("conn: %+v", c)
	}
	status := func(tok string) int {
		req, err := http.NewRequest(http.MethodGet, c.URL+"/api/sessions", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Close = true // no idle connection left for goleak
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for tok, want := range map[string]int{"data-dir-token": 200, "configured": 200, "wrong": 401} {
		if got := status(tok); got != want {
			t.Errorf("token %q: status %d, want %d", tok, got, want)
		}
	}
	mu.Lock()
	live = []config.Secret{"reloaded"}
	mu.Unlock()
	if got := status("reloaded"); got != 200 {
		t.Errorf("a reloaded serve token: status %d, want 200", got)
	}
	c.Close()
	c.Close()
	if _, err := http.Get(c.URL + "/healthz"); err == nil {
		t.Errorf("%s still answers after Close", c.URL)
	}
}

// TestNewServerLeavesTokensAlone: adding the data dir's token never writes
// into the caller's slice, which a config reload may be reading.
func TestNewServerLeavesTokensAlone(t *testing.T) {
	backing := make([]config.Secret, 1, 4)
	backing[0] = "configured"
	accepted := acceptedTokens(Options{Token: "data-dir-token", Tokens: func() []config.Secret { return backing }})
	if len(accepted) != 2 || backing[:2][1] != "" {
		t.Errorf("accepted %q; the caller's backing array now holds %q", accepted, backing[:2])
	}
}

func TestOpenStoreRejectsUnknownScheme(t *testing.T) {
	_, err := OpenStore(context.Background(), "mysql://relay@db/relay")
	if err == nil || err.Error() != `serve.db "mysql://relay@db/relay": allowed: sqlite:PATH or a postgres:// URL` {
		t.Errorf("OpenStore: %v", err)
	}
}
