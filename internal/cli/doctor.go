package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/discovery"
	"github.com/claude-relay/claude-relay/internal/logging"
	"github.com/claude-relay/claude-relay/internal/runview"
	"github.com/claude-relay/claude-relay/internal/tokens"
)

type doctorOptions struct {
	timeout time.Duration
	// configErrs say why the configuration did not load, one per problem;
	// the other checks then ran on configFallback (see loadForDoctor).
	configErrs     []error
	configFallback string
}

const doctorExamples = `  # Check everything; exit 1 with one fix per problem
  claude-relay doctor

  # Check a config file before relying on it
  claude-relay doctor --config ~/claude-relay-staging.yaml

  # Check a remote backend and a particular CLI
  CLAUDE_RELAY_BACKEND_URL=https://relay.example.com claude-relay doctor --claude-path ~/.local/bin/claude`

func newDoctorCmd(a *App) *cobra.Command {
	o := &doctorOptions{timeout: 20 * time.Second}
	cmd := &cobra.Command{
		Use:     "doctor",
		Short:   "Check the CLI, credentials, config, backend and spool; exit 1 with a fix per problem",
		Example: doctorExamples,
		Args:    cobra.NoArgs,
		// This replaces the root's PersistentPreRunE (cobra runs only the
		// nearest one): a broken config is one of the problems doctor
		// reports, not a reason to skip every other check.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			o.configFallback, o.configErrs = a.loadForDoctor(cmd.Root().PersistentFlags())
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDoctor(cmd.Context(), a, *o)
		},
	}
	return cmd
}

// finding is one doctor check's outcome: ok with a detail, skipped with a
// reason, or a problem and its fix. Notes are indented lines under it.
type finding struct {
	name    string
	detail  string
	skipped bool
	problem string
	fix     string // empty when the problem text already says what to do
	notes   []string
}

func runDoctor(ctx context.Context, a *App, o doctorOptions) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	findings := append(checkConfig(a, o.configErrs, o.configFallback), checkCLI(ctx, a), checkCredentials(a))
	if a.loaded.Config.DataDir == "" {
		// Not even the defaults loaded (no HOME): there is no data
		// directory, so no embedded backend or spool to look at.
		why := "no data directory, since the configuration did not load"
		findings = append(findings,
			finding{name: "backend", skipped: true, detail: why},
			finding{name: "spool", skipped: true, detail: why})
	} else {
		findings = append(findings, checkBackend(ctx, a), checkSpool(a))
	}
	findings = append(findings, checkBilling(ctx, a))
	if printFindings(a, findings) > 0 {
		return &ExitError{Code: exitFailure}
	}
	return nil
}

// printFindings writes one line per finding, problem and fix together so
// `grep ^FAIL` lists every problem with what to do, and returns how many
// failed.
func printFindings(a *App, findings []finding) int {
	failed := 0
	for _, f := range findings {
		switch {
		case f.problem != "":
			failed++
			line := f.problem
			if f.fix != "" {
				line += "; fix: " + f.fix
			}
			fmt.Fprintf(a.Stdout, "FAIL  %-12s %s\n", f.name, a.redact(line))
		case f.skipped:
			fmt.Fprintf(a.Stdout, "skip  %-12s %s\n", f.name, a.redact(f.detail))
		default:
			fmt.Fprintf(a.Stdout, "ok    %-12s %s\n", f.name, a.redact(f.detail))
		}
		for _, n := range f.notes {
			// Indented to the detail column: len("FAIL  ") + 12 + 1.
			fmt.Fprintf(a.Stdout, "%19s%s\n", "", a.redact(n))
		}
	}
	return failed
}

