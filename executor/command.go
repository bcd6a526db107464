package executor

import (
	"cmp"
	"fmt"
	"os"
	"slices"

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
	args = append(args, launch.Session{
		Model:              cmp.Or(req.Model, e.opts.Model),
		Resume:             req.Resume,
		Fork:               req.Fork,
		Continue:           req.Continue,
		MaxTurns:           req.MaxTurns,
		AppendSystemPrompt: req.AppendSystemPrompt,
		Extra:              slices.Concat(e.opts.Args, req.AdditionalArgs),
	}.Args()...)
	return program, args, e.environ(req), nil
}

// environ layers the environment: the helper's own, then claude.env, then the
// run's. What cannot be passed on is left out, and said so in the log.
func (e *Executor) environ(req Request) []string {
	env, dropped := launch.Env{Base: e.opts.BaseEnv, Config: e.opts.Env, Run: req.Env,
		RemoveAPIKey: e.opts.RemoveAPIKey, RunID: req.RunID}.Build()
	for _, d := range dropped {
		e.log.Warn(d.String(), "run_id", req.RunID)
	}
	return env
}

// permissionMode is the mode we ask the CLI for. bypassPermissions is refused
// by the CLI when running as root, so it runs as default mode with every
// can_use_tool allowed, which is what bypass means.
func permissionMode(req Request) streamjson.PermissionMode {
	switch req.PermissionMode {
	case "", streamjson.PermissionModeBypassPermissions:
		return streamjson.PermissionModeDefault
	default:
		return req.PermissionMode
	}
}

// validate rejects requests that cannot run.
func validate(req Request) error {
	switch req.PermissionMode {
	case "", streamjson.PermissionModeDefault, streamjson.PermissionModeAcceptEdits,
		streamjson.PermissionModePlan, streamjson.PermissionModeBypassPermissions:
	default:
		return fmt.Errorf("%w: permission mode %q (allowed: default, acceptEdits, plan, bypassPermissions)", ErrBadRequest, req.PermissionMode)
	}
	if req.Fork && req.Resume == "" && !req.Continue {
		return fmt.Errorf("%w: fork needs a conversation to resume (resume or continue)", ErrBadRequest)
	}
	if req.MaxTurns < 0 {
		return fmt.Errorf("%w: max turns %d is negative", ErrBadRequest, req.MaxTurns)
	}
	if req.Cwd != "" {
		if fi, err := os.Stat(req.Cwd); err != nil || !fi.IsDir() {
			return fmt.Errorf("%w: working directory %q does not exist", ErrBadRequest, req.Cwd)
		}
	}
	return nil
}
