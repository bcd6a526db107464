package localbackend

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/claude-relay/claude-relay/config"
)

func TestMain(m *testing.M) {
	runChildTestMode()
	// Conn.Close must stop the goroutines that watch a child backend.
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
