package cli

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/internal/localbackend"
)

// stdinAttack runs as an unprivileged user. It starts the helper with a
// stdin pipe of its own making, as an editor would, waits for ready, then
// does what a tool of the agent (same user) would: write an approve-style
// command to /proc/<helper>/fd/0 and read /proc/<helper>/environ.
const stdinAttack = `set -u
cd "$1"
( sleep 8 ) | env CLAUDE_RELAY_TEST_MAIN=1 HOME="$1" ./claude-relay extension > out.ndjson 2> err.log &
pid=$!
for i in $(seq 1 300); do grep -q '"event":"ready"' out.ndjson 2>/dev/null && break; sleep 0.1; done
grep -q '"event":"ready"' out.ndjson || { echo "never-ready"; cat err.log; exit 0; }
if ( printf '%s\n' '{"action":"status","request_id":"forged-from-proc"}' > /proc/$pid/fd/0 ) 2>/dev/null; then echo fd0-wrote; else echo fd0-refused; fi
if cat /proc/$pid/environ > /dev/null 2>&1; then echo environ-read; else echo environ-refused; fi
if cat /proc/$pid/mem > /dev/null 2>&1; then echo mem-read; else echo mem-refused; fi
# The embedded default's server reads its options, tokens included, from
# its stdin: closed alike.
server=
for c in $(cat /proc/$pid/task/*/children); do grep -q embedded-backend /proc/$c/cmdline 2>/dev/null && server=$c; done
if [ -z "$server" ]; then echo no-server
elif ( printf '%s\n' '{"serve_tokens":[{"token":"forged"}]}' > /proc/$server/fd/0 ) 2>/dev/null; then echo server-fd0-wrote; else echo server-fd0-refused; fi
sleep 1
kill $pid 2>/dev/null
`

// TestHelperStdinClosedToItsUser is issue 22's second finding: a process of
// the helper's own user (the agent's Bash runs as that user) must not be
// able to write commands into the helper's stdin through /proc, nor read
// its environment or memory. Root bypasses these checks, so the attack runs
// as an unprivileged user (setpriv), which also starts the helper.
func TestHelperStdinClosedToItsUser(t *testing.T) {
	t.Parallel()
	setpriv, err := exec.LookPath("setpriv")
	if os.Geteuid() != 0 || err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("needs root and setpriv (util-linux) to run the attack as another user: euid %d, %v", os.Geteuid(), err)
		}
		t.Skipf("needs root and setpriv to run the attack as another user (euid %d, %v)", os.Geteuid(), err)
	}
	const uid = "65534" // nobody
	dir, err := os.MkdirTemp("", "harden-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "claude-relay")
	copyFile(t, os.Args[0], bin)
	server := filepath.Join(dir, localbackend.ServerName) // the embedded default runs in it
	copyFile(t, os.Args[0], server)
	for _, p := range []string{dir, bin, server} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(setpriv, "--reuid="+uid, "--regid="+uid, "--clear-groups", "sh", "-c", stdinAttack, "sh", dir)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), goraceEnv()}
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the attack script: %v\n%s", err, got)
	}
	res := strings.Fields(string(got))
	want := []string{"fd0-refused", "environ-refused", "mem-refused", "server-fd0-refused"}
	if strings.Join(res, " ") != strings.Join(want, " ") {
		out, _ := os.ReadFile(filepath.Join(dir, "out.ndjson"))
		t.Errorf("as the helper's own user: %q, want %q\nhelper stdout:\n%s", res, want, out)
	}
	if out, _ := os.ReadFile(filepath.Join(dir, "out.ndjson")); strings.Contains(string(out), "forged-from-proc") {
		t.Errorf("the helper served a command written to /proc/PID/fd/0:\n%s", out)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
