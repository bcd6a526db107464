package launch

import "strconv"

// Session is what a run asks of the conversation, in either mode. Zero
// values ask for nothing: the CLI's defaults.
type Session struct {
	Model              string
	Resume             string // conversation ID to resume
	Fork               bool   // with Resume or Continue: fork into a new conversation
	Continue           bool   // the most recent conversation in the working directory
	MaxTurns           int
	AppendSystemPrompt string
	Extra              []string // flags by intent (claude.args, a run's additional args): passed as given, last
}

// Args maps s to CLI flags. Values that come from users are passed as
// --flag=value so that a value starting with "-" can never be read as a flag
// of its own.
func (s Session) Args() []string {
	var a []string
	if s.Model != "" {
		a = append(a, "--model="+s.Model)
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
	return append(a, s.Extra...)
}
