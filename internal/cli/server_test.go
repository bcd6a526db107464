package cli

import (
	"slices"
	"testing"
)

// TestIsServe: Main hands exactly the serve command lines to
// claude-relay-server, wherever the global flags are.
func TestIsServe(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want bool
	}{
		{[]string{"serve"}, true},
		{[]string{"serve", "--addr", ":0", "--db=sqlite:x"}, true},
		{[]string{"--data-dir", "serve", "serve"}, true},
		{[]string{"--config=c.yaml", "--log-level", "debug", "serve", "--help"}, true},
		{[]string{"run", "serve"}, false}, // a prompt
		{[]string{"help", "serve"}, false},
		{[]string{"--data-dir", "serve", "version"}, false},
		{[]string{"version"}, false},
		{[]string{"nope"}, false},
		{nil, false},
	} {
		if got := isServe(tt.args); got != tt.want {
			t.Errorf("isServe(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}

// TestChildEnvDropsSecrets: the embedded default's server gets its tokens
// on its stdin, so none of claude-relay's secret variables goes into its
// environment; the rest does.
func TestChildEnvDropsSecrets(t *testing.T) {
	a := &App{Environ: func() []string {
		return []string{"HOME=/h", "CLAUDE_RELAY_BACKEND_TOKEN=t", "CLAUDE_RELAY_SERVE_TOKENS=s", "CLAUDE_RELAY_BACKEND_TOKEN_FD=3",
			"CLAUDE_RELAY_SERVE_DB=postgres://u:p@h/d", "CLAUDE_RELAY_LOG_LEVEL=debug", "TMPDIR=/t"}
	}}
	want := []string{"HOME=/h", "CLAUDE_RELAY_LOG_LEVEL=debug", "TMPDIR=/t"}
	if got := a.childEnv(); !slices.Equal(got, want) {
		t.Errorf("childEnv = %q, want %q", got, want)
	}
}
