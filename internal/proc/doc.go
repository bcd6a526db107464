// Package proc finds and stops every process a run started, including the ones
// that escaped the CLI's process group, and cleans up after a crashed helper.
//
// The CLI runs in a process group of its own, but its Bash tool puts each
// command in a new session (setsid), so kill(-pgid) misses it. A run's tree is
// therefore the union of four views: the CLI itself, its process group, its
// descendants by parent pid, and every process carrying the run's marker
// environment variable (MarkerEnv), which all descendants inherit whatever
// session or parent they end up in. The marker also lets the next helper start
// find what a SIGKILLed helper left behind (Registry.Cleanup).
//
// Stopping the orphans is half of it: the backend must also hear that the
// run ended, or its session stays "running". A record names the run's
// SpoolKey (session and current interaction), and ClaimDead hands each dead
// helper's run to exactly one process, the one holding the run's spool, by
// renaming the record to a claim file named after the claimer; rename(2)
// of one path succeeds once, so helpers starting together never both post.
// A claim whose holder died is taken over the same way.
//
// The run ID is the client's, so it is not unique on the machine: another
// helper may have a run of the same ID live. Each start of a run therefore
// also carries a random token (TokenEnv); a Tree or Record with a Token takes
// only the marked processes that carry it too, and never another helper's.
//
// A process is identified by its pid and its start time (Proc): pids are
// reused, so nothing is signalled unless its start time still matches what
// was found. Zombies count as dead: pid 1 on our machines does not reap
// orphans, so a killed orphan stays a zombie forever.
//
// Linux has the full behaviour (it reads /proc). Other Unix systems (macOS,
// the BSDs) can signal known pids and groups but cannot discover descendants
// or marked processes. claude-relay builds on Unix only, so there is nothing
// here for other systems.
package proc