// loadForDoctor loads the configuration as every command does. When that
// fails it still leaves one the checks can use (the environment and flags
// without the config file, else the bare defaults) and returns which, with
// the load errors: the first, plus the environment's or flags' own when the
// file could not be read at all, since that problem would otherwise only
// show once the file is fixed.
func (a *App) loadForDoctor(flags *pflag.FlagSet) (fallback string, errs []error) {
	err := a.load(flags)
	if err == nil {
		return "", nil
	}
	errs = []error{err}
	unreadable := errors.Is(err, config.ErrConfigFile) || errors.Is(err, config.ErrUnknownConfig)
	cwd, _ := a.Getwd() // unknown: the workspace default is then empty
	// An explicit, empty config file keeps Load away from both the broken
	// file and the default path.
	fallbacks := []struct {
		what string
		opts config.LoadOptions
	}{
		{"without the config file (environment and flags still apply)", config.LoadOptions{
			File: os.DevNull, LookupEnv: a.LookupEnv, Flags: flags, FlagKeys: flagKeys, Cwd: cwd}},
		{"with the defaults (no config file, environment or flags)", config.LoadOptions{
			File: os.DevNull, LookupEnv: dirsOnlyEnv(a.LookupEnv), Cwd: cwd}},
	}
	for i, fb := range fallbacks {
		l, ferr := config.Load(fb.opts)
		if ferr == nil {
			a.setLoaded(l)
			return fb.what, errs
		}
		if i == 0 && unreadable {
			errs = append(errs, ferr)
		}
	}
	a.setLoaded(&config.Loaded{Config: &config.Config{}})
	return "with an empty configuration", errs
}

// dirsOnlyEnv passes only the variables the default locations derive from.
func dirsOnlyEnv(lookup func(string) (string, bool)) func(string) (string, bool) {
	return func(name string) (string, bool) {
		switch name {
		case "HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME":
			return lookup(name)
		}
		return "", false
	}
}

// setLoaded installs l as the App's configuration, as App.load does on
// success.
func (a *App) setLoaded(l *config.Loaded) {
	a.loaded = l
	a.live = config.NewLive(l.Config)
	a.log = logging.New(a.Stderr, l.Config.Log.Format, a.live.Level(), a.live.Secrets)
}

// checkConfig reports each load error as one problem, or that all is valid.
func checkConfig(a *App, errs []error, fallback string) []finding {
	if len(errs) == 0 {
		f := finding{name: "config", detail: "valid (no config file; defaults, env and flags)"}
		if a.loaded.File != "" {
			f.detail = "valid (" + a.loaded.File + ")"
		}
		return []finding{f}
	}
	var out []finding
	for _, err := range errs {
		out = append(out, configProblem(err))
	}
	out[len(out)-1].notes = []string{"the checks below ran " + fallback}
	return out
}

// configProblem turns a config.Load error into a problem and its fix.
func configProblem(err error) finding {
	f := finding{name: "config", problem: err.Error()}
	var ve *config.ValidationError
	switch {
	case errors.As(err, &ve):
		f.fix = fmt.Sprintf("change %s (set by %s) to an allowed value", ve.Key, ve.Source)
	case errors.Is(err, config.ErrUnknownConfig):
		f.fix = "remove that key from the file or rename it to one of the known keys listed"
	case errors.Is(err, config.ErrConfigFile):
		f.fix = "correct or create that file, or point --config (env CLAUDE_RELAY_CONFIG) at another one"
	}
	// Otherwise (backend.token_file, no home directory) the error itself
	// says what to do.
	return f
}

// discoveryOptions is where run, terminal and doctor look for the Claude CLI:
// the configured path, else HOME, PATH and the cache `make deps` installs into.
func (a *App) discoveryOptions(configured string) discovery.Options {
	home, _ := a.LookupEnv("HOME")
	path, _ := a.LookupEnv("PATH")
	xdgCache, _ := a.LookupEnv("XDG_CACHE_HOME")
	return discovery.Options{ConfiguredPath: configured, Home: home, PathEnv: path,
		CacheDir: discovery.CacheDir(home, xdgCache)}
}

