package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/backend"
)

type serveOptions struct {
	addr string
	db   string
}

func newServeCmd(a *App) *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the reference backend and its live dashboard",
		Long: "Receive events (POST /api/sessions/{id}/events), store them in SQLite or PostgreSQL,\n" +
			"extract conversation IDs, and serve the API and a live dashboard. SIGTERM shuts down\n" +
			"gracefully. Without serve.tokens or backend.token, a token is generated and kept in\n" +
			"the data dir (serve.token), shared with the embedded default.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServe(cmd.Context(), a, o) },
	}
	cmd.Flags().StringVar(&o.addr, "addr", "", "listen address (default serve.addr, 127.0.0.1:8787)")
	cmd.Flags().StringVar(&o.db, "db", "", "sqlite:PATH or a postgres:// URL (default serve.db)")
	return cmd
}

func runServe(ctx context.Context, a *App, o serveOptions) error {
	c := a.loaded.Config
	if o.addr == "" {
		o.addr = c.Serve.Addr
	}
	if o.db == "" {
		o.db = c.Serve.DB
	}
	tok, err := a.serveToken()
	if err != nil {
		return err
	}
	st, err := openStore(ctx, o.db)
	if err != nil {
		return err
	}
	defer st.Close()
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another serve running? use --addr)", o.addr, err)
	}
	// The data dir's token is always accepted too: `run` and `extension` of
	// this data dir send it when they find this serve (the file is 0600).
	srv := backend.New(backend.Options{Store: st, Logger: a.log, MaxBody: maxEventBytes,
		Tokens: func() []config.Secret { return append(a.live.ServeTokens(), tok) }})
	url := "http://" + ln.Addr().String()
	info := filepath.Join(c.DataDir, serveInfoFile)
	if isLoopback(ln.Addr()) {
		// Advertise ourselves so `run` and `extension` use this serve.
		b, _ := json.Marshal(serveInfo{URL: url, PID: os.Getpid(), Started: time.Now().UTC()})
		if err := os.WriteFile(info, b, 0o600); err != nil {
			a.log.Warn("cannot advertise serve in the data dir", "err", err)
		}
		defer os.Remove(info)
	}
	stopWatch := a.watchConfig()
	defer stopWatch()
	tokenHint := "token: backend.token / serve.tokens"
	if len(a.live.ServeTokens()) == 0 {
		tokenHint = "token: in " + filepath.Join(c.DataDir, serveTokenFile)
	}
	fmt.Fprintf(a.Stderr, "claude-relay serve: %s (dashboard %s/, %s, db %s)\n", url, url, tokenHint, redactDB(o.db))
	return backend.Serve(ctx, ln, srv)
}

func isLoopback(addr net.Addr) bool {
	t, ok := addr.(*net.TCPAddr)
	return ok && t.IP.IsLoopback()
}

// redactDB hides a database URL's password for display.
func redactDB(db string) string { return config.RedactURL(db) }
