package cli

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestTokenFromFD: the token on a descriptor becomes backend.token's
// variable, the descriptor is closed, and a bad descriptor is an error
// that says what to do.
func TestTokenFromFD(t *testing.T) {
	// Raw descriptors: tokenFromFD closes the read end, which an *os.File
	// would close again when collected.
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	w := os.NewFile(uintptr(p[1]), "w")
	w.WriteString("  tok-from-fd-0123456789\n")
	w.Close()
	fd := strconv.Itoa(p[0])
	env := map[string]string{EnvTokenFD: fd, "OTHER": "x"}
	lookup, err := tokenFromFD(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := lookup(envBackendToken); v != "tok-from-fd-0123456789" {
		t.Errorf("backend token %q", v)
	}
	if v, _ := lookup("OTHER"); v != "x" {
		t.Errorf("other variables: %q", v)
	}
	if fdOpen(p[0]) {
		t.Errorf("descriptor %s still open after reading the token", fd)
	}
	for _, bad := range []string{"x", "1", "987"} {
		_, err := tokenFromFD(func(k string) (string, bool) { return map[string]string{EnvTokenFD: bad}[k], k == EnvTokenFD })
		if err == nil || !strings.Contains(err.Error(), EnvTokenFD) {
			t.Errorf("%s=%s: %v, want an error naming the variable", EnvTokenFD, bad, err)
		}
	}
	same, err := tokenFromFD(func(string) (string, bool) { return "", false })
	if err != nil || same == nil {
		t.Errorf("without the variable: %v", err)
	}
}
