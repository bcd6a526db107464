package cli

import (
	"strings"
	"testing"
)

// runApp runs one command line in-process: env is its whole environment,
// cliEnv what the runs it starts inherit, cwd its working directory. It
// returns the exit status and what the command printed.
func runApp(t *testing.T, env map[string]string, cliEnv []string, cwd string, args ...string) (int, *strings.Builder, *strings.Builder) {
	t.Helper()
	var out, errb strings.Builder
	a := &App{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Environ:   func() []string { return cliEnv },
		Getwd:     func() (string, error) { return cwd, nil }}
	code := a.Run(t.Context(), args)
	return code, &out, &errb
}
