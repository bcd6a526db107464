package executor

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/claude-relay/claude-relay/internal/proc"
	"github.com/claude-relay/claude-relay/internal/streamjson"
)

// protocolArgs put the CLI in background mode with the control protocol.
var protocolArgs = []string{
	"-p", "--verbose",
	"--output-format", "stream-json",
	"--input-format", "stream-json",
	"--permission-prompt-tool", "stdio",
}

// command builds the program, arguments and environment of a run. Values
// that come from users are passed as --flag=value so that a value starting
// with "-" can never be read as a flag of its own.
func (e *Executor) command(req Request) (string, []string, []string, error) {
	var program string
	var args []string
	switch {
	case e.opts.BaseCommand != "":
		parts, err := splitCommand(e.opts.BaseCommand)
		if err != nil {
			return "", nil, nil, err
		}
		program, args = parts[0], parts[1:]
	case e.opts.CLIPath != "":
		program = e.opts.CLIPath
	default:
		return "", nil, nil, fmt.Errorf("%w: no Claude CLI configured (set claude.path or install it)", ErrBadRequest)
	}
	args = append(args, protocolArgs...)
	model := req.Model
	if model == "" {
		model = e.opts.Model
	}
	if model != "" {
		args = append(args, "--model="+model)
	}
	if req.Resume != "" {
		args = append(args, "--resume="+req.Resume)
		if req.Fork {
			args = append(args, "--fork-session")
		}
	}
	if req.Continue {
		args = append(args, "--continue")
	}
	if req.MaxTurns > 0 {
		args = append(args, "--max-turns="+strconv.Itoa(req.MaxTurns))
	}
	if req.AppendSystemPrompt != "" {
		args = append(args, "--append-system-prompt="+req.AppendSystemPrompt)
	}
	args = append(args, e.opts.Args...)
	args = append(args, req.AdditionalArgs...)
	return program, args, e.environ(req), nil
}

// environ layers the environment: the helper's own, then claude.env, then the
// run's. CLAUDECODE is dropped so a helper started inside a Claude Code
// terminal does not trip the CLI's nested-session refusal.
func (e *Executor) environ(req Request) []string {
	env := map[string]string{}
	for _, kv := range e.opts.BaseEnv {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	for k, v := range e.opts.Env {
		env[k] = v
	}
	for k, v := range req.Env {
		env[k] = v
	}
	delete(env, "CLAUDECODE")
	if e.opts.RemoveAPIKey {
		delete(env, "ANTHROPIC_API_KEY")
	}
	out := make([]string, 0, len(env)+1)
	for k, v := range env {
		// A name with '=' or NUL would corrupt the environment block.
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			continue
		}
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	// The marker lets us find every process of the run, even tools that left
	// the process group, and what a crashed helper left behind.
	return append(out, proc.MarkerEnvEntry(req.RunID))
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
	if req.Fork && req.Resume == "" {
		return fmt.Errorf("%w: fork needs a conversation to resume", ErrBadRequest)
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

var errBadQuote = errors.New("unterminated quote")

// splitCommand splits a base-command override the way a POSIX shell would
// split words: single quotes, double quotes and backslashes; no expansion.
func splitCommand(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("%w: base command %q: %w", ErrBadRequest, s, errBadQuote)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte(`"\$`+"`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("%w: base command %q: %w", ErrBadRequest, s, errBadQuote)
			}
			inWord = true
		case unicode.IsSpace(rune(c)):
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("%w: empty base command", ErrBadRequest)
	}
	return words, nil
}