func checkCLI(ctx context.Context, a *App) finding {
	f := finding{name: "claude CLI"}
	if cmd := a.loaded.Config.Claude.Command; cmd != "" {
		// claude.command replaces discovery: runs start exactly this.
		f.detail = "claude.command: " + cmd + " (discovery skipped)"
		return f
	}
	opts := a.discoveryOptions(a.loaded.Config.Claude.Path)
	res, err := discovery.Find(ctx, opts)
	var cpe *discovery.ConfiguredPathError
	var nf *discovery.NotFoundError
	switch {
	case errors.As(err, &cpe):
		f.problem = fmt.Sprintf("claude.path %s is unusable: %v", cpe.Path, cpe.Err)
		f.fix = fmt.Sprintf("point claude.path (set by %s) at a working claude binary, or unset it to search the usual places",
			a.loaded.Origins["claude.path"])
	case errors.As(err, &nf):
		f.problem = "not found in any of the places below"
		switch n := len(nf.Candidates); {
		case n == 1:
			f.problem = "1 install found but it does not work (see below)"
		case n > 1:
			f.problem = fmt.Sprintf("%d installs found but none works (see below)", n)
		}
		f.fix = installFix(a, opts.CacheDir)
		f.notes = append(f.notes, nf.Searched...)
		for _, c := range nf.Candidates {
			f.notes = append(f.notes, fmt.Sprintf("unusable: %s (%s): %v", c.Path, c.Source, c.Err))
		}
	case err != nil:
		f.problem = err.Error()
		f.fix = "run doctor again; if an install hangs on `claude --version`, set claude.path to one that answers"
	default:
		f.detail = fmt.Sprintf("%s at %s (from %s)", res.Version, res.Path, res.Source)
		if n := len(res.Candidates); n > 1 {
			f.detail += fmt.Sprintf("; %d installs found, highest version chosen", n)
		}
	}
	return f
}

// installFix names the command that puts a CLI where discovery looks: the
// pinned install in a claude-relay checkout, npm's global install elsewhere.
func installFix(a *App, cacheDir string) string {
	const orPath = ", or set claude.path (env CLAUDE_RELAY_CLAUDE_PATH) to a claude binary"
	cwd, err := a.Getwd()
	root, ok := checkoutRoot(cwd)
	if err != nil || !ok {
		return "run `npm install -g @anthropic-ai/claude-code`" + orPath
	}
	cmd := "make deps"
	if root != cwd {
		cmd = "make -C " + shellQuote(root) + " deps"
	}
	where := ""
	if cacheDir != "" {
		where = " (it installs the pinned CLI under " + cacheDir + ", which is searched)"
	}
	return "run `" + cmd + "`" + where + orPath
}

// shellQuote makes s one shell word, so a suggested command can be pasted.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`*?[]{}()<>|&;#~!") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// relayModule is the module of a claude-relay checkout, whose Makefile has
// the deps target.
const relayModule = "github.com/claude-relay/claude-relay"

