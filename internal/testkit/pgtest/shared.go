package pgtest

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
)

// Shared is one server per test binary, started on first use:
//
//	var pg pgtest.Shared
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		pg.Stop()
//		os.Exit(code)
//	}
//
// Without the binaries, Database skips the test, or fails it when the
// environment has CI=true (CI must run these tests).
type Shared struct {
	once sync.Once
	srv  *Server
	err  error
}

// Server returns the shared server, starting it on first use.
func (sh *Shared) Server(t testing.TB) *Server {
	t.Helper()
	sh.once.Do(func() { sh.srv, sh.err = Start(context.Background()) })
	switch {
	case sh.err == nil:
		return sh.srv
	case errors.Is(sh.err, ErrNoPostgres) && os.Getenv("CI") != "true":
		t.Skip(sh.err)
	}
	t.Fatal(sh.err)
	return nil
}

// Database is a new database of the shared server, dropped when t ends.
func (sh *Shared) Database(t testing.TB) string {
	t.Helper()
	return sh.Server(t).Database(t)
}

// Stop stops the shared server if it was started.
func (sh *Shared) Stop() {
	sh.once.Do(func() { sh.err = errors.New("pgtest: shared server already stopped") })
	if sh.srv != nil {
		_ = sh.srv.Stop()
	}
}
