//go:build !unix

package discovery

import (
	"io/fs"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// killGroupOnCancel keeps exec's default (kill the child); there are no
// POSIX process groups here.
func killGroupOnCancel(*exec.Cmd) {}

func isExecutable(fi fs.FileInfo) bool {
	if !fi.Mode().IsRegular() {
		return false
	}
	if runtime.GOOS != "windows" {
		return fi.Mode().Perm()&0o111 != 0
	}
	switch strings.ToLower(filepath.Ext(fi.Name())) {
	case ".exe", ".cmd", ".bat", ".com":
		return true
	}
	return false
}

func exeNames(base string) []string {
	if runtime.GOOS == "windows" {
		return []string{base + ".exe", base + ".cmd"}
	}
	return []string{base}
}
