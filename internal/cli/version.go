package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/claude-relay/claude-relay/internal/version"
)

type versionOptions struct {
	json bool
}

func newVersionCmd(a *App) *cobra.Command {
	var o versionOptions
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version",
		Example: "  claude-relay version\n" +
			"  claude-relay version --json",
		Args: cobra.NoArgs,
		// version works even when the configuration is broken.
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
		RunE:              func(*cobra.Command, []string) error { return runVersion(a, o) },
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

func runVersion(a *App, o versionOptions) error {
	info := version.Get()
	if o.json {
		return json.NewEncoder(a.Stdout).Encode(info)
	}
	dirty := ""
	if info.Modified {
		dirty = " (modified)"
	}
	_, err := fmt.Fprintf(a.Stdout, "claude-relay %s\ncommit %s%s\n%s\n", info.Version, info.Commit, dirty, info.GoVersion)
	return err
}
