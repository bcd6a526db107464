//go:build unix

package fakecli

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
)

// startTree starts the child of ModeGrandchild, which starts the grandchild
// and reports its pid on stdout. It returns once both exist.
func startTree() (child *exec.Cmd, leafPid int, err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, 0, fmt.Errorf("locating the test binary: %w", err)
	}
	child = exec.Command(exe)
	child.Env = append(os.Environ(), EnvHelper+"=1", EnvMode+"="+string(modeTreeChild))
	out, err := child.StdoutPipe()
	if err != nil {
		return nil, 0, fmt.Errorf("piping the tree child's stdout: %w", err)
	}
	if err := child.Start(); err != nil {
		return nil, 0, fmt.Errorf("starting the tree child: %w", err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err == nil {
		leafPid, err = strconv.Atoi(strings.TrimSpace(line))
	}
	if err != nil {
		child.Process.Kill()
		child.Wait()
		return nil, 0, fmt.Errorf("reading the grandchild's pid from the tree child: %w", err)
	}
	return child, leafPid, nil
}

// runTreeChild is the middle of ModeGrandchild's tree: it starts the
// grandchild in a session of its own, so killing the fake's process group
// misses it (the real Bash tool does the same), prints its pid and waits.
func runTreeChild() int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "fake claude child: locating the test binary: %v\n", err)
		return 1
	}
	// stdin and stderr stay nil (/dev/null): the grandchild must not hold the
	// host's pipes open. Its stdout is ours, for the readiness line.
	leaf := exec.Command(exe)
	leaf.Env = append(os.Environ(), EnvHelper+"=1", EnvMode+"="+string(modeTreeLeaf))
	leaf.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := leaf.StdoutPipe()
	if err != nil {
		fmt.Fprintf(os.Stderr, "fake claude child: piping the grandchild's stdout: %v\n", err)
		return 1
	}
	if err := leaf.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "fake claude child: starting the grandchild: %v\n", err)
		return 1
	}
	// Report the pid only once the grandchild ignores signals, so a test
	// that reads the pid file and signals it at once sees it survive.
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		fmt.Fprintf(os.Stderr, "fake claude child: waiting for the grandchild: %v\n", err)
		leaf.Process.Kill()
		leaf.Wait()
		return 1
	}
	fmt.Println(leaf.Process.Pid)
	// Reap the grandchild when it is killed (pid 1 here reaps nothing), then
	// stay alive until killed ourselves.
	leaf.Wait()
	sleepForever()
	return 0
}

// runTreeLeaf is the grandchild of ModeGrandchild: it ignores SIGINT and
// SIGTERM, says so, and sleeps until killed.
func runTreeLeaf() int {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
	fmt.Println("ready")
	sleepForever()
	return 0
}
