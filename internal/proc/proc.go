package proc

import (
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// MarkerEnv is the environment variable every run's child carries, set to the
// run ID. Descendants inherit it across setsid and reparenting, which makes it
// the one reliable way to find a tool command that left the CLI's group.
const MarkerEnv = "CLAUDE_RELAY_RUN"

// TokenEnv is the environment variable that tells one start of a run from
// every other process marked with the same run ID. Run IDs come from clients,
// so two helpers (two editor windows, two test binaries) may each have a run
// "run-1" live at once; a cleanup that went by the run ID alone would kill
// the other helper's run, which then ends as if its CLI had quit. A Tree or
// Record with a Token only takes processes that carry both entries.
const TokenEnv = "CLAUDE_RELAY_RUN_TOKEN"

// NewToken returns a random token for one start of a run.
func NewToken() string { return rand.Text() }

// TokenEnvEntry returns the "NAME=value" entry to add to a run's child
// environment, next to MarkerEnvEntry.
func TokenEnvEntry(token string) string {
	return TokenEnv + "=" + token
}

// WithToken returns a copy of env whose only TokenEnv entry is token's. An
// inherited one (a helper started by a tool of another run has it) would
// make the child carry two.
func WithToken(env []string, token string) []string {
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, TokenEnv+"=") })
	return append(out, TokenEnvEntry(token))
}

var (
	// ErrNotFound means no process has the pid.
	ErrNotFound = errors.New("proc: no such process")
	// ErrInvalidRunID means a run ID is empty or not usable as a file name.
	ErrInvalidRunID = errors.New("proc: invalid run ID")
)

// Proc identifies one process. The start time tells a process from a later
// one that got the same pid.
type Proc struct {
	PID int `json:"pid"`
	// StartTime is field 22 of /proc/PID/stat: clock ticks since boot. It is
	// zero on systems without /proc.
	StartTime uint64 `json:"startTime"`
}

func (p Proc) String() string {
	return fmt.Sprintf("pid %d (start %d)", p.PID, p.StartTime)
}

// MarkerEnvEntry returns the "NAME=value" entry to add to a run's child
// environment.
func MarkerEnvEntry(runID string) string {
	return MarkerEnv + "=" + runID
}

// SurvivorsError lists the processes still alive after KillAll gave up.
type SurvivorsError struct {
	Survivors []Proc
	Err       error // why it gave up, typically the context's error
}

func (e *SurvivorsError) Error() string {
	msg := fmt.Sprintf("proc: %d process(es) survived SIGKILL:", len(e.Survivors))
	for i, p := range e.Survivors {
		if i > 0 {
			msg += ","
		}
		msg += " " + p.String()
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *SurvivorsError) Unwrap() error { return e.Err }
