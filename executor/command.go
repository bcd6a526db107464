package executor

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/claude-relay/claude-relay/internal/launch"
	"github.com/claude-relay/claude-relay/internal/streamjson"
)

// protocolArgs put the CLI in background mode with the control protocol.
var protocolArgs = []string{
	"-p", "--verbose",
	"--output-format", "stream-json",
	"--input-format", "stream-json",
	"--permission-prompt-tool", "stdio",
}

// command builds the program, arguments and environment of a run: the
// program, session flags and environment as launch builds them for every
// mode, with the stream-json protocol flags of a background run.
func (e *Executor) command(req Request) (string, []string, []string, error) {
	program, args, err := launch.Program(e.opts.CLIPath, e.opts.BaseCommand)
	if err != nil {
		return "", nil, nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	args = append(args, protocolArgs...)
	// Print mode only, so these are not launch.Session flags.
	if req.PartialMessages {
		args = append(args, "--include-partial-messages")
	}
	if req.KeepAlive && os.Geteuid() != 0 {
		// Lets set_mode switch a live run to bypassPermissions, as the
		// CLI allows only when launched so; it never starts in it (the
		// CLI refuses the flag to root).
		args = append(args, "--allow-dangerously-skip-permissions")
	}
	if req.MaxBudgetUSD > 0 {
		args = append(args, "--max-budget-usd="+strconv.FormatFloat(req.MaxBudgetUSD, 'f', -1, 64))
	}
	s := launch.Session{
		Model:              cmp.Or(req.Model, e.opts.Model),
		Resume:             req.Resume,
		SessionID:          req.SessionID,
		Fork:               req.Fork,
		Continue:           req.Continue,
		MaxTurns:           req.MaxTurns,
		AppendSystemPrompt: req.AppendSystemPrompt,
		AllowedTools:       req.AllowedTools,
		DisallowedTools:    req.DisallowedTools,
		AddDirs:            req.AddDirs,
		FallbackModel:      req.FallbackModel,
		SystemPrompt:       req.SystemPrompt,
		SettingSources:     req.SettingSources,
		HasSettingSources:  req.HasSettingSources,
		Extra:              slices.Concat(e.opts.Args, req.AdditionalArgs),
	}
	if given(req.MCPServers) {
		b, err := json.Marshal(map[string]json.RawMessage{"mcpServers": req.MCPServers})
		if err != nil {
			return "", nil, nil, fmt.Errorf("%w: mcp_servers: %w", ErrBadRequest, err)
		}
		s.MCPConfig = string(b)
	}
	if given(req.Agents) {
		// Compact: one argument, no newlines in the process listing.
		var b bytes.Buffer
		if err := json.Compact(&b, req.Agents); err != nil {
			return "", nil, nil, fmt.Errorf("%w: agents: %w", ErrBadRequest, err)
		}
		s.Agents = b.String()
	}
	args = append(args, s.Args()...)
	return program, args, e.environ(req), nil
}

// maxThinkingTokensEnv is how the pinned CLI takes a thinking budget at
// start: it has no flag for it (set_max_thinking_tokens is the mid-run way).
const maxThinkingTokensEnv = "MAX_THINKING_TOKENS"

// environ layers the environment: the helper's own, then claude.env, then the
// run's. What cannot be passed on is left out, and said so in the log.
func (e *Executor) environ(req Request) []string {
	run := req.Env
	if req.MaxThinkingTokens > 0 {
		// The typed option is the run's most specific word on it, so it
		// goes over the run's own env.
		run = maps.Clone(run)
		if run == nil {
			run = map[string]string{}
		}
		run[maxThinkingTokensEnv] = strconv.Itoa(req.MaxThinkingTokens)
	}
	env, dropped := launch.Env{Base: e.opts.BaseEnv, Config: e.opts.Env, Run: run,
		RemoveAPIKey: e.opts.RemoveAPIKey, RunID: req.RunID}.Build()
	for _, d := range dropped {
		e.log.Warn(d.String(), "run_id", req.RunID)
	}
	return env
}

// permissionMode is the mode we ask the CLI for; "" asks for none, so the
// CLI starts in its configured default (permissions.defaultMode).
// bypassPermissions is refused by the CLI when running as root, so it runs as
// default mode with every can_use_tool allowed, which is what bypass means.
func permissionMode(req Request) streamjson.PermissionMode {
	if req.PermissionMode == streamjson.PermissionModeBypassPermissions {
		return streamjson.PermissionModeDefault
	}
	return req.PermissionMode
}

// validate rejects requests that cannot run.
func validate(req Request) error {
	if req.PermissionMode != "" && !req.PermissionMode.Known() {
		return badRequest("permission_mode", "permission mode %q (allowed: %s)", req.PermissionMode, streamjson.ModeList())
	}
	if req.Fork && req.Resume == "" && !req.Continue {
		return badRequest("fork", "fork needs a conversation to resume (resume or continue)")
	}
	if req.Idle && (!req.KeepAlive || strings.TrimSpace(req.Prompt) != "" || len(req.Content) > 0) {
		return badRequest("", "an idle start is a keep-alive run with no prompt (its first send is the first turn)")
	}
	if req.SessionID != "" {
		if _, err := uuid.Parse(req.SessionID); err != nil {
			return badRequest("", "session id %q is not a UUID (the CLI's --session-id takes one)", req.SessionID)
		}
		if (req.Resume != "" || req.Continue) && !req.Fork {
			return badRequest("", "a session id names a new conversation: not with resume or continue, unless forking")
		}
	}
	if req.MaxTurns < 0 {
		return badRequest("max_turns", "max turns %d is negative", req.MaxTurns)
	}
	if req.Cwd != "" {
		if fi, err := os.Stat(req.Cwd); err != nil || !fi.IsDir() {
			return badRequest("cwd", "working directory %q does not exist", req.Cwd)
		}
	}
	return validateOptions(req)
}

// Validate reports why req cannot run, as Run would, for a front end that
// refuses a bad request before it starts anything: a *RequestError, which
// names the field (as the prompt option) and the value.
func Validate(req Request) error { return validate(req) }

// RequestError is a request that cannot run; it wraps ErrBadRequest.
type RequestError struct {
	Field   string // the prompt option at fault, as the protocol spells it; "" when no single one is
	Problem string // why, in words a user can act on
}

func (e *RequestError) Error() string { return ErrBadRequest.Error() + ": " + e.Problem }
func (e *RequestError) Unwrap() error { return ErrBadRequest }

func badRequest(field, format string, args ...any) error {
	return &RequestError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// settingSources are the values setting_sources takes.
var settingSources = []string{"user", "project", "local"}

// validateOptions checks the typed prompt options; its errors name the
// option as the protocol spells it, with the index of a list entry.
func validateOptions(req Request) error {
	for _, l := range []struct {
		name  string
		tools []string
	}{{"allowed_tools", req.AllowedTools}, {"disallowed_tools", req.DisallowedTools}} {
		for i, t := range l.tools {
			if strings.TrimSpace(t) == "" {
				return badRequest(l.name, "%s[%d]: empty tool name (give a tool such as Bash, Edit or \"Bash(git *)\")", l.name, i)
			}
		}
	}
	if err := jsonObject("mcp_servers", req.MCPServers); err != nil {
		return err
	}
	if err := jsonObject("agents", req.Agents); err != nil {
		return err
	}
	for i, d := range req.AddDirs {
		if err := checkDir(req.Cwd, d); err != nil {
			return badRequest("add_dirs", "add_dirs[%d]: %v", i, err)
		}
	}
	if req.FallbackModel != "" && req.FallbackModel == req.Model {
		// The CLI refuses this at start with a less helpful message.
		return badRequest("fallback_model", "fallback_model: %q is the model itself (give a different model, or none)", req.FallbackModel)
	}
	switch b := req.MaxBudgetUSD; {
	case math.IsNaN(b) || math.IsInf(b, 0):
		return badRequest("max_budget_usd", "max_budget_usd: %v is not a number of dollars", b)
	case b < 0:
		return badRequest("max_budget_usd", "max_budget_usd: %v is negative (give a positive amount, or none)", b)
	}
	if req.MaxThinkingTokens < 0 {
		return badRequest("max_thinking_tokens", "max_thinking_tokens: %d is negative (give a positive number of tokens, or none)", req.MaxThinkingTokens)
	}
	for i, s := range req.SettingSources {
		if !slices.Contains(settingSources, s) {
			return badRequest("setting_sources", "setting_sources[%d]: %q (allowed: %s)", i, s, strings.Join(settingSources, ", "))
		}
	}
	return nil
}

// jsonObject checks that an object option is one: a JSON object whose
// entries are objects too (server and agent definitions).
func jsonObject(name string, raw json.RawMessage) error {
	if !given(raw) {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return badRequest(name, "%s: not a JSON object (give {\"name\": {…}, …})", name)
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if v := bytes.TrimSpace(m[k]); len(v) == 0 || v[0] != '{' {
			return badRequest(name, "%s.%s: not a JSON object (each entry is a definition object)", name, k)
		}
	}
	return nil
}

// given reports whether an object option was given: JSON null, as a
// protocol sends for "none", is not.
func given(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// checkDir checks that dir, relative to cwd unless absolute, is a directory.
func checkDir(cwd, dir string) error {
	if strings.TrimSpace(dir) == "" {
		return errors.New("empty path (give a directory)")
	}
	p := dir
	if !filepath.IsAbs(p) && cwd != "" {
		p = filepath.Join(cwd, p)
	}
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%q: no such directory (give an existing directory)", dir)
	case err != nil:
		return fmt.Errorf("%q: %w (give a directory this user can read)", dir, err)
	case !fi.IsDir():
		return fmt.Errorf("%q: not a directory (give a directory)", dir)
	}
	return nil
}
