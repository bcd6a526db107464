package localbackend

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ServerName is the executable that links the reference backend
// (cmd/claude-relay-server). claude-relay hands `serve` to it and starts it
// as a child for the embedded default.
const ServerName = "claude-relay-server"

// ServerNotFoundError is ServerPath finding no ServerName.
type ServerNotFoundError struct {
	Looked []string // the paths tried
	Err    error    // why the last one is not it
}

func (e *ServerNotFoundError) Error() string {
	return fmt.Sprintf("%s not found beside claude-relay (looked for %s: %v): serve and the embedded default backend run in it; "+
		"install both executables in one directory (`make build` puts both in bin/, `go install ./cmd/...` both in GOBIN)",
		ServerName, strings.Join(e.Looked, ", "), e.Err)
}

func (e *ServerNotFoundError) Unwrap() error { return e.Err }

// ServerPath finds ServerName in the directory of this executable, or of
// the file it links to. Nowhere else: one found on PATH could be another
// version's.
func ServerPath() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", &ServerNotFoundError{Err: err}
	}
	dirs := []string{filepath.Dir(exe)}
	if real, err := filepath.EvalSymlinks(exe); err == nil && filepath.Dir(real) != dirs[0] {
		dirs = append(dirs, filepath.Dir(real))
	}
	nf := &ServerNotFoundError{}
	for _, d := range dirs {
		p := filepath.Join(d, ServerName)
		nf.Looked = append(nf.Looked, p)
		fi, err := os.Stat(p)
		switch {
		case err != nil:
			nf.Err = err
		case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
			nf.Err = fmt.Errorf("not an executable file (mode %v)", fi.Mode())
		default:
			return p, nil
		}
	}
	return "", nf
}
