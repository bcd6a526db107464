package cli

import (
	"context"
	"fmt"
	"net"

	"github.com/spf13/cobra"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/localbackend"
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
			"the data dir (serve.token), shared with the embedded default.\n\n" +
			"One data dir has one serve: it holds a lock there (serve.lock) and advertises its\n" +
			"address (serve.json), so run, extension, terminal and spool flush of that data dir\n" +
			"send their events to it. A second serve on the same data dir exits with status 1,\n" +
			"naming the pid and address of the first; give it its own --data-dir to run both.\n" +
			"A killed serve leaves no lock behind: the next one takes the data dir over.\n\n" +
			"Tokens carry scopes (ingest, read, approve, audit, admin): the token helpers post with reads and\n" +
			"ingests only. To decide approvals from the dashboard or a phone, create one with\n" +
			"`claude-relay token create --scope approve`; serve picks it up without a restart.\n" +
			"With serve.notify_url set, each new pending approval is pushed there (ntfy-style), linking\n" +
			"to serve.public_url (default: the address serve listens on).\n\n" +
			"The backend is claude-relay-server, installed beside claude-relay: claude-relay serve\n" +
			"becomes claude-relay-server serve (the same process), so helpers need not load its libraries.",
		Example: "  claude-relay serve\n" +
			"  CLAUDE_RELAY_SERVE_TOKENS=$(openssl rand -hex 32) CLAUDE_RELAY_SERVE_ALLOWED_HOSTS=relay.lan claude-relay serve --addr :8787\n" +
			"  claude-relay --data-dir ~/relay-pg serve --addr 127.0.0.1:8788 --db postgres://relay@localhost/relay",
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
	// Only claude-relay-server gets here with the backend's code (Main hands
	// serve to it); without it, nothing is touched.
	srv, err := a.serverCode()
	if err != nil {
		return err
	}
	// The lock comes first: a second serve must not open the database,
	// listen, or touch serve.json before it knows it is the only one.
	lock, err := localbackend.Acquire(ctx, c.DataDir)
	if err != nil {
		return err
	}
	defer lock.Close() //nolint:errcheck // withdraws serve.json, then releases the lock; nothing to do if it fails
	tok, err := a.serveToken()
	if err != nil {
		return err
	}
	be, err := srv.Open(ctx, o.db)
	if err != nil {
		return err
	}
	defer be.Close()
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another program, or the serve of another data dir, on it? pick a free address with --addr)", o.addr, err)
	}
	url := "http://" + ln.Addr().String()
	dashboard := localbackend.LocalURL(ln.Addr())
	// The data dir's token is always accepted too (ingest and read): `run`
	// and `extension` of this data dir send it when they find this serve
	// (the file is 0600). Tokens made by `token create` count from the
	// request after they are.
	bo := a.localBackendOptions(o.db, tok)
	bo.NotifyURL = c.Serve.NotifyURL.Reveal()
	bo.PublicURL = c.Serve.PublicURL
	if bo.PublicURL == "" {
		bo.PublicURL = dashboard
	}
	if err := lock.Advertise(dashboard); err != nil {
		a.log.Warn("cannot advertise serve in the data dir; run and extension will not find it", "err", err)
	}
	stopWatch := a.watchConfig()
	defer stopWatch()
	tokenHint := "token: backend.token / serve.tokens"
	if len(a.live.ServeTokens()) == 0 {
		tokenHint = "token: in " + localbackend.TokenPath(c.DataDir)
	}
	fmt.Fprintf(a.Stderr, "claude-relay serve: %s (dashboard %s/, %s, db %s)\n", url, dashboard, tokenHint, redactDB(o.db))
	return be.Serve(ctx, ln, bo)
}

// serveLimits sets the backend's limits from c, for serve and the embedded
// default alike (localBackendOptions).
func serveLimits(o *localbackend.Options, c *config.Config) {
	o.MaxEventBytes, o.MaxBatchBytes = c.Serve.MaxEventBytes, c.Serve.MaxBatchBytes
	o.MaxStreamsPerToken = c.Serve.MaxStreamsPerToken
}

// redactDB hides a database URL's password for display.
func redactDB(db string) string { return config.RedactURL(db) }
