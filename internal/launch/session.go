package launch

import (
	"strconv"
	"strings"
)

// Session is what a run asks of the conversation, in either mode. Zero
// values ask for nothing: the CLI's defaults.
type Session struct {
	Model              string
	Resume             string // conversation ID to resume
	SessionID          string // the ID a new conversation gets (--session-id)
	Fork               bool   // with Resume or Continue: fork into a new conversation
	Continue           bool   // the most recent conversation in the working directory
	MaxTurns           int
	AppendSystemPrompt string

	// What the CLI may use and knows, as typed prompt options (CONTRACT §7).
	// Every list value is passed as its own --flag=value: the CLI's list
	// flags are variadic, and only the = form keeps one from swallowing
	// the arguments after it.
	AllowedTools    []string // --allowedTools
	DisallowedTools []string // --disallowedTools
	MCPConfig       string   // --mcp-config: JSON of the form {"mcpServers":{…}}
	AddDirs         []string // --add-dir
	FallbackModel   string   // --fallback-model
	SystemPrompt    string   // --system-prompt: replaces the default one
	Agents          string   // --agents: a JSON object of subagent definitions
	// SettingSources are the settings files the CLI loads (user, project,
	// local). With HasSettingSources an empty list loads none; without it,
	// and empty, the CLI loads its default sources.
	SettingSources    []string
	HasSettingSources bool

	Extra []string // flags by intent (claude.args, a run's additional args): passed as given, last
}

// Args maps s to CLI flags. Values that come from users are passed as
// --flag=value so that a value starting with "-" can never be read as a flag
// of its own.
func (s Session) Args() []string {
	var a []string
	if s.Model != "" {
		a = append(a, "--model="+s.Model)
	}
	if s.SessionID != "" {
		a = append(a, "--session-id="+s.SessionID)
	}
	if s.Resume != "" {
		a = append(a, "--resume="+s.Resume)
		if s.Fork {
			a = append(a, "--fork-session")
		}
	}
	if s.Continue {
		a = append(a, "--continue")
		// The CLI forks either ("use with --resume or --continue").
		if s.Fork && s.Resume == "" {
			a = append(a, "--fork-session")
		}
	}
	if s.MaxTurns > 0 {
		a = append(a, "--max-turns="+strconv.Itoa(s.MaxTurns))
	}
	if s.AppendSystemPrompt != "" {
		a = append(a, "--append-system-prompt="+s.AppendSystemPrompt)
	}
	a = append(a, s.typedArgs()...)
	return append(a, s.Extra...)
}

// typedArgs maps the typed prompt options.
func (s Session) typedArgs() []string {
	var a []string
	each := func(flag string, values []string) {
		for _, v := range values {
			a = append(a, flag+"="+v)
		}
	}
	one := func(flag, v string) {
		if v != "" {
			a = append(a, flag+"="+v)
		}
	}
	each("--allowedTools", s.AllowedTools)
	each("--disallowedTools", s.DisallowedTools)
	one("--mcp-config", s.MCPConfig)
	each("--add-dir", s.AddDirs)
	one("--fallback-model", s.FallbackModel)
	one("--system-prompt", s.SystemPrompt)
	one("--agents", s.Agents)
	if s.HasSettingSources || len(s.SettingSources) > 0 {
		// One comma-separated value; an empty one is how the CLI is told
		// to load no settings files at all.
		a = append(a, "--setting-sources="+strings.Join(s.SettingSources, ","))
	}
	return a
}
