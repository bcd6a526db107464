package server

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/localbackend"
	"github.com/claude-relay/claude-relay/internal/tokens"
)

func TestMain(m *testing.M) {
	// Conn.Close must stop the embedded backend's goroutines.
	goleak.VerifyTestMain(m)
}

// TestStartEmbedded: the embedded default answers on loopback, accepts its
// token and the serve tokens of the moment, and Close stops it (twice is
// fine).
func TestStartEmbedded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var mu sync.Mutex
	live := []config.ServeToken{{Token: "configured"}}
	c, err := StartEmbedded(context.Background(), localbackend.Options{
		DB: "sqlite:" + filepath.Join(dir, "relay.db"), Token: "data-dir-token", TokenFile: localbackend.TokenPath(dir),
		Tokens: func() []config.ServeToken { mu.Lock(); defer mu.Unlock(); return live }})
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
	live = []config.ServeToken{{Token: "reloaded"}}
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
	backing := make([]config.ServeToken, 1, 4)
	backing[0] = config.ServeToken{Token: "configured"}
	accepted := acceptedTokens(localbackend.Options{Token: "data-dir-token", Tokens: func() []config.ServeToken { return backing }})
	if len(accepted) != 2 || backing[:2][1].Token != "" {
		t.Errorf("accepted %q; the caller's backing array now holds %q", accepted, backing[:2])
	}
}

func TestOpenStoreRejectsUnknownScheme(t *testing.T) {
	_, err := OpenStore(context.Background(), "mysql://relay@db/relay")
	if err == nil || err.Error() != `serve.db "mysql://relay@db/relay": allowed: sqlite:PATH or a postgres:// URL` {
		t.Errorf("OpenStore: %v", err)
	}
}

// TestDataDirTokenScopes: the data dir's token (what helpers post with)
// reads and ingests but cannot approve; a serve.tokens entry with the same
// value states its own scopes, and tokens.json's tokens are accepted.
func TestDataDirTokenScopes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	issued := tokens.Open(tokens.Path(dir))
	phone, _, err := issued.Create("phone", []tokens.Scope{tokens.Approve}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c, err := StartEmbedded(context.Background(), localbackend.Options{
		DB: "sqlite:" + filepath.Join(dir, "relay.db"), Token: "data-dir-token", Issued: issued,
		Tokens: func() []config.ServeToken {
			return []config.ServeToken{{Name: "ops", Token: "shared-token", Scopes: []tokens.Scope{tokens.Admin}}}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	call := func(method, path, tok string) (int, string) {
		req, err := http.NewRequest(method, c.URL+path, strings.NewReader(`{"decision":"allow"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Close = true
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := call("GET", "/api/whoami", "data-dir-token"); code != 200 || !strings.Contains(body, `"name":"default","scopes":["ingest","read"]`) {
		t.Errorf("whoami with the data dir's token: %d %s", code, body)
	}
	if code, body := call("POST", "/api/approvals/a1/decision", "data-dir-token"); code != 403 || !strings.Contains(body, "needs the approve scope") {
		t.Errorf("a decision with the data dir's token: %d %s", code, body)
	}
	if code, body := call("GET", "/api/whoami", phone); code != 200 || !strings.Contains(body, `"name":"phone","scopes":["read","approve"]`) {
		t.Errorf("whoami with an issued token: %d %s", code, body)
	}
	if code, body := call("GET", "/api/whoami", "shared-token"); code != 200 || !strings.Contains(body, `"name":"ops"`) {
		t.Errorf("whoami with a configured token: %d %s", code, body)
	}
}

// TestSharedValueKeepsConfiguredScopes: when the data dir's token is also
// a serve.tokens entry (backend.token is both by default), the entry's
// name and scopes apply.
func TestSharedValueKeepsConfiguredScopes(t *testing.T) {
	accepted := acceptedTokens(localbackend.Options{Token: "same", Tokens: func() []config.ServeToken {
		return []config.ServeToken{{Name: "default", Token: "same", Scopes: []tokens.Scope{tokens.Admin}}}
	}})
	if len(accepted) != 2 || accepted[0].Name != "default" || accepted[1].Name != "" {
		t.Errorf("accepted %+v: the data dir's token must not take a configured name", accepted)
	}
}
