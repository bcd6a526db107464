package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/claude-relay/claude-relay/internal/tokens"
)

func newTokenCmd(a *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list and revoke backend tokens with scopes (to approve from a phone, say)",
		Long: "Tokens for `claude-relay serve` beside serve.tokens, kept in the data dir's tokens.json\n" +
			"(0600) as hashes only: a token is printed once, when it is created, and never again.\n" +
			"A running serve picks up a create or a revoke at its next request.\n\n" +
			"Scopes: ingest (post events), read (API, live streams, dashboard), approve (decide\n" +
			"approvals from the dashboard or the API; implies read), audit (GET /api/audit and\n" +
			"`claude-relay audit export`, nothing else), admin (everything). The token\n" +
			"the helper posts with has ingest and read only, so an agent cannot approve with it.",
		Example: "  claude-relay token create --scope approve --name phone\n" +
			"  claude-relay token list\n" +
			"  claude-relay token revoke phone",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("%w: unknown token command %q (create, list or revoke)", errUsage, args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newTokenCreateCmd(a), newTokenListCmd(a), newTokenRevokeCmd(a))
	return cmd
}

type tokenCreateOptions struct {
	scopes []string
	name   string
	json   bool
}

func newTokenCreateCmd(a *App) *cobra.Command {
	var o tokenCreateOptions
	cmd := &cobra.Command{
		Use:   "create --scope SCOPE [--scope SCOPE...] [--name NAME]",
		Short: "Create a token; it is printed once, on stdout",
		Long: "Create a token with the given scopes and print it on stdout (alone, so that\n" +
			"TOKEN=$(claude-relay token create --scope read) works). It is not shown again: only\n" +
			"its hash is stored. The name says who decided an approval (\"dashboard:NAME\").",
		Example: "  claude-relay token create --scope approve --name phone\n" +
			"  claude-relay token create --scope helper --name laptop   # ingest and decisions: what a helper needs\n" +
			"  claude-relay token create --scope ingest,read --name ci\n" +
			"  claude-relay token create --scope audit --name siem",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return runTokenCreate(a, o, time.Now()) },
	}
	cmd.Flags().StringSliceVar(&o.scopes, "scope", nil, "a scope: ingest, decisions, read, approve, audit, admin, or helper for ingest and decisions (repeat, or separate with commas)")
	cmd.Flags().StringVar(&o.name, "name", "", "a name for the token (default: token-ID)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print the token and its record as JSON")
	return cmd
}

// tokenRecord is a token as list and create --json show it: never its hash.
type tokenRecord struct {
	ID        string         `json:"id"`
	Name      string         `json:"name"`
	Scopes    []tokens.Scope `json:"scopes"` // effective: approve brings read
	CreatedAt time.Time      `json:"created_at"`
	Token     string         `json:"token,omitempty"` // create only
}

func record(e tokens.Entry) tokenRecord {
	return tokenRecord{ID: e.ID, Name: e.Name, Scopes: tokens.SetOf(e.Scopes).List(), CreatedAt: e.CreatedAt}
}

func runTokenCreate(a *App, o tokenCreateOptions, now time.Time) error {
	scopes, err := tokens.ParseScopes(o.scopes...)
	if err != nil {
		return fmt.Errorf("%w: --scope: %w", errUsage, err)
	}
	if len(scopes) == 0 {
		return fmt.Errorf("%w: token create needs at least one --scope (%s), e.g. --scope approve", errUsage, tokens.Allowed())
	}
	if o.name != "" {
		if err := tokens.CheckName(o.name); err != nil {
			return fmt.Errorf("%w: --name: %w", errUsage, err)
		}
	}
	file := tokens.Open(tokens.Path(a.loaded.Config.DataDir))
	tok, e, err := file.Create(o.name, scopes, now)
	if err != nil {
		return fmt.Errorf("token create: %w", err)
	}
	if o.json {
		r := record(e)
		r.Token = tok
		if err := json.NewEncoder(a.Stdout).Encode(r); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(a.Stdout, tok)
	}
	fmt.Fprintf(a.Stderr, "created token %s %q with the scopes %s; it is shown only this once and will not be shown again "+
		"(only its hash is kept, in %s)\n", e.ID, e.Name, tokens.SetOf(e.Scopes), file.Path())
	if tokens.SetOf(e.Scopes).Has(tokens.Read) {
		fmt.Fprintf(a.Stderr, "log in at %s/login with it (the dashboard then shows what it may do), or send it as "+
			"\"Authorization: Bearer <token>\"; revoke it with: claude-relay token revoke %s\n", a.dashboardURL(), e.Name)
		return nil
	}
	// A token without read cannot log in: say where it goes instead.
	fmt.Fprintf(a.Stderr, "give it to a helper as backend.token (or backend.token_file; the VS Code extension: "+
		"\"Claude Relay: Set Backend Token\"), or send it as \"Authorization: Bearer <token>\"; it cannot log in to the "+
		"dashboard; revoke it with: claude-relay token revoke %s\n", e.Name)
	return nil
}

// dashboardURL is where serve's dashboard is reached: serve.public_url,
// else serve.addr (a wildcard host as loopback).
func (a *App) dashboardURL() string {
	c := a.loaded.Config.Serve
	if c.PublicURL != "" {
		return c.PublicURL
	}
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return "http://" + c.Addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

type tokenListOptions struct {
	json bool
}

func newTokenListCmd(a *App) *cobra.Command {
	var o tokenListOptions
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the tokens of tokens.json: id, name, scopes, created (never the token)",
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { return runTokenList(a, o) },
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

func runTokenList(a *App, o tokenListOptions) error {
	file := tokens.Open(tokens.Path(a.loaded.Config.DataDir))
	entries, err := file.Entries()
	if err != nil {
		return fmt.Errorf("token list: %w", err)
	}
	if o.json {
		list := make([]tokenRecord, 0, len(entries))
		for _, e := range entries {
			list = append(list, record(e))
		}
		return json.NewEncoder(a.Stdout).Encode(map[string]any{"file": file.Path(), "tokens": list})
	}
	if len(entries) == 0 {
		fmt.Fprintf(a.Stdout, "no tokens in %s; create one with: claude-relay token create --scope approve --name phone\n", file.Path())
		return nil
	}
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSCOPES\tCREATED")
	for _, e := range entries {
		scopes := make([]string, 0, len(tokens.All))
		for _, s := range tokens.SetOf(e.Scopes).List() {
			scopes = append(scopes, string(s))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.ID, e.Name, strings.Join(scopes, ","), e.CreatedAt.UTC().Format("2006-01-02 15:04 MST"))
	}
	return tw.Flush()
}

func newTokenRevokeCmd(a *App) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID|NAME",
		Short: "Revoke a token of tokens.json; serve refuses it from its next request",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 || strings.TrimSpace(args[0]) == "" {
				return fmt.Errorf("%w: token revoke takes one token id or name (`claude-relay token list` shows them)", errUsage)
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error { return runTokenRevoke(a, args[0]) },
	}
}

func runTokenRevoke(a *App, ref string) error {
	file := tokens.Open(tokens.Path(a.loaded.Config.DataDir))
	e, err := file.Revoke(ref)
	if errors.Is(err, tokens.ErrNoToken) {
		return fmt.Errorf("token revoke: %w", err)
	}
	if err != nil {
		return fmt.Errorf("token revoke %s: %w", ref, err)
	}
	fmt.Fprintf(a.Stdout, "revoked token %s %q; serve refuses it, and dashboard logins made with it, from its next request\n", e.ID, e.Name)
	return nil
}
