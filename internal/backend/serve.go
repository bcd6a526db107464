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

// ShutdownGrace is how long ListenAndServe and Serve let in-flight requests
// finish after ctx ends before closing their connections.
const ShutdownGrace = 10 * time.Second

// ListenAndServe listens on addr (host:port) and serves s until ctx ends,
// then shuts down gracefully: see Serve.
func ListenAndServe(ctx context.Context, addr string, s *Server) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("backend: listen on %s: %w (is another serve running? pick another --addr)", addr, err)
	}
	return Serve(ctx, ln, s)
}

// Serve serves s on ln until ctx ends, then closes SSE streams, stops
// accepting, lets in-flight requests finish for up to ShutdownGrace, and
// shuts s down. It returns nil after a clean stop caused by ctx, or the
// error that stopped serving. It closes ln. Callers that need the bound
// address of "127.0.0.1:0" listen themselves and call Serve.
func Serve(ctx context.Context, ln net.Listener, s *Server) error {
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		// No ReadTimeout/WriteTimeout: SSE responses are long-lived and a
		// 32 MiB batch on a slow link is legitimate. Streams set their own
		// per-write deadlines.
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
