package executor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/claude-relay/claude-relay/internal/streamjson"
)

// RunOptions are a run's prompt options (CONTRACT §7), declared once for
// every front end: the extension protocol decodes them with these JSON
// names, relay and `claude-relay run` pass them on unchanged, and Validate
// holds their rules. Zero values ask for the CLI's defaults.
type RunOptions struct {
	Cwd            string                    `json:"cwd,omitempty"`
	Model          string                    `json:"model,omitempty"`
	PermissionMode streamjson.PermissionMode `json:"permission_mode,omitempty"` // one of streamjson.Modes; "" = the CLI's configured default
	Approvals      bool                      `json:"approvals,omitempty"`       // ask the Approver for every tool but the read-only ones
	Resume         string                    `json:"resume,omitempty"`          // conversation ID to resume
	Fork           bool                      `json:"fork,omitempty"`            // with Resume: fork into a new conversation
	Continue       bool                      `json:"continue,omitempty"`        // continue the most recent conversation in Cwd
	MaxTurns       int                       `json:"max_turns,omitempty"`
	// SystemPromptAppend is appended to the system prompt
	// (--append-system-prompt).
	SystemPromptAppend string            `json:"system_prompt_append,omitempty"`
	Env                map[string]string `json:"env,omitempty"` // highest-precedence environment for this run
	AdditionalArgs     []string          `json:"additional_args,omitempty"`

	// Live runs (CONTRACT §7).
	KeepAlive       bool `json:"keep_alive,omitempty"`       // the run stays open after a result and takes Inputs; ends on InputEnd, ctx, or IdleTimeout
	PartialMessages bool `json:"partial_messages,omitempty"` // pass --include-partial-messages (stream_event lines reach the Observer as EventLine like any other line)
	// StopGitCheck registers a Stop hook that blocks while the git tree has
	// uncommitted changes.
	StopGitCheck bool `json:"stop_git_check,omitempty"`

	// Typed CLI options, mapped to the CLI's flags by command.
	AllowedTools    []string        `json:"allowed_tools,omitempty"`    // --allowedTools, one per tool ("Bash(git *)" rules too)
	DisallowedTools []string        `json:"disallowed_tools,omitempty"` // --disallowedTools, one per tool
	MCPServers      json.RawMessage `json:"mcp_servers,omitempty"`      // Claude Code's mcpServers object, --mcp-config={"mcpServers":…}
	AddDirs         []string        `json:"add_dirs,omitempty"`         // --add-dir, one per directory; relative to Cwd
	FallbackModel   string          `json:"fallback_model,omitempty"`   // --fallback-model
	MaxBudgetUSD    float64         `json:"max_budget_usd,omitempty"`   // --max-budget-usd
	// MaxThinkingTokens is set as MAX_THINKING_TOKENS in the CLI's
	// environment: the pinned CLI has no flag for it, and the variable
	// takes precedence over the settings.
	MaxThinkingTokens int             `json:"max_thinking_tokens,omitempty"`
	SystemPrompt      string          `json:"system_prompt,omitempty"` // --system-prompt, replacing the default one
	Agents            json.RawMessage `json:"agents,omitempty"`        // Claude Code's subagent definitions object, --agents
	// SettingSources (user, project, local) are the settings files the CLI
	// loads: nil is the CLI's default, an empty list loads none
	// (--setting-sources=).
	SettingSources *[]string `json:"setting_sources,omitempty"`
}

// Validate reports why the options cannot run: a *RequestError naming the
// option as the protocol spells it (with the index of a list entry), in
// words a user can act on. Every front end refuses with these rules, so
// each says the same.
func (o RunOptions) Validate() error {
	if o.PermissionMode != "" {
		if err := CheckMode(o.PermissionMode); err != nil {
			return err
		}
	}
	if o.Fork && o.Resume == "" && !o.Continue {
		return badRequest("fork", "fork needs resume (the conversation to fork) or continue")
	}
	if o.MaxTurns < 0 {
		return badRequest("max_turns", "max_turns %d is negative (give a positive number of turns, or 0 for no limit)", o.MaxTurns)
	}
	if o.Cwd != "" {
		fi, err := os.Stat(o.Cwd)
		switch {
		case err != nil:
			return badRequest("cwd", "cwd %q: %v", o.Cwd, errors.Unwrap(err))
		case !fi.IsDir():
			return badRequest("cwd", "cwd %q is not a directory", o.Cwd)
		}
	}
	return o.validateTyped()
}

// settingSources are the values setting_sources takes.
var settingSources = []string{"user", "project", "local"}

// validateTyped checks the typed CLI options.
func (o RunOptions) validateTyped() error {
	for _, l := range []struct {
		name  string
		tools []string
	}{{"allowed_tools", o.AllowedTools}, {"disallowed_tools", o.DisallowedTools}} {
		for i, t := range l.tools {
			if strings.TrimSpace(t) == "" {
				return badRequest(l.name, "%s[%d]: empty tool name (give a tool such as Bash, Edit or \"Bash(git *)\")", l.name, i)
			}
		}
	}
	if err := jsonObject("mcp_servers", o.MCPServers); err != nil {
		return err
	}
	if err := jsonObject("agents", o.Agents); err != nil {
		return err
	}
	for i, d := range o.AddDirs {
		if err := checkDir(o.Cwd, d); err != nil {
			return badRequest("add_dirs", "add_dirs[%d]: %v", i, err)
		}
	}
	if o.FallbackModel != "" && o.FallbackModel == o.Model {
		// The CLI refuses this at start with a less helpful message.
		return badRequest("fallback_model", "fallback_model: %q is the model itself (give a different model, or none)", o.FallbackModel)
	}
	switch b := o.MaxBudgetUSD; {
	case math.IsNaN(b) || math.IsInf(b, 0):
		return badRequest("max_budget_usd", "max_budget_usd: %v is not a number of dollars", b)
	case b < 0:
		return badRequest("max_budget_usd", "max_budget_usd: %v is negative (give a positive amount, or none)", b)
	}
	if o.MaxThinkingTokens < 0 {
		return badRequest("max_thinking_tokens", "max_thinking_tokens: %d is negative (give a positive number of tokens, or none)", o.MaxThinkingTokens)
	}
	if o.SettingSources != nil {
		for i, s := range *o.SettingSources {
			if !slices.Contains(settingSources, s) {
				return badRequest("setting_sources", "setting_sources[%d]: %q (allowed: %s)", i, s, strings.Join(settingSources, ", "))
			}
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

// CheckMode refuses a permission mode that is none of streamjson.Modes, for
// a run's start and a live run's set_mode alike.
func CheckMode(m streamjson.PermissionMode) error {
	if !m.Known() {
		return badRequest("permission_mode", "permission_mode %q (allowed: %s)", m, streamjson.ModeList())
	}
	return nil
}
