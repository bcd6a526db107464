package forwarder

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/internal/server/backend"
)

// TestProbe: only a claude-relay backend that takes the token passes; a
// web server's page, JSON without a name and scopes, a redirect or a 404
// is ProbeNotBackend, and the error quotes what answered.
func TestProbe(t *testing.T) {
	rb := newRealBackend(t, backend.Options{})
	who, err := Probe(t.Context(), nil, rb.url+"/", realToken)
	if err != nil || len(who.Scopes) == 0 {
		t.Fatalf("Probe(reference backend) = %+v, %v", who, err)
	}
	if _, err := Probe(t.Context(), nil, rb.url, "wrong-token-wrong-token"); kindOf(err) != ProbeAuth {
		t.Errorf("a refused token: %v", err)
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	if _, err := Probe(t.Context(), nil, closed.URL, ""); kindOf(err) != ProbeUnreachable || !strings.Contains(err.Error(), "is not reachable") {
		t.Errorf("a closed port: %v", err)
	}
	cases := []struct {
		name   string
		answer http.HandlerFunc
		kind   ProbeKind
		says   string
	}{
		{"nginx", nginx, ProbeNotBackend, `HTTP 200 (text/html: "<html><head><title>Welcome to nginx!`},
		{"foreign JSON", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"user":"me"}`)
		}, ProbeNotBackend, "without the token's name and scopes"},
		{"redirect", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://elsewhere.example/login?next=x", http.StatusMovedPermanently)
		}, ProbeNotBackend, "HTTP 301 redirecting to https://elsewhere.example/login"},
		{"404", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, ProbeNotBackend, "HTTP 404"},
		{"proxy 502", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) }, ProbeFailing, "HTTP 502"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := newForeign(t, c.answer)
			_, err := Probe(t.Context(), nil, fs.srv.URL, "tok")
			if kindOf(err) != c.kind || !strings.Contains(err.Error(), c.says) {
				t.Errorf("Probe = %v (kind %d); want kind %d saying %q", err, kindOf(err), c.kind, c.says)
			}
			if strings.Contains(err.Error(), "next=x") {
				t.Errorf("the error shows a query: %v", err)
			}
		})
	}
}

func kindOf(err error) ProbeKind {
	var pe *ProbeError
	if errors.As(err, &pe) {
		return pe.Kind
	}
	return 0
}
