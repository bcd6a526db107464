package cli

import (
	"context"
	"errors"
)

// backendConn is the backend a command talks to.
type backendConn struct {
	URL       string
	Dashboard string // where people look; empty for a remote backend
	close     func()
}

// Close releases an embedded backend, if one was started.
func (b *backendConn) Close() {
	if b.close != nil {
		b.close()
	}
}

var errNoBackend = errors.New("no backend configured: set backend.url (CLAUDE_RELAY_BACKEND_URL)")

// backend returns the configured backend.
func (a *App) backend(context.Context) (*backendConn, error) {
	if u := a.loaded.Config.Backend.URL; u != "" {
		return &backendConn{URL: u}, nil
	}
	return nil, errNoBackend
}
