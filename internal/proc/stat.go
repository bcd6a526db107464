//go:build linux

package proc

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

var errBadStat = errors.New("proc: malformed stat line")

// stat holds the fields of /proc/PID/stat we use.
type stat struct {
	state     byte   // field 3: R, S, D, Z, X, ...
	ppid      int    // field 4
	pgrp      int    // field 5
	startTime uint64 // field 22
}

// dead reports whether the process has exited: a zombie is dead, whether or
// not anybody will ever reap it.
func (s stat) dead() bool { return s.state == 'Z' || s.state == 'X' || s.state == 'x' }

// parseStat parses the contents of /proc/PID/stat. The command name (field 2)
// is in parentheses but may itself contain spaces and parentheses, so the
// fields after it start at the last ')'.
func parseStat(b []byte) (stat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, fmt.Errorf("%w: no ')'", errBadStat)
	}
	// Fields from 3 (state) onwards.
	f := bytes.Fields(b[i+1:])
	const startIdx = 22 - 3
	if len(f) <= startIdx {
		return stat{}, fmt.Errorf("%w: %d fields after the command", errBadStat, len(f))
	}
	if len(f[0]) != 1 {
		return stat{}, fmt.Errorf("%w: state %q", errBadStat, f[0])
	}
	var s stat
	var err error
	s.state = f[0][0]
	if s.ppid, err = strconv.Atoi(string(f[1])); err != nil {
		return stat{}, fmt.Errorf("%w: ppid: %w", errBadStat, err)
	}
	if s.pgrp, err = strconv.Atoi(string(f[2])); err != nil {
		return stat{}, fmt.Errorf("%w: pgrp: %w", errBadStat, err)
	}
	if s.startTime, err = strconv.ParseUint(string(f[startIdx]), 10, 64); err != nil {
		return stat{}, fmt.Errorf("%w: starttime: %w", errBadStat, err)
	}
	return s, nil
}

// PPID is the parent pid in the contents of /proc/PID/stat.
func PPID(stat []byte) (int, error) {
	s, err := parseStat(stat)
	return s.ppid, err
}

// hasEnvEntry reports whether a NUL-separated environment block (the
// contents of /proc/PID/environ) contains exactly the entry: "K=v" matches
// neither "K=vv" nor "XK=v".
func hasEnvEntry(environ []byte, entry string) bool {
	if entry == "" {
		return false
	}
	for len(environ) > 0 {
		var e []byte
		e, environ, _ = bytes.Cut(environ, []byte{0})
		if string(e) == entry {
			return true
		}
	}
	return false
}
