package executor

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"os"
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
		AppendSystemPrompt: req.SystemPromptAppend,
		AllowedTools:       req.AllowedTools,
		DisallowedTools:    req.DisallowedTools,
		AddDirs:            req.AddDirs,
		FallbackModel:      req.FallbackModel,
		SystemPrompt:       req.SystemPrompt,
		Extra:              slices.Concat(e.opts.Args, req.AdditionalArgs),
	}
	if req.SettingSources != nil {
		s.SettingSources, s.HasSettingSources = *req.SettingSources, true
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

// validate rejects requests that cannot run: bad options, and what only a
// Request can get wrong.
func validate(req Request) error {
	if err := req.RunOptions.Validate(); err != nil {
		return err
	}
	return ValidateOwn(req)
}

// ValidateOwn checks what only a Request can get wrong, for a front end
// that has checked its RunOptions already (RunOptions.Validate); Run checks
// both.
func ValidateOwn(req Request) error {
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
	return nil
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

// given reports whether an object option was given: JSON null, as a
// protocol sends for "none", is not.
func given(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}
