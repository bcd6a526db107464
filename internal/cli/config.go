package cli

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/claude-relay/claude-relay/config"
)

type configOptions struct {
	json bool
}

func newConfigCmd(a *App) *cobra.Command {
	var o configOptions
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print the effective configuration and where each value came from",
		Long: "Print every configuration key, its effective value and its source:\n" +
			"default, file, env or flag (highest wins). Secrets are shown as ***.",
		Example: "  claude-relay config\n" +
			"  CLAUDE_RELAY_BACKEND_URL=http://127.0.0.1:9000 claude-relay config | grep backend\n" +
			"  claude-relay --config ./relay.yaml config --json",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return runConfig(a, o) },
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

type configEntry struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Source string `json:"source"`
	From   string `json:"from,omitempty"`
}

func runConfig(a *App, o configOptions) error {
	l := a.loaded
	entries := make([]configEntry, 0, len(config.Keys()))
	for _, k := range config.Keys() {
		org := l.Origins[k]
		entries = append(entries, configEntry{Key: k, Value: l.Value(k), Source: string(org.Source), From: org.Detail})
	}
	if o.json {
		return json.NewEncoder(a.Stdout).Encode(map[string]any{"file": l.File, "keys": entries})
	}
	file := l.File
	if file == "" {
		file = "(none)"
	}
	fmt.Fprintf(a.Stdout, "config file: %s\n\n", file)
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
	for _, e := range entries {
		src := e.Source
		if e.From != "" {
			src += " (" + e.From + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Key, e.Value, src)
	}
	return tw.Flush()
}
