package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/runview"
)

func newSpoolCmd(a *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "spool",
		Short: "Inspect and deliver the durable event queue",
		Example: "  claude-relay spool status\n" +
			"  claude-relay spool flush --dead-letters\n" +
			"  claude-relay spool flush --to https://relay.example.com",
	}
	cmd.AddCommand(newSpoolStatusCmd(a), newSpoolFlushCmd(a))
	return cmd
}

type spoolStatusOptions struct{ json bool }

func newSpoolStatusCmd(a *App) *cobra.Command {
	var o spoolStatusOptions
	cmd := &cobra.Command{
		Use:   "status",
		Short: "What is waiting, per backend and session: pending, dead-lettered, last error",
		Example: "  claude-relay spool status\n" +
			"  claude-relay spool status --json",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return runSpoolStatus(a, o) },
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

// spoolGroup is what waits in the spool for one backend.
type spoolGroup struct {
	Backend    string `json:"backend"`    // the destination; "" when not recorded
	Configured bool   `json:"configured"` // this configuration's runs and flushes deliver them
	Sessions   int    `json:"sessions"`
	Pending    int64  `json:"pending"`
	Dead       int64  `json:"dead_lettered"`
	// MoveCommand moves them to the configured backend; DeliverCommand
	// delivers them where they were spooled for. Both only when the
	// configuration leaves them.
	MoveCommand    string `json:"move_command,omitempty"`
	DeliverCommand string `json:"deliver_command,omitempty"`

	sessions []forwarder.SessionStatus
}

// destination is the backend this configuration's events are for, as the
// spool records it: backend.url, or the data dir's own backend, whose port
// changes from run to run.
func (a *App) destination() string {
	c := a.loaded.Config
	if c.Backend.URL != "" {
		return forwarder.URLDestination(c.Backend.URL)
	}
	return forwarder.LocalDestination(c.DataDir)
}

// groupSpool sorts what waits by backend: the configured one first, then
// spools that record none (an older claude-relay's: the configuration's
// next run or flush takes them), then the others.
func groupSpool(st []forwarder.SessionStatus, configured string) []spoolGroup {
	byDest := map[string]*spoolGroup{}
	var out []*spoolGroup
	for _, s := range st {
		g := byDest[s.Backend]
		if g == nil {
			g = &spoolGroup{Backend: s.Backend, Configured: s.Backend == configured || s.Backend == ""}
			byDest[s.Backend] = g
			out = append(out, g)
		}
		g.Sessions++
		g.Pending += s.Pending
		g.Dead += s.DeadLettered
		g.sessions = append(g.sessions, s)
	}
	rank := func(g *spoolGroup) int {
		switch {
		case g.Backend == configured:
			return 0
		case g.Backend == "":
			return 1
		}
		return 2
	}
	slices.SortFunc(out, func(x, y *spoolGroup) int {
		return cmp.Or(cmp.Compare(rank(x), rank(y)), strings.Compare(x.Backend, y.Backend))
	})
	groups := make([]spoolGroup, len(out))
	for i, g := range out {
		if !g.Configured && g.Pending > 0 {
			g.MoveCommand = "claude-relay spool flush --to " + toArg(configured)
			g.DeliverCommand = deliverThere(g.Backend)
		}
		groups[i] = *g
	}
	return groups
}

// tokenNote reminds that delivering to a remote backend needs its token.
func tokenNote(dest string) string {
	if _, ok := forwarder.IsLocalDestination(dest); ok {
		return ""
	}
	return " (with that backend's token in backend.token)"
}

// destLabel names a destination for people.
func destLabel(dest string) string {
	if dir, ok := forwarder.IsLocalDestination(dest); ok {
		return "the data dir's own backend (" + dir + ")"
	}
	return dest
}

// toArg is what `spool flush --to` takes to mean dest.
func toArg(dest string) string {
	if _, ok := forwarder.IsLocalDestination(dest); ok {
		return "local"
	}
	return shellQuote(dest)
}

// deliverThere is the command that delivers dest's events to dest itself.
func deliverThere(dest string) string {
	if dir, ok := forwarder.IsLocalDestination(dest); ok {
		return "CLAUDE_RELAY_BACKEND_URL= claude-relay --data-dir " + shellQuote(dir) + " spool flush"
	}
	return "CLAUDE_RELAY_BACKEND_URL=" + shellQuote(dest) + " claude-relay spool flush"
}

func runSpoolStatus(a *App, o spoolStatusOptions) error {
	dir := a.loaded.Config.Spool.Dir
	st, err := forwarder.Inspect(dir)
	if err != nil {
		return err
	}
	configured := a.destination()
	groups := groupSpool(st, configured)
	if o.json {
		if st == nil {
			st = []forwarder.SessionStatus{}
		}
		if groups == nil {
			groups = []spoolGroup{}
		}
		return json.NewEncoder(a.Stdout).Encode(map[string]any{"dir": dir, "backend": configured, "sessions": st, "backends": groups})
	}
	if len(st) == 0 {
		fmt.Fprintf(a.Stdout, "spool %s: nothing waiting\n", dir)
		return nil
	}
	fmt.Fprintf(a.Stdout, "spool %s\n", dir)
	for _, g := range groups {
		fmt.Fprintln(a.Stdout)
		switch {
		case g.Backend == configured:
			fmt.Fprintf(a.Stdout, "for %s (the configured backend)\n", destLabel(g.Backend))
		case g.Backend == "":
			fmt.Fprintf(a.Stdout, "for no recorded backend (an older claude-relay spooled them): the next run or `spool flush` delivers them to the configured backend, %s\n",
				destLabel(configured))
		default:
			fmt.Fprintf(a.Stdout, "for %s, not the configured backend (%s): runs and a plain `spool flush` leave these here\n",
				destLabel(g.Backend), destLabel(configured))
		}
		if err := a.printSessions(g.sessions); err != nil {
			return err
		}
		if g.MoveCommand != "" {
			fmt.Fprintf(a.Stdout, "move them to the configured backend: %s\n", g.MoveCommand)
			fmt.Fprintf(a.Stdout, "or deliver them to %s%s: %s\n", destLabel(g.Backend), tokenNote(g.Backend), g.DeliverCommand)
		}
	}
	return nil
}

func (a *App) printSessions(st []forwarder.SessionStatus) error {
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tPENDING\tBYTES\tDEAD\tDELIVERING\tLAST ERROR")
	for _, s := range st {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%v\t%s\n", s.SessionID, s.Pending, s.PendingBytes, s.DeadLettered, s.Delivering, a.redact(s.LastError))
	}
	return tw.Flush()
}

type spoolFlushOptions struct {
	deadLetters bool
	timeout     time.Duration
	to, from    string
}

func newSpoolFlushCmd(a *App) *cobra.Command {
	var o spoolFlushOptions
	cmd := &cobra.Command{
		Use:   "flush",
		Short: "Deliver what the spool holds for the configured backend now (--to moves other backends' events)",
		Long: "Deliver what the spool holds for the configured backend now. Events spooled for another backend\n" +
			"(backend.url has changed since) stay where they are unless --to moves them: `--to URL` delivers\n" +
			"every waiting event (only those spooled for --from, if given) to URL, posting with backend.token;\n" +
			"`--to local` to the data dir's own backend. `claude-relay spool status` prints the exact command.",
		Example: "  claude-relay spool flush\n" +
			"  claude-relay spool flush --dead-letters --timeout 1m\n" +
			"  claude-relay spool flush --to https://relay.example.com\n" +
			"  claude-relay spool flush --to local --from http://127.0.0.1:9",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSpoolFlush(cmd.Context(), a, o) },
	}
	cmd.Flags().BoolVar(&o.deadLetters, "dead-letters", false, "re-queue dead-lettered events first")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 0, "how long to try (default forwarder.drain_timeout)")
	cmd.Flags().StringVar(&o.to, "to", "", "move events spooled for other backends to this base URL (or `local`: the data dir's own backend) and deliver them there")
	cmd.Flags().StringVar(&o.from, "from", "", "with --to: move only the events spooled for this backend (a URL, or local:<data dir>)")
	return cmd
}