// checkoutRoot returns the claude-relay checkout dir is in, if any: the
// nearest directory upwards with a go.mod, if that declares relayModule.
func checkoutRoot(dir string) (string, bool) {
	if !filepath.IsAbs(dir) {
		return "", false
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			if modulePath(b) != relayModule {
				return "", false
			}
			_, err := os.Stat(filepath.Join(dir, "Makefile"))
			return dir, err == nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// modulePath returns the path of go.mod's module directive.
func modulePath(gomod []byte) string {
	for line := range strings.Lines(string(gomod)) {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
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
	login := "~/.claude/.credentials.json"
	if home, ok := a.LookupEnv("HOME"); ok {
		login = filepath.Join(home, ".claude", ".credentials.json")
		if fi, err := os.Stat(login); err == nil && fi.Size() > 0 {
			f.detail = "login found in " + login + " (contents not read)"
			return f
		}
	}
	f.problem = fmt.Sprintf("no Claude credentials found: %s are unset and there is no %s",
		strings.Join(credentialEnv, ", "), login)
	f.fix = "run `claude` once and log in, or set ANTHROPIC_API_KEY (or claude.env in the config)"
	return f
}

// checkBackend says whether backend.url is a claude-relay backend that
// accepts our token: GET /api/whoami must answer JSON naming the token and
// its scopes (forwarder.Probe); a web server's page is a problem.
func checkBackend(ctx context.Context, a *App) finding {
	f := finding{name: "backend"}
	c := a.loaded.Config
	base, tok := c.Backend.URL, a.live.Token().Reveal()
	if base == "" {
		info, ok := a.runningServe(ctx)
		if !ok {
			f.detail = "embedded default (" + c.Serve.DB + "), started by run and extension"
			return f
		}
		base = info.URL
		if t, err := a.helperToken(); err == nil {
			tok = t.Reveal()
		}
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	who, err := forwarder.Probe(pctx, nil, base, tok)
	if err != nil {
		f.problem, f.fix = backendProblem(err, c.Backend.URL != "")
		return f
	}
	scopes := make([]tokens.Scope, len(who.Scopes))
	for i, s := range who.Scopes {
		scopes[i] = tokens.Scope(s)
	}
	set := tokens.SetOf(scopes)
	switch {
	case !set.Has(tokens.Ingest):
		f.problem = fmt.Sprintf("%s accepts the token %q but it may not post events (scopes: %s)", base, who.Name, set)
		f.fix = "give helpers a token with the ingest scope: claude-relay token create --scope ingest,decisions"
	case set.Has(tokens.Approve):
		f.detail = fmt.Sprintf("%s reachable, token %q accepted (scopes: %s); it can approve, and every tool a run starts can read "+
			"what the helper can: prefer a token with --scope ingest,decisions for helpers", base, who.Name, set)
	default:
		f.detail = fmt.Sprintf("%s reachable, token %q accepted (scopes: %s)", base, who.Name, set)
	}
	return f
}

// backendProblem turns a failed probe into a problem and its fix;
// configured says the URL is backend.url's (else the data dir's serve).
func backendProblem(err error, configured bool) (problem, fix string) {
	var pe *forwarder.ProbeError
	if !errors.As(err, &pe) {
		return err.Error(), "run doctor again"
	}
	switch pe.Kind {
	case forwarder.ProbeUnreachable:
		return pe.Error(), "start it (`claude-relay serve`) or correct backend.url; events wait in the spool meanwhile"
	case forwarder.ProbeAuth:
		return pe.Error(), "set backend.token (or backend.token_file) to a token the backend accepts; events wait in the spool meanwhile"
	case forwarder.ProbeNotBackend:
		return notBackendProblem(pe, configured), "set backend.url to the base URL of a claude-relay backend (what `claude-relay serve` " +
			"prints, with no path after it); events wait in the spool meanwhile, none is acknowledged"
	}
	return pe.Error(), "see the backend's (or its proxy's) logs; events wait in the spool and go out when it answers"
}

// notBackendProblem says that what answers is no claude-relay backend.
func notBackendProblem(pe *forwarder.ProbeError, configured bool) string {
	who := pe.Base
	if configured {
		who = "backend.url"
	}
	return who + " " + pe.NotBackend()
}

// checkSpool reports what waits in the spool, for which backend, and any
// dead letters. Events waiting for another backend than the configured one
// are a problem: runs and a plain flush leave them.
func checkSpool(a *App) finding {
	f := finding{name: "spool"}
	dir := a.loaded.Config.Spool.Dir
	st, err := forwarder.Inspect(dir)
	if err != nil {
		f.problem, f.fix = err.Error(), "check spool.dir permissions"
		return f
	}
	configured := a.destination()
	var pending, dead int64
	var stranded []spoolGroup
	for _, g := range groupSpool(st, configured) {
		dead += g.Dead
		if g.Configured {
			pending += g.Pending
		} else if g.Pending > 0 {
			stranded = append(stranded, g)
		}
	}
	for _, g := range stranded {
		f.notes = append(f.notes, fmt.Sprintf("%d %s in %d %s for %s: move them with `%s`, or deliver them there%s with `%s`",
			g.Pending, runview.Inflect(g.Pending, "event", "events"), g.Sessions, runview.Inflect(int64(g.Sessions), "session", "sessions"),
			destLabel(g.Backend), g.MoveCommand, tokenNote(g.Backend), g.DeliverCommand))
	}
	switch {
	case len(stranded) > 0:
		var n int64
		for _, g := range stranded {
			n += g.Pending
		}
		f.problem = fmt.Sprintf("%d %s in %s wait for another backend than the configured one (%s); runs and a plain `spool flush` leave them (below)",
			n, runview.Inflect(n, "event", "events"), dir, destLabel(configured))
		f.fix = "`claude-relay spool flush --to " + toArg(configured) + "` delivers them to the configured backend"
		if dead > 0 {
			f.notes = append(f.notes, fmt.Sprintf("and %d dead-lettered events (see `claude-relay spool status`)", dead))
		}
	case dead > 0:
		f.problem = fmt.Sprintf("%d dead-lettered events in %s (the backend refused them)", dead, dir)
		f.fix = "see `claude-relay spool status`, fix the cause, then `claude-relay spool flush --dead-letters`"
	case pending > 0:
		f.detail = fmt.Sprintf("%d events waiting in %s for %s; they go out with the next run or `claude-relay spool flush`", pending, dir, destLabel(configured))
	default:
		f.detail = dir + ": nothing waiting"
	}
	return f
}
