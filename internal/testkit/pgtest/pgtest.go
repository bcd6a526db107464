// Package pgtest runs a throwaway PostgreSQL server for tests: initdb into a
// temporary directory, postgres on a free loopback port (its unix socket in
// that directory too), trust authentication, and a fresh database per test.
//
// Start it once per test binary (Shared, stopped from TestMain) and take a
// database per test: creating a database takes milliseconds, starting a
// server a second or two.
//
// initdb and postgres refuse to run as root; as root, pgtest runs them as the
// "postgres" OS user, which owns the directory.
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNoPostgres means the server binaries are not installed.
var ErrNoPostgres = errors.New("pgtest: PostgreSQL server binaries (initdb, postgres) not found: install postgresql (Debian: apt-get install postgresql)")

// binGlob is searched after PATH, newest major version first.
const binGlob = "/usr/lib/postgresql/*/bin"

// Server is a running PostgreSQL server.
type Server struct {
	dir     string
	port    int
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the server process has exited
	waitErr error

	mu sync.Mutex // serializes CREATE DATABASE
	n  int

	stopOnce sync.Once
	stopErr  error
}

// FindBinaries returns the directory that holds initdb and postgres.
func FindBinaries() (string, error) {
	var dirs []string
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			dirs = append(dirs, filepath.Dir(real))
		}
		dirs = append(dirs, filepath.Dir(p))
	}
	versions, _ := filepath.Glob(binGlob)
	sort.Sort(sort.Reverse(sort.StringSlice(versions)))
	dirs = append(dirs, versions...)
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", ErrNoPostgres
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// Start initializes a cluster in a new temporary directory and starts the
// server; it returns once the server accepts connections. Stop it with Stop.
func Start(ctx context.Context) (*Server, error) {
	bin, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	if err := chown(dir, cred); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{dir: dir}
	if err := s.initdb(ctx, bin, cred); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	// The port is free when we look; another process may take it before
	// postgres binds it, so try a few.
	for attempt := 0; ; attempt++ {
		err = s.start(ctx, bin, cred)
		if err == nil {
			return s, nil
		}
		if attempt == 2 || ctx.Err() != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
}

func (s *Server) initdb(ctx context.Context, bin string, cred *owner) error {
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", s.dataDir(), "-U", "postgres",
		"-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	cmd.SysProcAttr = sysProcAttr(cred)
	cmd.Dir = s.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pgtest: initdb in %s: %w\n%s", s.dir, err, out.Bytes())
	}
	return nil
}

func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }
func (s *Server) logPath() string { return filepath.Join(s.dir, "postgres.log") }

func (s *Server) start(ctx context.Context, bin string, cred *owner) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	logf, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer logf.Close() // the child has its own copy
	// Durability settings off: the data dies with the test anyway.
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", s.dataDir(), "-p", strconv.Itoa(port),
		"-k", s.dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
		"-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=300",
		"-c", "shared_buffers=32MB")
	cmd.SysProcAttr = sysProcAttr(cred)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	s.port, s.cmd, s.exited = port, cmd, make(chan struct{})
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(ctx); err != nil {
		s.kill()
		return err
	}
	return nil
}

// waitReady polls until the server accepts a connection.
func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(cctx, s.URL("postgres"))
		ccancel()
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-s.exited:
			return fmt.Errorf("pgtest: postgres exited (%v) before accepting connections:\n%s", s.waitErr, s.logTail())
		case <-ctx.Done():
			return fmt.Errorf("pgtest: postgres not ready: %w (last error: %v)\n%s", ctx.Err(), err, s.logTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (s *Server) logTail() []byte {
	b, _ := os.ReadFile(s.logPath())
	if len(b) > 4096 {
		b = b[len(b)-4096:]
	}
	return b
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// URL is the connection URL of database db.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// CreateDatabase creates a new, empty database and returns its URL.
func (s *Server) CreateDatabase(ctx context.Context) (name, url string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	name = fmt.Sprintf("test_%d", s.n)
	if err := s.admin(ctx, "CREATE DATABASE "+name); err != nil {
		return "", "", fmt.Errorf("pgtest: create database %s: %w", name, err)
	}
	return name, s.URL(name), nil
}

// DropDatabase drops a database, disconnecting its clients.
func (s *Server) DropDatabase(ctx context.Context, name string) error {
	if err := s.admin(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("pgtest: drop database %s: %w", name, err)
	}
	return nil
}

func (s *Server) admin(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}

// Database creates a database for t and drops it when t ends.
func (s *Server) Database(t testing.TB) string {
	t.Helper()
	name, url, err := s.CreateDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.DropDatabase(context.Background(), name); err != nil {
			t.Logf("%v", err)
		}
	})
	return url
}

// Stop shuts the server down as `pg_ctl stop -m fast` does (SIGINT: roll
// back open transactions, disconnect clients, checkpoint), kills it if it
// has not exited after 15s, and removes its directory. It is idempotent.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		if s.cmd != nil {
			_ = s.cmd.Process.Signal(os.Interrupt)
			select {
			case <-s.exited:
			case <-time.After(15 * time.Second):
				s.kill()
			}
		}
		s.stopErr = os.RemoveAll(s.dir)
	})
	return s.stopErr
}

// kill ends the server's process group at once and waits for it.
func (s *Server) kill() {
	killGroup(s.cmd.Process)
	<-s.exited
}