// flushTarget is the backend a flush delivers to and its destination:
// the configured one, or --to's.
func (a *App) flushTarget(ctx context.Context, to string) (*backendConn, string, error) {
	switch {
	case to == "":
		b, err := a.backend(ctx)
		return b, a.destination(), err
	case to == "local":
		b, err := a.localBackend(ctx)
		return b, forwarder.LocalDestination(a.loaded.Config.DataDir), err
	}
	u, err := url.Parse(to)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, "", fmt.Errorf("%w: --to %q is neither a backend's base URL (http:// or https://) nor `local`", errUsage, to)
	}
	return &backendConn{URL: strings.TrimRight(to, "/")}, forwarder.URLDestination(to), nil
}

// fromDest is the destination --from names.
func (a *App) fromDest(from string) string {
	switch {
	case from == "local":
		return forwarder.LocalDestination(a.loaded.Config.DataDir)
	case strings.HasPrefix(from, "local:"):
		dir, _ := forwarder.IsLocalDestination(from)
		return forwarder.LocalDestination(dir)
	}
	return forwarder.URLDestination(from)
}

func runSpoolFlush(ctx context.Context, a *App, o spoolFlushOptions) error {
	if o.from != "" && o.to == "" {
		return fmt.Errorf("%w: --from says which events --to moves; give --to too", errUsage)
	}
	backend, dest, err := a.flushTarget(ctx, o.to)
	if err != nil {
		return err
	}
	defer backend.Close()
	opts := a.forwarderOptions(backend)
	opts.Destination = dest
	if o.to == "local" && backend.Token != "" {
		tok := backend.Token
		opts.Token = func() string { return tok.Reveal() }
	}
	if o.to != "" {
		from := ""
		if o.from != "" {
			from = a.fromDest(o.from)
		}
		opts.Move = func(d string) bool { return from == "" || d == from }
	}
	f, err := forwarder.Open(opts)
	if err != nil {
		return err
	}
	// Before delivery: only the spool's holder continues a run's numbering.
	if n := a.endDeadRuns(ctx, f); n > 0 {
		fmt.Fprintf(a.Stdout, "ended %d run(s) whose helper had died (relay.run_failed, reason helper_exited)\n", n)
	}
	for _, m := range sortedCounts(f.Moved()) {
		fmt.Fprintf(a.Stdout, "moved the events of %d %s from %s to %s\n", m.n, runview.Inflect(int64(m.n), "session", "sessions"),
			destLabel(m.key), destLabel(dest))
	}
	if n := a.endDeadRuns(ctx, f); n > 0 {
		fmt.Fprintf(a.Stdout, "ended %d run(s) whose helper had died (relay.run_failed, reason helper_exited)\n", n)
	}
	f.Start()
	if o.deadLetters {
		n, err := f.RequeueDeadLetters()
		if err != nil {
			f.Stop(context.Background()) //nolint:errcheck
			return fmt.Errorf("re-queue dead letters: %w", err)
		}
		fmt.Fprintf(a.Stdout, "re-queued %d dead-lettered events\n", n)
	}
	timeout := o.timeout
	if timeout == 0 {
		timeout = a.loaded.Config.Forwarder.DrainTimeout
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err = f.Stop(dctx)
	st := f.Stats()
	fmt.Fprintf(a.Stdout, "delivered %d events to %s", st.Delivered, backend.URL)
	if st.DeadLettered > 0 {
		fmt.Fprintf(a.Stdout, "; %d dead-lettered", st.DeadLettered)
	}
	fmt.Fprintln(a.Stdout)
	a.printLeftElsewhere(a.Stdout, dest)
	if errors.Is(err, forwarder.ErrUndelivered) {
		fmt.Fprintf(a.Stdout, "not everything was delivered within %s: %s (last error: %s)\n", timeout, err, a.redact(st.LastError))
		return &ExitError{Code: exitFailure}
	}
	return err
}

// printLeftElsewhere says what the spool still holds for backends other
// than dest, and the commands that deliver it.
func (a *App) printLeftElsewhere(w io.Writer, dest string) {
	st, err := forwarder.Inspect(a.loaded.Config.Spool.Dir)
	if err != nil {
		return
	}
	for _, g := range groupSpool(st, dest) {
		if g.Configured || g.Pending == 0 {
			continue
		}
		fmt.Fprintf(w, "left %d %s of %d %s spooled for %s, not for %s: move them here with `%s`, or deliver them there%s with `%s`\n",
			g.Pending, runview.Inflect(g.Pending, "event", "events"), g.Sessions, runview.Inflect(int64(g.Sessions), "session", "sessions"),
			destLabel(g.Backend), destLabel(dest), g.MoveCommand, tokenNote(g.Backend), g.DeliverCommand)
	}
}

type keyCount struct {
	key string
	n   int
}

func sortedCounts(m map[string]int) []keyCount {
	out := make([]keyCount, 0, len(m))
	for k, n := range m {
		out = append(out, keyCount{k, n})
	}
	slices.SortFunc(out, func(x, y keyCount) int { return strings.Compare(x.key, y.key) })
	return out
}

// forwarderOptions builds the forwarder's options from the configuration.
func (a *App) forwarderOptions(b *backendConn) forwarder.Options {
	token := func() string { return a.live.Token().Reveal() }
	if b.Token != "" && a.loaded.Config.Backend.URL == "" {
		token = func() string { return b.Token.Reveal() }
	}
	c := a.loaded.Config
	sync := time.Duration(0) // the forwarder's default group fsync
	if c.Spool.Fsync == "always" {
		sync = -1
	}
	return forwarder.Options{
		SyncInterval: sync,
		Dir:          c.Spool.Dir, MaxBytes: c.Spool.MaxBytes, BackendURL: b.URL, Token: token, Destination: a.destination(),
		AttemptTimeout: c.Forwarder.AttemptTimeout, MinBackoff: c.Forwarder.MinBackoff, MaxBackoff: c.Forwarder.MaxBackoff,
		Batch: c.Forwarder.Batch, MaxBatch: c.Forwarder.MaxBatch, Logger: a.log,
	}
}
