package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/claude-relay/claude-relay/forwarder"
)

func newSpoolCmd(a *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "spool",
		Short: "Inspect and deliver the durable event queue",
		Example: "  claude-relay spool status\n" +
			"  claude-relay spool flush --dead-letters",
	}
	cmd.AddCommand(newSpoolStatusCmd(a), newSpoolFlushCmd(a))
	return cmd
}

type spoolStatusOptions struct{ json bool }

func newSpoolStatusCmd(a *App) *cobra.Command {
	var o spoolStatusOptions
	cmd := &cobra.Command{
		Use:   "status",
		Short: "What is waiting, per session: pending, dead-lettered, last error",
		Example: "  claude-relay spool status\n" +
			"  claude-relay spool status --json",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return runSpoolStatus(a, o) },
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

func runSpoolStatus(a *App, o spoolStatusOptions) error {
	dir := a.loaded.Config.Spool.Dir
	st, err := forwarder.Inspect(dir)
	if err != nil {
		return err
	}
	if o.json {
		if st == nil {
			st = []forwarder.SessionStatus{}
		}
		return json.NewEncoder(a.Stdout).Encode(map[string]any{"dir": dir, "sessions": st})
	}
	if len(st) == 0 {
		fmt.Fprintf(a.Stdout, "spool %s: nothing waiting\n", dir)
		return nil
	}
	fmt.Fprintf(a.Stdout, "spool %s\n\n", dir)
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
}

func newSpoolFlushCmd(a *App) *cobra.Command {
	var o spoolFlushOptions
	cmd := &cobra.Command{
		Use:   "flush",
		Short: "Deliver what the spool holds now",
		Example: "  claude-relay spool flush\n" +
			"  claude-relay spool flush --dead-letters --timeout 1m",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSpoolFlush(cmd.Context(), a, o) },
	}
	cmd.Flags().BoolVar(&o.deadLetters, "dead-letters", false, "re-queue dead-lettered events first")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 0, "how long to try (default forwarder.drain_timeout)")
	return cmd
}

func runSpoolFlush(ctx context.Context, a *App, o spoolFlushOptions) error {
	backend, err := a.backend(ctx)
	if err != nil {
		return err
	}
	defer backend.Close()
	f, err := forwarder.Open(a.forwarderOptions(backend))
	if err != nil {
		return err
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
	if errors.Is(err, forwarder.ErrUndelivered) {
		fmt.Fprintf(a.Stdout, "not everything was delivered within %s: %s (last error: %s)\n", timeout, err, a.redact(st.LastError))
		return &ExitError{Code: exitFailure}
	}
	return err
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
		Dir:          c.Spool.Dir, MaxBytes: c.Spool.MaxBytes, BackendURL: b.URL, Token: token,
		AttemptTimeout: c.Forwarder.AttemptTimeout, MinBackoff: c.Forwarder.MinBackoff, MaxBackoff: c.Forwarder.MaxBackoff,
		Batch: c.Forwarder.Batch, MaxBatch: c.Forwarder.MaxBatch, Logger: a.log,
	}
}
