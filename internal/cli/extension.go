package cli

import (
	"context"
	"errors"
	"os"

	"github.com/spf13/cobra"

	"github.com/claude-relay/claude-relay/extension"
)

func newExtensionCmd(a *App) *cobra.Command {
	return &cobra.Command{
		Use:   "extension",
		Short: "Serve an editor extension: NDJSON commands on stdin, events on stdout",
		Long: "The process an editor extension launches. One JSON command per stdin line, one JSON\n" +
			"event per stdout line (see extension/protocol.schema.json); logs go to stderr.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runExtension(cmd.Context(), a) },
	}
}

func runExtension(ctx context.Context, a *App) error {
	// The helper outlives the first signal: it must drain the forwarder
	// (and keep an embedded backend up) after it.
	h, err := a.newHelper(context.WithoutCancel(ctx))
	if err != nil {
		return err
	}
	defer h.backend.Close()
	stopWatch := a.watchConfig()
	defer stopWatch()
	signals := make(chan os.Signal, 2)
	if a.Signals != nil {
		defer a.Signals(signals)()
	}
	err = h.srv.Serve(a.Stdin, a.Stdout, signals)
	if errors.Is(err, extension.ErrForced) {
		h.exec.KillLive() // no time for a graceful stop, but no leftovers either
		return &ExitError{Code: 130}
	}
	return err
}
