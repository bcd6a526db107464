package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/claude-relay/claude-relay/internal/harden"
)

// EnvTokenFD names a file descriptor the helper reads its backend token
// from at start (the VS Code extension passes one), so that the token is
// in no environment: not the helper's, whose /proc/PID/environ its user's
// processes could read, nor anything the helper starts.
const EnvTokenFD = "CLAUDE_RELAY_BACKEND_TOKEN_FD"

// envBackendToken is where a token read from EnvTokenFD takes effect:
// backend.token, as if the environment had set it (it outranks the config
// file, and a flag still outranks it).
const envBackendToken = "CLAUDE_RELAY_BACKEND_TOKEN"

// Bounds on reading EnvTokenFD: a token is short, and a writer that never
// closes the pipe must not hang the helper's start.
const (
	maxTokenFromFD = 4 << 10
	tokenFDTimeout = 5 * time.Second
)

// hardenProcess makes the process non-dumpable (package harden) so that
// processes of the same user, the agent's tools among them, can neither
// write to its stdin through /proc/PID/fd/0 nor read its environment or
// memory. A failure is said once and does not stop the command.
func hardenProcess(stderr io.Writer) {
	if err := harden.NoDump(); err != nil && !errors.Is(err, harden.ErrUnsupported) {
		fmt.Fprintln(stderr, "claude-relay: warning: cannot protect this process from same-user inspection:", err)
	}
}

// tokenFromFD reads the backend token from the descriptor EnvTokenFD names,
// closes it, and returns lookup with backend.token's variable answering that
// token. Without EnvTokenFD it returns lookup unchanged.
func tokenFromFD(lookup func(string) (string, bool)) (func(string) (string, bool), error) {
	v, ok := lookup(EnvTokenFD)
	if !ok || strings.TrimSpace(v) == "" {
		return lookup, nil
	}
	fd, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("%s=%q: want the number of an inherited file descriptor holding the backend token (3 or more)", EnvTokenFD, v)
	}
	if !fdOpen(fd) {
		return nil, fmt.Errorf("%s=%d: descriptor %d is not open; the launcher must pass the backend token on it "+
			"(or unset %s and set backend.token_file)", EnvTokenFD, fd, fd, EnvTokenFD)
	}
	f := os.NewFile(uintptr(fd), "backend-token-fd")
	type read struct {
		b   []byte
		err error
	}
	done := make(chan read, 1)
	go func() { // bounded: Close below ends a read that is still blocked
		b, err := io.ReadAll(io.LimitReader(f, maxTokenFromFD+1))
		done <- read{b, err}
	}()
	var r read
	select {
	case r = <-done:
	case <-time.After(tokenFDTimeout):
		f.Close()
		<-done
		return nil, fmt.Errorf("%s=%d: nothing closed the descriptor within %v; the launcher must write the token and close its end",
			EnvTokenFD, fd, tokenFDTimeout)
	}
	f.Close() // children must not inherit it
	if r.err != nil {
		return nil, fmt.Errorf("%s=%d: cannot read the backend token from it (%w); the launcher must write the token to a pipe "+
			"on that descriptor and close its end (or unset %s and set backend.token_file)", EnvTokenFD, fd, r.err, EnvTokenFD)
	}
	if len(r.b) > maxTokenFromFD {
		return nil, fmt.Errorf("%s=%d: more than %d bytes; it must hold only the backend token", EnvTokenFD, fd, maxTokenFromFD)
	}
	tok := strings.TrimSpace(string(r.b))
	if tok == "" {
		return lookup, nil
	}
	return func(name string) (string, bool) {
		if name == envBackendToken {
			return tok, true
		}
		return lookup(name)
	}, nil
}
