package backend

import (
	"net/http"
	"strings"
	"testing"
)

// TestNotFound: an unknown session's page and an unknown path are the
// dashboard's 404 page; an unknown API route is a JSON 404; a stored
// session's page is served.
func TestNotFound(t *testing.T) {
	e := newEnv(t)
	e.post("real", envelope("real", 1, "relay.run_started", map[string]any{"run_id": "r1", "prompt": "go"}))
	for _, tt := range []struct {
		path, want string
		status     int
	}{
		{"/sessions/real", "claude-relay: session", http.StatusOK},
		{"/sessions/typo", "No session “typo”", http.StatusNotFound},
		{"/no/such/page", "Nothing at /no/such/page", http.StatusNotFound},
		{"/api/nope", `"error":"no API route /api/nope`, http.StatusNotFound},
	} {
		resp := e.do("GET", tt.path, nil, nil)
		body := readAll(t, resp)
		if resp.StatusCode != tt.status || !strings.Contains(body, tt.want) {
			t.Errorf("GET %s: %d %.200s; want %d with %q", tt.path, resp.StatusCode, body, tt.status, tt.want)
		}
	}
}
