package terminal

import (
	"os"

	"golang.org/x/sys/unix"
)

// saveTerminal records the terminal modes of f and returns a function that
// puts them back: a CLI killed in raw mode would leave the shell unusable.
func saveTerminal(f *os.File) func() {
	t, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	if err != nil {
		return func() {} // not a terminal
	}
	return func() { unix.IoctlSetTermios(int(f.Fd()), unix.TCSETS, t) } //nolint:errcheck
}
