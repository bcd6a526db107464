//go:build !linux

package harden

// NoDump does nothing here: other platforms keep their own rules for who
// may inspect a process (macOS: same user, with task_for_pid limits).
func NoDump() error { return ErrUnsupported }

// Dumpable reports true: nothing was changed.
func Dumpable() (bool, error) { return true, ErrUnsupported }
