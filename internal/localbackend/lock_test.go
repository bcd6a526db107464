package localbackend

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestLock: an exclusive holder refuses at once; a command probing for a
// serve (a shared lock for an instant) is waited out instead.
func TestLock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lock, err := Acquire(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if pid, held := lockHolder(dir); !held || pid != os.Getpid() {
		t.Errorf("holder: pid %d held %v, want pid %d", pid, held, os.Getpid())
	}
	_, err = Acquire(context.Background(), dir)
	var busy *HeldError
	if !errors.As(err, &busy) || busy.PID != os.Getpid() || busy.URL != "" || busy.DataDir != dir {
		t.Fatalf("second lock: %v", err)
	}
	if want := fmt.Sprintf("another serve (pid %d, still starting) already uses data dir %s;", os.Getpid(), dir); !strings.HasPrefix(err.Error(), want) {
		t.Errorf("message %q, want it to start %q", err, want)
	}
	lock.Close()

	probe, err := os.Open(filepath.Join(dir, LockFile))
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	if err := unix.Flock(int(probe.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := Acquire(context.Background(), dir)
		if err == nil {
			l.Close()
		}
		got <- err
	}()
	time.Sleep(50 * time.Millisecond) // let it meet the probe's lock (not an assertion: passing early is fine)
	if err := unix.Flock(int(probe.Fd()), unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Errorf("lock after a probe let go: %v", err)
	}
}

// TestLockAdvertise: an advertised holder is named with its address by a
// refused serve and found by Find; Close withdraws serve.json and frees the
// data dir, and a second Close does nothing.
func TestLockAdvertise(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer live.Close()
	lock, err := Acquire(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Advertise(live.URL); err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(context.Background(), dir)
	if want := (&HeldError{DataDir: dir, PID: os.Getpid(), URL: live.URL}); err == nil || err.Error() != want.Error() {
		t.Errorf("second lock: %v, want %v", err, want)
	}
	if p := Find(context.Background(), dir, StartWait); !p.Ready || p.PID != os.Getpid() || p.Info.URL != live.URL {
		t.Errorf("Find: %+v, want this process at %s", p, live.URL)
	}
	if err := lock.Close(); err != nil {
		t.Fatal(err)
	}
	if err := lock.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, InfoFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s after Close: %v, want it gone", InfoFile, err)
	}
	if p := Find(context.Background(), dir, StartWait); p.Held || p.Ready {
		t.Errorf("Find after Close: %+v, want a free data dir", p)
	}
}

// TestFindIgnoresStaleInfo: serve.json naming a live process and a URL that
// answers is still not used when nobody holds the data dir's lock (a killed
// serve's pid and port may both be someone else's by now).
func TestFindIgnoresStaleInfo(t *testing.T) {
	t.Parallel()
	impostor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer impostor.Close()
	dir := t.TempDir()
	lock, err := Acquire(context.Background(), dir) // the serve that wrote it, since gone
	if err != nil {
		t.Fatal(err)
	}
	lock.Close()
	if err := writeInfo(dir, Info{URL: impostor.URL, PID: os.Getpid(), Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if p := Find(context.Background(), dir, StartWait); p.Held || p.Ready {
		t.Errorf("Find trusted a serve.json nobody holds: %+v", p)
	}
}

// TestFindWaitsForStartingServe: a serve that holds the lock but has not
// yet replaced a dead serve's serve.json is waited for, not skipped.
func TestFindWaitsForStartingServe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer live.Close()
	if err := writeInfo(dir, Info{URL: live.URL, PID: deadPID(t)}); err != nil {
		t.Fatal(err)
	}
	lock, err := Acquire(context.Background(), dir) // this test is the starting serve
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	found := make(chan Probe, 1)
	go func() { found <- Find(context.Background(), dir, time.Minute) }()
	if err := lock.Advertise(live.URL); err != nil {
		t.Fatal(err)
	}
	if p := <-found; !p.Ready || p.PID != os.Getpid() || p.Info.URL != live.URL {
		t.Errorf("lookup: %+v, want the starting serve (pid %d)", p, os.Getpid())
	}
}

// deadPID is the pid of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestLocalURL(t *testing.T) {
	for _, tc := range []struct {
		ip   net.IP
		want string
	}{
		{net.IPv4zero, "http://127.0.0.1:8788"},
		{net.IPv6unspecified, "http://127.0.0.1:8788"},
		{net.IPv4(127, 0, 0, 1), "http://127.0.0.1:8788"},
		{net.IPv6loopback, "http://[::1]:8788"},
		{net.IPv4(192, 168, 1, 5), "http://192.168.1.5:8788"},
	} {
		if got := LocalURL(&net.TCPAddr{IP: tc.ip, Port: 8788}); got != tc.want {
			t.Errorf("LocalURL(%s) = %q, want %q", tc.ip, got, tc.want)
		}
	}
}
