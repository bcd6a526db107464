package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/internal/localbackend"
	"github.com/claude-relay/claude-relay/internal/server/backend"
)

// zeros yields n bytes of 'a' without allocating.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n <= 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), z.n)]
	for i := range p {
		p[i] = 'a'
	}
	z.n -= int64(len(p))
	return len(p), nil
}

// TestEmbeddedRefusesAHugeEventUnread: the embedded default (as `run` and
// `extension` start it) has the backend's default limits, not the CLI's
// 128 MiB line cap: a 120 MiB event gets 413 from its declared size, and
// the process allocates next to nothing for it (it used to read, parse
// and store all of it, several times over).
func TestEmbeddedRefusesAHugeEventUnread(t *testing.T) {
	ctx := context.Background()
	conn, err := StartEmbedded(ctx, localbackend.Options{DB: "sqlite:" + filepath.Join(t.TempDir(), "relay.db"), Token: "embedded-limit-token"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	head := `{"session_id":"s","interaction_id":"i","event_id":"huge","seq":1,"event_type":"assistant",` +
		`"timestamp":"2026-11-21T22:14:26Z","source":"agent","event_data":{"type":"assistant","text":"`
	const n = 120 << 20
	body := io.MultiReader(strings.NewReader(head), &zeros{n}, strings.NewReader(`"}}`))
	req, err := http.NewRequestWithContext(ctx, "POST", conn.URL+"/api/sessions/s/events", body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(head)) + n + 3
	req.Header.Set("Authorization", "Bearer embedded-limit-token")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Error string `json:"error"`
		Limit int64  `json:"limit"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	runtime.ReadMemStats(&after)
	http.DefaultClient.CloseIdleConnections()
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("120 MiB event: %d %q, %.2f MiB allocated", resp.StatusCode, out.Error, float64(alloc)/(1<<20))
	if resp.StatusCode != http.StatusRequestEntityTooLarge || out.Limit != backend.DefaultMaxEvent {
		t.Fatalf("status %d, limit %d; want 413 with the default limit %d", resp.StatusCode, out.Limit, backend.DefaultMaxEvent)
	}
	if alloc > 2<<20 {
		t.Errorf("allocated %d bytes refusing it; want at most 2 MiB", alloc)
	}
}
