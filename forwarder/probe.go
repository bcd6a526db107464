package forwarder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Identity is what a claude-relay backend says of the token it was asked
// with (GET /api/whoami).
type Identity struct {
	Name   string   `json:"name"`
	Scopes []string `json:"scopes"`
}

// ProbeKind says why Probe could not prove a URL a claude-relay backend.
type ProbeKind int

// Probe failures.
const (
	ProbeUnreachable ProbeKind = iota + 1 // no HTTP answer at all
	ProbeAuth                             // 401 or 403: the backend refuses the token
	ProbeNotBackend                       // an answer, but not a claude-relay backend's
	ProbeFailing                          // 5xx, 408, 429: a backend (or a proxy) in trouble
)

// ProbeError is Probe's error.
type ProbeError struct {
	Kind   ProbeKind
	Base   string // the base URL, without credentials or query
	URL    string // what was asked, likewise
	Status int    // 0 for ProbeUnreachable
	Answer string // the answer as describe renders it
	Err    error  // the transport error (ProbeUnreachable) or why the body is not a backend's
}

func (e *ProbeError) Error() string {
	switch e.Kind {
	case ProbeUnreachable:
		return fmt.Sprintf("%s is not reachable: %v", e.Base, e.Err)
	case ProbeAuth:
		return fmt.Sprintf("%s refuses the token (HTTP %d)", e.Base, e.Status)
	case ProbeNotBackend:
		return e.Base + " " + e.NotBackend()
	}
	return fmt.Sprintf("%s is in trouble: GET %s got %s", e.Base, e.URL, e.Answer)
}

// NotBackend is what a ProbeNotBackend error says after the URL: "answers
// like a web server, not a claude-relay backend: GET … got …".
func (e *ProbeError) NotBackend() string {
	msg := fmt.Sprintf("answers like a web server, not a claude-relay backend: GET %s got %s", e.URL, e.Answer)
	if e.Err != nil {
		msg += " (" + e.Err.Error() + ")"
	}
	return msg
}

func (e *ProbeError) Unwrap() error { return e.Err }

// Probe proves base a claude-relay backend that accepts token, with the
// request every backend answers to any valid token: GET /api/whoami must
// answer 200 with a JSON object naming the token and at least one scope.
// A web server's page, a redirect or a 404 is ProbeNotBackend. client nil
// means a plain client that follows no redirect; ctx bounds the request.
func Probe(ctx context.Context, client *http.Client, base, token string) (Identity, error) {
	if client == nil {
		client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	base = strings.TrimRight(base, "/")
	u := base + "/api/whoami"
	perr := &ProbeError{Base: cleanURL(base), URL: cleanURL(u)}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		perr.Kind, perr.Err = ProbeUnreachable, err
		return Identity{}, perr
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is in the message already
		}
		perr.Kind, perr.Err = ProbeUnreachable, err
		return Identity{}, perr
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	perr.Status = resp.StatusCode
	perr.Answer = describe(resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Location"), body)
	switch c := resp.StatusCode; {
	case c == http.StatusUnauthorized || c == http.StatusForbidden:
		perr.Kind = ProbeAuth
		return Identity{}, perr
	case retryable(c):
		perr.Kind = ProbeFailing
		return Identity{}, perr
	case c != http.StatusOK:
		perr.Kind = ProbeNotBackend
		return Identity{}, perr
	}
	var who struct {
		Name   *string  `json:"name"`
		Scopes []string `json:"scopes"`
	}
	switch err := json.Unmarshal(body, &who); {
	case err != nil:
		perr.Kind = ProbeNotBackend // its first bytes say what it is
	case who.Name == nil || len(who.Scopes) == 0:
		perr.Kind, perr.Err = ProbeNotBackend, errors.New("JSON without the token's name and scopes")
	default:
		return Identity{Name: *who.Name, Scopes: who.Scopes}, nil
	}
	return Identity{}, perr
}
