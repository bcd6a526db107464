package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// ShutdownGrace is how long Serve lets in-flight requests finish after ctx
// ends before closing their connections.
const ShutdownGrace = 10 * time.Second

// ReadHeaderTimeout bounds how long a client may take to send a request's
// headers, so a connection that trickles them is closed.
const ReadHeaderTimeout = 10 * time.Second

// Serve serves s on ln until ctx ends, then closes SSE streams, stops
// accepting, lets in-flight requests finish for up to ShutdownGrace, and
// shuts s down. It returns nil after a clean stop caused by ctx, or the
// error that stopped serving. It closes ln. It takes a listener rather than
// an address because every caller needs the bound address before serving
// (to print or advertise it, or because it asked for "127.0.0.1:0"), and
// the listen error is best worded by the caller, who knows the flag.
func Serve(ctx context.Context, ln net.Listener, s *Server) error {
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: ReadHeaderTimeout,
		IdleTimeout:       2 * time.Minute,
		// No ReadTimeout/WriteTimeout: SSE responses and decision long
		// polls are long-lived. Request bodies get a read deadline by their
		// size instead (limitBodies), and streams set their own per-write
		// deadlines.
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	// SSE handlers never go idle on their own; ending them first is what
	// lets hs.Shutdown see idle connections.
	hs.RegisterOnShutdown(func() { s.shutOnce.Do(s.cancel) })

	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	s.log.Debug("backend: serving", "addr", ln.Addr().String())

	var serveErr error
	select {
	case err := <-served:
		// Serve failed on its own; ctx is still live.
		serveErr = fmt.Errorf("backend: serve on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}

	graceCtx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	if err := hs.Shutdown(graceCtx); err != nil {
		s.log.Warn("backend: in-flight requests did not finish in time; closing them", "grace", ShutdownGrace, "err", err)
		_ = hs.Close()
	}
	if serveErr == nil {
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			serveErr = fmt.Errorf("backend: serve on %s: %w", ln.Addr(), err)
		}
	}
	if err := s.Shutdown(graceCtx); err != nil {
		s.log.Warn("backend: streams did not stop in time", "err", err)
	}
	s.log.Debug("backend: stopped", "addr", ln.Addr().String())
	return serveErr
}
