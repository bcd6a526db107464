package proc

import (
	"errors"
	"fmt"
)

// MarkerEnv is the environment variable every run's child carries, set to the
// run ID. Descendants inherit it across setsid and reparenting, which makes it
// the one reliable way to find a tool command that left the CLI's group.
const MarkerEnv = "CLAUDE_RELAY_RUN"

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
