package cli

import (
	"context"
	"errors"
	"os"

	"github.com/spf13/cobra"

	"github.com/claude-relay/claude-relay/extension"
	"github.com/claude-relay/claude-relay/internal/relay"
)

func newExtensionCmd(a *App) *cobra.Command {
	var schema bool
	cmd := &cobra.Command{
		Use:   "extension",
		Short: "Serve an editor extension: NDJSON commands on stdin, events on stdout",
		Long: "The process an editor extension launches. One JSON command per stdin line, one JSON\n" +
			"event per stdout line; logs go to stderr. --schema prints the protocol's JSON Schema.\n" +
			"Commands: prompt, cancel, approve, status, terminal, shutdown. Every command may carry a\n" +
			"request_id, echoed by the events that answer it; bad lines get an error event.",
		Example: "  claude-relay extension --schema > protocol.schema.json\n" +
			"  echo '{\"action\":\"prompt\",\"prompt\":\"list the files\",\"options\":{\"exit_on_complete\":true}}' | claude-relay extension\n" +
			"  claude-relay extension --log-level debug 2>helper.log",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if schema {
				_, err := a.Stdout.Write(extension.Schema)
				return err
			}
			return runExtension(cmd.Context(), a)
		},
	}
	cmd.Flags().BoolVar(&schema, "schema", false, "print the protocol's JSON Schema and exit")
	return cmd
}

func runExtension(ctx context.Context, a *App) error {
	// The helper outlives the first signal: it must drain the forwarder
	// (and keep an embedded backend up) after it.
	h, err := a.newHelper(context.WithoutCancel(ctx), false)
	if err != nil {
		return err
	}
	stopWatch := a.watchConfig()
	defer stopWatch()
	signals := make(chan os.Signal, 2)
	if a.Signals != nil {
		defer a.Signals(signals)()
	}
	// Serve closes the host.
	err = a.extensionServer(h).Serve(a.Stdin, a.Stdout, signals)
	if errors.Is(err, extension.ErrForced) {
		h.abandon()
		return &ExitError{Code: 130}
	}
	h.close(relay.StopClosed)
	return err
}
