package launch

import (
	"fmt"
	"slices"
	"strings"

	"github.com/claude-relay/claude-relay/internal/proc"
)

// Where an environment entry came from, as Dropped names it.
const (
	FromConfig = "claude.env"
	FromRun    = "the run's env"
)

// Env is the environment of one CLI run, in layers: Base, then Config over
// it, then Run over both.
type Env struct {
	Base         []string          // the helper's own environment, NAME=value entries
	Config       map[string]string // claude.env
	Run          map[string]string // the run's own (a background request's env)
	RemoveAPIKey bool              // drop ANTHROPIC_API_KEY, so the CLI uses its own login
	RunID        string            // set as proc.MarkerEnv, replacing an inherited marker
}

// Dropped is an entry of Config or Run that Build left out because it cannot
// be passed to a process: a name that is empty or holds '=' or NUL would
// corrupt the environment block, and a NUL in a value would make the start
// fail.
type Dropped struct {
	Name string // as given, possibly with '=' or NUL in it
	From string // FromConfig or FromRun
}

func (d Dropped) String() string {
	return fmt.Sprintf("%s entry %q not passed to the Claude CLI: a name must be non-empty without '=' or NUL, "+
		"and a value without NUL; rename or fix it in %s", d.From, d.Name, d.From)
}

// relaySecretWords mark the names of claude-relay's own variables that
// hold a credential or lead to one (backend.token, backend.token_file,
// serve.tokens, serve.notify_url, a serve.db URL with its password, the
// token's file descriptor).
var relaySecretWords = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "KEY", "NOTIFY", "SERVE_DB", "CREDENTIAL"}

// RelaySecret reports whether name is a CLAUDE_RELAY_ variable that must
// not reach the CLI: every tool the agent runs, the model's context and the
// transcripts would see it, and an agent holding the backend's token could
// post to its record (SECURITY.md).
func RelaySecret(name string) bool {
	rest, ok := strings.CutPrefix(strings.ToUpper(name), "CLAUDE_RELAY_")
	if !ok {
		return false
	}
	for _, w := range relaySecretWords {
		if strings.Contains(rest, w) {
			return true
		}
	}
	return false
}

// Build layers the environment and returns it sorted, with the run marker
// last, and the Config and Run entries it dropped (Base comes from the
// operating system, whose odd entries such as Windows' "=C:" ones are left
// out without a word, as they were never ours to pass on). CLAUDECODE is
// dropped so a helper started inside a Claude Code terminal does not trip
// the CLI's nested-session refusal, and inherited claude-relay secrets
// (RelaySecret) so that no tool of the run can read them.
func (e Env) Build() ([]string, []Dropped) {
	type entry struct{ value, from string }
	env := map[string]entry{}
	for _, kv := range e.Base {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = entry{v, ""}
		}
	}
	for _, layer := range []struct {
		from string
		m    map[string]string
	}{{FromConfig, e.Config}, {FromRun, e.Run}} {
		for k, v := range layer.m {
			env[k] = entry{v, layer.from}
		}
	}
	delete(env, "CLAUDECODE")
	delete(env, proc.MarkerEnv)
	for k, en := range env {
		if en.from == "" && RelaySecret(k) {
			delete(env, k) // inherited only: claude.env and the run's env are the user's own choice
		}
	}
	if e.RemoveAPIKey {
		delete(env, "ANTHROPIC_API_KEY")
	}
	out := make([]string, 0, len(env)+1)
	var dropped []Dropped
	for k, en := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(en.value, 0) {
			if en.from != "" {
				dropped = append(dropped, Dropped{Name: k, From: en.from})
			}
			continue
		}
		out = append(out, k+"="+en.value)
	}
	slices.Sort(out)
	slices.SortFunc(dropped, func(a, b Dropped) int { return strings.Compare(a.Name, b.Name) })
	// The marker lets proc find every process of the run, even tools that
	// left the process group, and what a crashed helper left behind.
	return append(out, proc.MarkerEnvEntry(e.RunID)), dropped
}
