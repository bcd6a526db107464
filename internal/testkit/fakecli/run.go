package fakecli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// run is the fake CLI's main; it returns the exit status.
func run() int {
	cfg, err := configFromEnv()
	if err != nil {
		fmt.Fprintf(os.Stderr, "fake claude: %v\n", err)
		return 2
	}
	switch cfg.mode {
	case modeTreeChild:
		return runTreeChild()
	case modeTreeLeaf:
		return runTreeLeaf()
	}

	if cfg.pidFile != "" {
		if err := writePidFile(cfg.pidFile, os.Getpid()); err != nil {
			fmt.Fprintf(os.Stderr, "fake claude: %v\n", err)
			return 2
		}
	}
	f := newFake(cfg, parseArgs(os.Args[1:]))
	if cfg.recordFile != "" {
		if f.record, err = openRecord(cfg.recordFile); err != nil {
			fmt.Fprintf(os.Stderr, "fake claude: %v\n", err)
			return 2
		}
		defer f.record.Close()
	}

	switch cfg.mode {
	case ModeHang:
		sleepForever()
	case ModeNormal, ModeSlow:
		f.turnFn = f.textTurn
	case ModeNoExit:
		f.turnFn = f.textTurn
		f.serve()
		sleepForever()
	case ModeANSI:
		writeANSI()
		f.turnFn = f.textTurn
	case ModeTool:
		f.turnFn = f.toolTurn
	case ModeMalformed:
		f.turnFn = f.malformedTurn
	case ModeHugeLine:
		f.turnFn = f.hugeTurn
	case ModeFlood:
		f.turnFn = f.floodTurn
	case ModeApprovals:
		f.turnFn = f.approvalsTurn
	case ModeCrash:
		f.turnFn = f.crashTurn
	case ModeIgnoreSignals:
		signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
		f.honoursInterrupt = false
		f.turnFn = f.stuckTurn
	case ModeGrandchild:
		signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
		f.honoursInterrupt = false
		f.turnFn = f.treeTurn
	default:
		fmt.Fprintf(os.Stderr, "fake claude: unknown %s=%q; use one of the fakecli.Mode constants\n", EnvMode, cfg.mode)
		return 2
	}
	return f.serve()
}

// cliArgs are the few real CLI flags the fake honours.
type cliArgs struct {
	resume         string
	forkSession    bool
	permissionMode string
	model          string
}

func parseArgs(args []string) cliArgs {
	var a cliArgs
	for i := 0; i < len(args); i++ {
		name, val, hasVal := strings.Cut(args[i], "=")
		next := func() string {
			if hasVal {
				return val
			}
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return ""
		}
		switch name {
		case "--resume", "-r":
			a.resume = next()
		case "--fork-session":
			a.forkSession = true
		case "--permission-mode":
			a.permissionMode = next()
		case "--model":
			a.model = next()
		}
	}
	return a
}

// sessionID picks the session id like the real CLI: --resume keeps the
// resumed id, --fork-session makes a new one. An explicit option wins.
func (a cliArgs) sessionID(option string) string {
	switch {
	case option != "":
		return option
	case a.resume != "" && a.forkSession:
		return newUUID()
	case a.resume != "":
		return a.resume
	}
	return DefaultSessionID
}

// writePidFile replaces path with pids, one per line. Write-then-rename so
// a test polling the file never reads half of it.
func writePidFile(path string, pids ...int) error {
	var b []byte
	for _, p := range pids {
		b = append(strconv.AppendInt(b, int64(p), 10), '\n')
	}
	if err := replaceFile(path, b); err != nil {
		return fmt.Errorf("writing pid file: %w", err)
	}
	return nil
}

// replaceFile replaces path with data: write-then-rename, so a reader sees
// the old file or the whole new one, never half of it.
func replaceFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".fakecli-*")
	if err != nil {
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	return nil
}

// openRecord opens the record file and writes the arguments as its first
// line.
func openRecord(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening record file: %w", err)
	}
	args := os.Args[1:]
	if args == nil {
		args = []string{}
	}
	b, _ := json.Marshal(args) // a []string always marshals
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return nil, fmt.Errorf("writing record file %s: %w", path, err)
	}
	return f, nil
}

// sleepForever blocks for good. A sleeping timer, unlike select{}, keeps the
// runtime from calling a process whose goroutines all wait a deadlock.
func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}
