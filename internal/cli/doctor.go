package cli

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/claude-relay/claude-relay/forwarder"

	"github.com/spf13/cobra"

	"github.com/claude-relay/claude-relay/internal/discovery"
)

type doctorOptions struct {
	timeout time.Duration
}

func newDoctorCmd(a *App) *cobra.Command {
	o := doctorOptions{timeout: 20 * time.Second}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the CLI, credentials, config, backend and spool; exit 1 with a fix per problem",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDoctor(cmd.Context(), a, o)
		},
	}
	return cmd
}

// finding is one doctor check's outcome: ok with a detail, or a problem and its fix.
type finding struct {
	name    string
	detail  string
	problem string
	fix     string
}

func runDoctor(ctx context.Context, a *App, o doctorOptions) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	findings := []finding{
		{name: "config", detail: configDetail(a)},
		checkCLI(ctx, a),
		checkCredentials(a),
		checkBackend(ctx, a),
		checkSpool(a),
	}
	failed := 0
	for _, f := range findings {
		if f.problem == "" {
			fmt.Fprintf(a.Stdout, "ok    %-12s %s\n", f.name, a.redact(f.detail))
			continue
		}
		failed++
		fmt.Fprintf(a.Stdout, "FAIL  %-12s %s; fix: %s\n", f.name, a.redact(f.problem), a.redact(f.fix))
	}
	if failed > 0 {
		return &ExitError{Code: exitFailure}
	}
	return nil
}

func configDetail(a *App) string {
	if a.loaded.File == "" {
		return "valid (no config file; defaults, env and flags)"
	}
	return "valid (" + a.loaded.File + ")"
}

func checkCLI(ctx context.Context, a *App) finding {
	home, _ := a.LookupEnv("HOME")
	path, _ := a.LookupEnv("PATH")
	res, err := discovery.Find(ctx, discovery.Options{
		ConfiguredPath: a.loaded.Config.Claude.Path, Home: home, PathEnv: path,
	})
	if err != nil {
		return finding{name: "claude CLI", problem: err.Error(),
			fix: "install it (npm install -g @anthropic-ai/claude-code) or set claude.path (CLAUDE_RELAY_CLAUDE_PATH)"}
	}
	detail := fmt.Sprintf("%s at %s (from %s)", res.Version, res.Path, res.Source)
	if n := len(res.Candidates); n > 1 {
		detail += fmt.Sprintf("; %d installs found, highest version chosen", n)
	}
	return finding{name: "claude CLI", detail: detail}
}

// credentialEnv are the variables the Claude CLI authenticates with.
var credentialEnv = []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"}

// checkCredentials says whether the CLI has credentials, never what they are.
func checkCredentials(a *App) finding {
	f := finding{name: "credentials"}
	for _, name := range credentialEnv {
		if v, ok := a.loaded.Config.Claude.Env[name]; ok && v != "" {
			f.detail = name + " set in claude.env (value not shown)"
			return f
		}
		if v, ok := a.LookupEnv(name); ok && v != "" {
			f.detail = name + " set in the environment (value not shown)"
			return f
		}
	}
	if home, ok := a.LookupEnv("HOME"); ok {
		p := filepath.Join(home, ".claude", ".credentials.json")
		if fi, err := os.Stat(p); err == nil && fi.Size() > 0 {
			f.detail = "login found in " + p + " (contents not read)"
			return f
		}
	}
	f.problem = "no Claude credentials found (" + fmt.Sprint(credentialEnv) + " unset, no ~/.claude/.credentials.json)"
	f.fix = "run `claude` once and log in, or set ANTHROPIC_API_KEY (or claude.env in the config)"
	return f
}

// checkBackend says whether the backend answers and accepts our token.
func checkBackend(ctx context.Context, a *App) finding {
	f := finding{name: "backend"}
	c := a.loaded.Config
	url, tok := c.Backend.URL, a.live.Token().Reveal()
	if url == "" {
		info, ok := a.runningServe(ctx)
		if !ok {
			f.detail = "embedded default (" + c.Serve.DB + "), started by run and extension"
			return f
		}
		url = info.URL
		if t, err := a.serveToken(); err == nil {
			tok = t.Reveal()
		}
	}
	get := func(path string, auth bool) (int, error) {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(rctx, http.MethodGet, url+path, nil)
		if err != nil {
			return 0, err
		}
		if auth && tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if _, err := get("/healthz", false); err != nil {
		f.problem = fmt.Sprintf("%s is not reachable: %v", url, err)
		f.fix = "start it (claude-relay serve) or fix backend.url; events wait in the spool meanwhile"
		return f
	}
	code, err := get("/api/sessions", true)
	switch {
	case err != nil:
		f.problem, f.fix = fmt.Sprintf("%s: %v", url, err), "check backend.url"
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		f.problem = fmt.Sprintf("%s refuses the token (HTTP %d)", url, code)
		f.fix = "set backend.token (or backend.token_file) to a token the backend accepts"
	case code >= 400:
		f.problem, f.fix = fmt.Sprintf("%s answered HTTP %d", url, code), "check that backend.url points at a claude-relay backend"
	default:
		f.detail = url + " reachable, token accepted"
	}
	return f
}

// checkSpool reports what waits in the spool and any dead letters.
func checkSpool(a *App) finding {
	f := finding{name: "spool"}
	dir := a.loaded.Config.Spool.Dir
	st, err := forwarder.Inspect(dir)
	if err != nil {
		f.problem, f.fix = err.Error(), "check spool.dir permissions"
		return f
	}
	var pending, dead int64
	for _, s := range st {
		pending += s.Pending
		dead += s.DeadLettered
	}
	switch {
	case dead > 0:
		f.problem = fmt.Sprintf("%d dead-lettered events in %s (the backend refused them)", dead, dir)
		f.fix = "see `claude-relay spool status`, fix the cause, then `claude-relay spool flush --dead-letters`"
	case pending > 0:
		f.detail = fmt.Sprintf("%d events waiting in %s; they go out with the next run or `claude-relay spool flush`", pending, dir)
	default:
		f.detail = dir + ": nothing waiting"
	}
	return f
}
