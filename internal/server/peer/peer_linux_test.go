//go:build linux

package peer

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/claude-relay/claude-relay/internal/proc"
)

// The tests re-execute the test binary as the client process: with dialEnv
// set it connects to that address, writes its pid on the connection, and
// holds the connection until the test closes it.
const (
	dialEnv   = "PEER_TEST_DIAL"
	mappedEnv = "PEER_TEST_DIAL_MAPPED" // "1": dial from an AF_INET6 socket to ::ffff:127.0.0.1
)

// patience bounds every wait so a broken helper fails the test instead of
// hanging it; it is a safety net, not a timing assertion.
const patience = 20 * time.Second

func TestMain(m *testing.M) {
	if addr := os.Getenv(dialEnv); addr != "" {
		os.Exit(runClient(addr, os.Getenv(mappedEnv) == "1"))
	}
	goleak.VerifyTestMain(m)
}

func runClient(addr string, mapped bool) int {
	c, err := dialClient(addr, mapped)
	if err != nil {
		fmt.Fprintln(os.Stderr, "peer test client:", err)
		return 2
	}
	defer c.Close()
	if _, err := fmt.Fprintf(c, "%d\n", os.Getpid()); err != nil {
		fmt.Fprintln(os.Stderr, "peer test client:", err)
		return 2
	}
	_, _ = io.Copy(io.Discard, c) // until the test closes its end
	return 0
}

// dialClient dials addr; mapped dials an IPv4 address from a dual-stack
// AF_INET6 socket, so the kernel lists the client in tcp6 as
// ::ffff:a.b.c.d (Go's own dialer would use an AF_INET socket).
func dialClient(addr string, mapped bool) (net.Conn, error) {
	if !mapped {
		return net.DialTimeout("tcp", addr, patience)
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	f := os.NewFile(uintptr(fd), "mapped-client")
	defer f.Close()
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0); err != nil {
		return nil, fmt.Errorf("IPV6_V6ONLY: %w", err)
	}
	sa := &unix.SockaddrInet6{Port: int(ap.Port()), Addr: netip.AddrFrom16(ap.Addr().As16()).As16()}
	if err := unix.Connect(fd, sa); err != nil {
		return nil, fmt.Errorf("connect to %s as ::ffff:%s: %w", addr, ap.Addr(), err)
	}
	return net.FileConn(f)
}

// network is a way for a test client to reach a test server: which
// address family each end's socket has decides which kernel table (tcp or
// tcp6) and which address form (plain or ::ffff:a.b.c.d) holds it.
type network struct {
	name string
	// listen: "127.0.0.1", "::1", or "mapped" (a dual-stack AF_INET6
	// socket bound to ::ffff:127.0.0.1, which Go's net.Listen cannot make).
	listen string
	// mappedClient dials from a dual-stack AF_INET6 socket, so the client
	// is listed in tcp6 as ::ffff:127.0.0.1.
	mappedClient bool
}

var networks = []network{
	{name: "ipv4", listen: "127.0.0.1"},
	{name: "ipv6", listen: "::1"},
	{name: "mapped-server", listen: "mapped"},
	{name: "mapped-client", listen: "127.0.0.1", mappedClient: true},
}

// listen binds the network's loopback listener. IPv6 may be missing
// locally (skip) but not in CI.
func listen(t *testing.T, nw network) net.Listener {
	t.Helper()
	var ln net.Listener
	var err error
	switch nw.listen {
	case "mapped":
		ln, err = listenMapped()
	default:
		ln, err = net.Listen("tcp", net.JoinHostPort(nw.listen, "0"))
	}
	if err != nil {
		if nw.listen != "127.0.0.1" && os.Getenv("CI") != "true" {
			t.Skipf("no %s loopback here: %v", nw.listen, err)
		}
		t.Fatalf("listen on %s: %v", nw.listen, err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// clientEnv is the environment of a helper client of ln over nw.
func clientEnv(ln net.Listener, nw network, extra ...string) []string {
	env := []string{dialEnv + "=" + ln.Addr().String()}
	if nw.mappedClient {
		env = append(env, mappedEnv+"=1")
	}
	return childEnv(append(env, extra...)...)
}

func listenMapped() (net.Listener, error) {
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "mapped-listener")
	defer f.Close()
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0); err != nil {
		return nil, err
	}
	sa := &unix.SockaddrInet6{Addr: netip.MustParseAddr("::ffff:127.0.0.1").As16()}
	if err := unix.Bind(fd, sa); err != nil {
		return nil, err
	}
	if err := unix.Listen(fd, 8); err != nil {
		return nil, err
	}
	return net.FileListener(f)
}

// client is a helper process connected to a test listener.
type client struct {
	cmd  *exec.Cmd
	conn net.Conn // the server's end
	pid  int      // what the connecting process said its pid is
}

// childEnv is our environment without the marker, plus extra. Under -race
// a child would sleep a second at exit waiting for late race reports
// (GORACE atexit_sleep_ms); ours report nothing late, so it does not.
func childEnv(extra ...string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, proc.MarkerEnv+"=") || strings.HasPrefix(kv, dialEnv+"=") ||
			strings.HasPrefix(kv, mappedEnv+"=") || strings.HasPrefix(kv, "GORACE=")
	})
	env = append(env, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	return append(env, extra...)
}

// startClient runs the test binary as a client of ln, directly or under
// `sh -c` (args), accepts its connection and reads its pid.
func startClient(t *testing.T, ln net.Listener, env []string, shell string) *client {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var cmd *exec.Cmd
	if shell != "" {
		cmd = exec.CommandContext(ctx, "sh", "-c", shell, "sh", exe, "-test.run=^$")
	} else {
		cmd = exec.CommandContext(ctx, exe, "-test.run=^$")
	}
	cmd.Env = env
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = patience
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start client: %v", err)
	}
	c := &client{cmd: cmd}
	t.Cleanup(func() {
		if c.conn != nil {
			c.conn.Close() // the client sees EOF and exits
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(patience):
			cancel() // kill the group; Wait returns then
			<-done
		}
		cancel()
	})
	type accepted struct {
		conn net.Conn
		err  error
	}
	got := make(chan accepted, 1)
	go func() {
		conn, err := ln.Accept()
		got <- accepted{conn, err}
	}()
	select {
	case a := <-got:
		if a.err != nil {
			t.Fatalf("accept: %v", a.err)
		}
		c.conn = a.conn
	case <-time.After(patience):
		ln.Close() // ends the Accept above
		<-got
		t.Fatal("the client never connected")
	}
	_ = c.conn.SetReadDeadline(time.Now().Add(patience))
	line, err := bufio.NewReader(c.conn).ReadString('\n')
	if err != nil {
		t.Fatalf("read the client's pid: %v", err)
	}
	if c.pid, err = strconv.Atoi(strings.TrimSpace(line)); err != nil {
		t.Fatalf("client's pid line %q: %v", line, err)
	}
	_ = c.conn.SetReadDeadline(time.Time{})
	return c
}

func lookup(t *testing.T, c *client) Process {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	p, err := Lookup(ctx, c.conn.LocalAddr(), c.conn.RemoteAddr())
	if err != nil {
		t.Fatalf("Lookup(%s, %s): %v", c.conn.LocalAddr(), c.conn.RemoteAddr(), err)
	}
	return p
}

// selfMarked reports whether this test process or an ancestor carries the
// marker (a test run from inside a relay run), which makes "not marked"
// impossible to observe.
func selfMarked(t *testing.T) bool {
	t.Helper()
	p, err := procFS{root: "/proc"}.chain(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return p.Marked
}

func TestLookupClientWithMarker(t *testing.T) {
	for _, nw := range networks {
		t.Run(nw.name, func(t *testing.T) {
			ln := listen(t, nw)
			c := startClient(t, ln, clientEnv(ln, nw, proc.MarkerEnv+"=run-1"), "")
			p := lookup(t, c)
			if p.PID != c.cmd.Process.Pid || p.PID != c.pid {
				t.Fatalf("PID = %d, want the client %d (it says %d)", p.PID, c.cmd.Process.Pid, c.pid)
			}
			if !p.Marked {
				t.Fatalf("client with %s set not marked: %+v", proc.MarkerEnv, p)
			}
			checkChain(t, p)
		})
	}
}

func TestLookupClientWithoutMarker(t *testing.T) {
	if selfMarked(t) {
		t.Skipf("this test process or an ancestor carries %s: an unmarked client cannot exist here", proc.MarkerEnv)
	}
	for _, nw := range networks {
		t.Run(nw.name, func(t *testing.T) {
			ln := listen(t, nw)
			// A token alone is not the marker: only CLAUDE_RELAY_RUN= counts.
			c := startClient(t, ln, clientEnv(ln, nw, proc.TokenEnv+"=tok"), "")
			p := lookup(t, c)
			if p.PID != c.cmd.Process.Pid {
				t.Fatalf("PID = %d, want the client %d", p.PID, c.cmd.Process.Pid)
			}
			if p.Marked {
				t.Fatalf("unmarked client reported marked: %+v", p)
			}
			checkChain(t, p)
		})
	}
}

// An agent's tool drops the marker from the client it runs; the shell that
// runs it (like the Bash tool's shell and the CLI above it) still has it.
func TestLookupMarkerOnlyInParent(t *testing.T) {
	for _, nw := range networks {
		t.Run(nw.name, func(t *testing.T) {
			ln := listen(t, nw)
			// "; exit" keeps sh from exec'ing its last command in place, so
			// sh stays the client's parent as a tool's shell would.
			script := `env -u ` + proc.MarkerEnv + ` "$@"; exit $?`
			c := startClient(t, ln, clientEnv(ln, nw, proc.MarkerEnv+"=run-1"), script)
			p := lookup(t, c)
			if p.PID != c.pid {
				t.Fatalf("PID = %d, want the client %d", p.PID, c.pid)
			}
			if p.PID == c.cmd.Process.Pid || len(p.Chain) < 2 || p.Chain[1] != c.cmd.Process.Pid {
				t.Fatalf("chain %v: want the client %d then its shell %d", p.Chain, c.pid, c.cmd.Process.Pid)
			}
			env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.PID))
			if err != nil {
				t.Fatal(err)
			}
			if hasMarker(env) {
				t.Fatalf("env -u left %s in the client's environment", proc.MarkerEnv)
			}
			if !p.Marked {
				t.Fatalf("client of a marked shell not marked: %+v", p)
			}
			checkChain(t, p)
		})
	}
}

// Netlink and the /proc tables must name the same socket, and it must be
// the client's own (its fd's inode), for every address-family mix.
func TestSocketInode(t *testing.T) {
	for _, nw := range networks {
		t.Run(nw.name, func(t *testing.T) {
			cc, sc := connect(t, listen(t, nw), nw.mappedClient)
			want := connInode(t, cc)
			server, err := addrPort(sc.LocalAddr())
			if err != nil {
				t.Fatal(err)
			}
			client, err := addrPort(sc.RemoteAddr())
			if err != nil {
				t.Fatal(err)
			}
			fs := procFS{root: "/proc"}
			uid := uint32(os.Geteuid())
			if got, err := fs.tableSocket(client, server); err != nil || got.inode != want || got.uid != uid {
				t.Errorf("tableSocket(%s, %s) = %+v, %v; want inode %d uid %d", client, server, got, err, want, uid)
			}
			if got, err := diagSocket(client, server); err != nil || got.inode != want || got.uid != uid {
				t.Errorf("diagSocket(%s, %s) = %+v, %v; want inode %d uid %d", client, server, got, err, want, uid)
			}
			// The server's own end is a different socket.
			if got, err := diagSocket(server, client); err != nil || got.inode == want {
				t.Errorf("diagSocket of the server end = %+v, %v; want another socket than %d", got, err, want)
			}
		})
	}
}

// connect dials ln from this process (from a dual-stack socket when
// mapped, see dialClient) and accepts the connection: the client's end and
// the server's, both closed when t ends.
func connect(t *testing.T, ln net.Listener, mapped bool) (client, server net.Conn) {
	t.Helper()
	cc, err := dialClient(ln.Addr().String(), mapped)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() })
	return cc, sc
}

// connInode is the inode of a connection's socket, as its fd link names it.
func connInode(t *testing.T, c net.Conn) uint64 {
	t.Helper()
	sc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	var serr error
	if err := sc.Control(func(fd uintptr) { serr = unix.Fstat(int(fd), &st) }); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatal(serr)
	}
	return st.Ino
}

func TestParseDiagReply(t *testing.T) {
	ne := binary.NativeEndian
	msg := func(typ uint16, payload []byte) []byte {
		b := make([]byte, nlmsgHdrLen+len(payload))
		ne.PutUint32(b, uint32(len(b)))
		ne.PutUint16(b[4:], typ)
		copy(b[nlmsgHdrLen:], payload)
		return b
	}
	errno := func(e unix.Errno) []byte {
		b := make([]byte, 4)
		ne.PutUint32(b, uint32(-int32(e)))
		return b
	}
	diag := func(uid, inode uint32) []byte {
		b := make([]byte, diagMsgLen)
		ne.PutUint32(b[diagMsgUIDOff:], uid)
		ne.PutUint32(b[diagMsgInodeOff:], inode)
		return b
	}
	if got, err := parseDiagReply(msg(unix.SOCK_DIAG_BY_FAMILY, diag(1000, 4242))); err != nil || got != (sockInfo{inode: 4242, uid: 1000}) {
		t.Errorf("a socket: %+v, %v; want inode 4242 uid 1000", got, err)
	}
	for name, tc := range map[string]struct {
		b    []byte
		want error
	}{
		"no such socket":   {msg(unix.NLMSG_ERROR, errno(unix.ENOENT)), ErrGone},
		"inode 0":          {msg(unix.SOCK_DIAG_BY_FAMILY, diag(1000, 0)), ErrGone},
		"other errno":      {msg(unix.NLMSG_ERROR, errno(unix.EINVAL)), errDiagUnavailable},
		"short inet_diag":  {msg(unix.SOCK_DIAG_BY_FAMILY, diag(1, 1)[:20]), errDiagUnavailable},
		"short header":     {[]byte{1, 2, 3}, errDiagUnavailable},
		"unknown msg type": {msg(99, diag(1, 1)), errDiagUnavailable},
	} {
		if _, err := parseDiagReply(tc.b); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
}

func FuzzParseDiagReply(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, nlmsgHdrLen+diagMsgLen))
	f.Fuzz(func(t *testing.T, b []byte) {
		if sock, err := parseDiagReply(b); err == nil && sock.inode == 0 {
			t.Fatalf("parseDiagReply(%x) accepted a socket without an inode", b)
		}
	})
}

func TestDiagNotFound(t *testing.T) {
	_, err := diagSocket(netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("127.0.0.1:2"))
	if !errors.Is(err, ErrGone) {
		t.Fatalf("diagSocket of no socket: %v, want ErrGone", err)
	}
}

// A client inside the server process itself (the backend's own HTTP
// client, or a test) is found too.
func TestLookupSameProcess(t *testing.T) {
	_, sc := connect(t, listen(t, networks[0]), false)
	p, err := Lookup(t.Context(), sc.LocalAddr(), sc.RemoteAddr())
	if err != nil {
		t.Fatal(err)
	}
	if p.PID != os.Getpid() {
		t.Fatalf("PID = %d, want ours %d", p.PID, os.Getpid())
	}
}

// Once the client closed its socket no process holds it (the kernel keeps
// it as an orphan with inode 0): ErrGone, not a wrong process. This is how
// a client that sends its decision and closes at once (bash's
// `printf … > /dev/tcp/127.0.0.1/PORT`) looks.
func TestLookupClosedClient(t *testing.T) {
	cc, sc := connect(t, listen(t, networks[0]), false)
	cc.Close()
	_, err := Lookup(t.Context(), sc.LocalAddr(), sc.RemoteAddr())
	if !errors.Is(err, ErrGone) || !errors.Is(err, ErrNotFound) {
		t.Fatalf("Lookup after the client closed: %v, want ErrGone", err)
	}
	if !strings.Contains(err.Error(), sc.RemoteAddr().String()) {
		t.Fatalf("error %q does not name the client address %s", err, sc.RemoteAddr())
	}
}

// The attack ErrGone names: bash writes a request to /dev/tcp and closes
// the socket as soon as the redirection ends, so by the time the server
// has read the request no process holds the client's end.
func TestLookupSendAndClose(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash here")
	}
	ln := listen(t, networks[0])
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	cmd := exec.CommandContext(t.Context(), bash, "-c", "printf 'POST /api/approvals/a1/decision HTTP/1.1\\r\\n\\r\\n' > /dev/tcp/127.0.0.1/"+port)
	cmd.Env = childEnv(proc.MarkerEnv + "=run-1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bash: %v: %s", err, out)
	}
	sc, err := ln.Accept() // the connection waits in the backlog
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	line, err := bufio.NewReader(sc).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "POST ") {
		t.Fatalf("read the request: %q, %v", line, err)
	}
	_, err = Lookup(t.Context(), sc.LocalAddr(), sc.RemoteAddr())
	if !errors.Is(err, ErrGone) {
		t.Fatalf("Lookup of a client that sent and closed: %v, want ErrGone", err)
	}
}

func TestLookupBadAddr(t *testing.T) {
	_, err := Lookup(t.Context(), &net.UnixAddr{Name: "/tmp/x", Net: "unix"}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1})
	if !errors.Is(err, ErrBadAddr) {
		t.Fatalf("unix address: %v, want ErrBadAddr", err)
	}
}

func TestLookupCancelled(t *testing.T) {
	_, sc := connect(t, listen(t, networks[0]), false)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Lookup(ctx, sc.LocalAddr(), sc.RemoteAddr()); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lookup with a cancelled context: %v, want context.Canceled", err)
	}
}

// checkChain: the chain starts at the client, passes through this test
// process (every client here is our descendant) and ends at pid 1.
func checkChain(t *testing.T, p Process) {
	t.Helper()
	if len(p.Chain) == 0 || p.Chain[0] != p.PID {
		t.Fatalf("chain %v does not start at the client %d", p.Chain, p.PID)
	}
	if !slices.Contains(p.Chain, os.Getpid()) {
		t.Fatalf("chain %v misses this test process %d", p.Chain, os.Getpid())
	}
	if p.Chain[len(p.Chain)-1] != 1 {
		t.Fatalf("chain %v does not end at pid 1", p.Chain)
	}
}

func littleEndian() bool { return binary.NativeEndian.Uint16([]byte{1, 0}) == 1 }

// The samples are as a little-endian kernel prints them.
func TestParseHexAddrPort(t *testing.T) {
	if !littleEndian() {
		t.Skip("samples are from a little-endian kernel")
	}
	for _, tc := range []struct {
		in   string
		want string // "" = error
	}{
		{"0100007F:1F90", "127.0.0.1:8080"},
		{"0101A8C0:0016", "192.168.1.1:22"},
		{"00000000:0000", "0.0.0.0:0"},
		{"00000000000000000000000001000000:0050", "[::1]:80"},
		{"0000000000000000FFFF00000100007F:1F90", "127.0.0.1:8080"}, // ::ffff:127.0.0.1
		{"B80D0120000000000000000001000000:01BB", "[2001:db8::1]:443"},
		{"0000000000000000ffff00000100007f:1f90", "127.0.0.1:8080"}, // lower case too
		{"0100007F", ""},
		{"0100007F:1F9", ""},
		{"0100007:1F90", ""},
		{"0100007G:1F90", ""},
		{"0100007F:GGGG", ""},
		{"000000000000000000000000010000:0050", ""},
	} {
		got, err := parseHexAddrPort(tc.in)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("parseHexAddrPort(%q) = %s, want an error", tc.in, got)
		case tc.want != "" && err != nil:
			t.Errorf("parseHexAddrPort(%q): %v", tc.in, err)
		case tc.want != "" && got.String() != tc.want:
			t.Errorf("parseHexAddrPort(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

const tcpHeader = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"

// orphanLine is the client 127.0.0.1:40000's socket to 127.0.0.1:8080 in
// TIME_WAIT: closed, draining, held by no process (inode 0).
const orphanLine = "   1: 0100007F:9C40 0100007F:1F90 06 00000000:00000000 03:00000BDB 00000000     0        0 0 3 0\n"

const tcp6Header = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"

func TestFindSocket(t *testing.T) {
	if !littleEndian() {
		t.Skip("samples are from a little-endian kernel")
	}
	client := netip.MustParseAddrPort("127.0.0.1:40000") // 9C40
	server := netip.MustParseAddrPort("127.0.0.1:8080")  // 1F90
	table := tcpHeader +
		// the server's own end of the connection: reversed, never a match
		"   0: 0100007F:1F90 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 111 1 0 20 4 30 10 -1\n" +
		// a TIME_WAIT leftover of an earlier connection with the same ports
		orphanLine +
		"   2: garbage\n" +
		"   3: 0100007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 222 1 0 20 4 30 10 -1\n"
	if got, found := findSocket([]byte(table), client, server); !found || got.inode != 222 || got.uid != 0 {
		t.Fatalf("findSocket = %+v, %v; want inode 222", got, found)
	}
	if got, found := findSocket([]byte(table), server, netip.MustParseAddrPort("127.0.0.1:1")); found {
		t.Fatalf("findSocket of an absent socket = %+v, want none", got)
	}
	orphan := tcpHeader + orphanLine
	if got, found := findSocket([]byte(orphan), client, server); !found || got.inode != 0 {
		t.Fatalf("findSocket of a TIME_WAIT socket = %+v, %v; want found with inode 0", got, found)
	}
	mapped := tcp6Header +
		"   0: 0000000000000000FFFF00000100007F:9C40 0000000000000000FFFF00000100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 333 1 0 20 4 30 10 -1\n"
	if got, found := findSocket([]byte(mapped), client, server); !found || got.inode != 333 || got.uid != 1000 {
		t.Fatalf("findSocket in tcp6 (v4-mapped) = %+v, %v; want inode 333 uid 1000", got, found)
	}
}

// fakeProc builds a /proc-like tree: net/tcp, net/tcp6 and per pid a stat
// (with its ppid), an environ and fd links.
type fakeProc struct {
	t    *testing.T
	root string
}

func newFakeProc(t *testing.T, tcp, tcp6 string) *fakeProc {
	f := &fakeProc{t: t, root: t.TempDir()}
	f.write("net/tcp", tcp)
	f.write("net/tcp6", tcp6)
	return f
}

func (f *fakeProc) write(name, content string) {
	f.t.Helper()
	p := filepath.Join(f.root, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fakeProc) proc(pid, ppid int, comm string, env []string, links ...string) {
	f.t.Helper()
	dir := strconv.Itoa(pid)
	f.write(dir+"/stat", fmt.Sprintf("%d (%s) S %d %d %d 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 1000 0 0\n", pid, comm, ppid, pid, pid))
	f.write(dir+"/environ", strings.Join(env, "\x00")+"\x00")
	if err := os.MkdirAll(filepath.Join(f.root, dir, "fd"), 0o755); err != nil {
		f.t.Fatal(err)
	}
	for i, l := range links {
		if err := os.Symlink(l, filepath.Join(f.root, dir, "fd", strconv.Itoa(i))); err != nil {
			f.t.Fatal(err)
		}
	}
}

func TestLookupFakeProc(t *testing.T) {
	if !littleEndian() {
		t.Skip("samples are from a little-endian kernel")
	}
	server := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	client := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
	lineOfUID := func(uid int) string {
		return fmt.Sprintf("   0: 0100007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000 %5d        0 4242 1 0 20 4 30 10 -1\n", uid)
	}
	line := lineOfUID(0)
	mappedLine := "   0: 0000000000000000FFFF00000100007F:9C40 0000000000000000FFFF00000100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0 20 4 30 10 -1\n"
	marker := proc.MarkerEnv + "=run-1"

	tests := []struct {
		name       string
		tcp, tcp6  string
		build      func(f *fakeProc)
		wantPID    int
		wantMarked bool
		wantChain  []int
		wantErr    error
	}{
		{
			name: "marked grandparent, client in tcp",
			tcp:  tcpHeader + line, tcp6: tcp6Header,
			build: func(f *fakeProc) {
				f.proc(1, 0, "init", nil)
				f.proc(10, 1, "claude", []string{"PATH=/bin", marker})
				f.proc(20, 10, "bash", []string{"PATH=/bin", marker})
				f.proc(30, 20, "curl (x) y", []string{"PATH=/bin"}, "/dev/null", "socket:[4242]")
				f.proc(40, 1, "other", nil, "socket:[1]", "pipe:[4242]")
			},
			wantPID: 30, wantMarked: true, wantChain: []int{30, 20, 10, 1},
		},
		{
			name: "client in tcp6 as ::ffff:127.0.0.1, nobody marked",
			tcp:  tcpHeader, tcp6: tcp6Header + mappedLine,
			build: func(f *fakeProc) {
				f.proc(1, 0, "init", nil)
				f.proc(30, 1, "curl", []string{proc.TokenEnv + "=t", "X" + marker, proc.MarkerEnv + "_X=1"}, "socket:[4242]")
			},
			wantPID: 30, wantMarked: false, wantChain: []int{30, 1},
		},
		{
			name: "empty marker value counts",
			tcp:  tcpHeader + line, tcp6: tcp6Header,
			build: func(f *fakeProc) {
				f.proc(1, 0, "init", nil)
				f.proc(30, 1, "curl", []string{proc.MarkerEnv + "="}, "socket:[4242]")
			},
			wantPID: 30, wantMarked: true, wantChain: []int{30, 1},
		},
		{
			name: "unreadable fd dirs and a vanished parent are skipped",
			tcp:  tcpHeader + line, tcp6: tcp6Header,
			build: func(f *fakeProc) {
				f.write("50/fd", "not a directory")
				f.write("60/stat", "")
				f.proc(30, 25, "curl", []string{marker}, "socket:[4242]") // 25 is gone
			},
			wantPID: 30, wantMarked: true, wantChain: []int{30, 25},
		},
		{
			name: "a parent loop ends the walk",
			tcp:  tcpHeader + line, tcp6: tcp6Header,
			build: func(f *fakeProc) {
				f.proc(30, 31, "curl", nil, "socket:[4242]")
				f.proc(31, 30, "loop", nil)
			},
			wantPID: 30, wantMarked: false, wantChain: []int{30, 31},
		},
		{
			name: "no socket entry",
			tcp:  tcpHeader, tcp6: tcp6Header,
			build:   func(f *fakeProc) { f.proc(30, 1, "curl", nil, "socket:[4242]") },
			wantErr: ErrGone,
		},
		{
			name: "closed socket draining (inode 0)",
			tcp:  tcpHeader + orphanLine, tcp6: tcp6Header,
			build:   func(f *fakeProc) { f.proc(30, 1, "curl", nil, "socket:[0]") },
			wantErr: ErrGone,
		},
		{
			name: "our own user's socket held by nobody we can see",
			tcp:  tcpHeader + lineOfUID(os.Geteuid()), tcp6: tcp6Header,
			build:   func(f *fakeProc) { f.proc(30, 1, "curl", nil, "socket:[42420]") },
			wantErr: &HiddenError{Inode: 4242, UID: os.Geteuid(), SameUser: true},
		},
		{
			name: "another user's socket held by nobody we can see",
			tcp:  tcpHeader + lineOfUID(os.Geteuid()+1), tcp6: tcp6Header,
			build:   func(f *fakeProc) { f.proc(30, 1, "curl", nil, "socket:[42420]") },
			wantErr: &HiddenError{Inode: 4242, UID: os.Geteuid() + 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeProc(t, tc.tcp, tc.tcp6)
			tc.build(f)
			p, err := procFS{root: f.root}.lookup(t.Context(), server, client)
			if want, ok := tc.wantErr.(*HiddenError); ok {
				var got *HiddenError
				if !errors.As(err, &got) || *got != *want || !errors.Is(err, ErrNotFound) {
					t.Fatalf("err = %v, want %v", err, want)
				}
				return
			}
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.PID != tc.wantPID || p.Marked != tc.wantMarked || !slices.Equal(p.Chain, tc.wantChain) {
				t.Fatalf("got %+v, want PID %d Marked %v Chain %v", p, tc.wantPID, tc.wantMarked, tc.wantChain)
			}
		})
	}
}

func FuzzParseLine(f *testing.F) {
	f.Add("   0: 0100007F:1F90 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 111 1 0 20 4 30 10 -1")
	f.Add("   0: 0000000000000000FFFF00000100007F:9C40 0000000000000000FFFF00000100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 4242 1")
	f.Add(tcpHeader)
	f.Fuzz(func(t *testing.T, line string) {
		e, err := parseLine(line)
		if err != nil {
			return
		}
		if !e.local.IsValid() || !e.remote.IsValid() || e.local.Addr().Is4In6() || e.remote.Addr().Is4In6() {
			t.Fatalf("parseLine(%q) = %+v: want valid unmapped addresses", line, e)
		}
	})
}

// BenchmarkPeerLookup is what a loopback decision costs, with the client in
// a child process. baseline finds the socket's inode in /proc/net/tcp and
// tcp6 (the fallback); netlink finds it by sock_diag (the fast path);
// lookup is all of Lookup: netlink, the /proc/*/fd scan, the parent walk;
// scan-all reads every process's fds (the scan's worst case). procs is how
// many processes the machine had: the scan grows with them and their fds.
func BenchmarkPeerLookup(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = childEnv(dialEnv + "=" + ln.Addr().String())
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()
	conn, err := ln.Accept()
	if err != nil {
		_ = cmd.Process.Kill()
		b.Fatal(err)
	}
	defer conn.Close()
	if _, err := bufio.NewReader(conn).ReadString('\n'); err != nil {
		b.Fatal(err)
	}
	names, _ := filepath.Glob("/proc/[0-9]*")
	ctx := context.Background()
	server, _ := addrPort(conn.LocalAddr())
	client, _ := addrPort(conn.RemoteAddr())
	fs := procFS{root: "/proc"}

	b.Run("baseline", func(b *testing.B) {
		for b.Loop() {
			if _, err := fs.tableSocket(client, server); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(names)), "procs")
	})
	b.Run("netlink", func(b *testing.B) {
		for b.Loop() {
			if _, err := diagSocket(client, server); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(names)), "procs")
	})
	b.Run("lookup", func(b *testing.B) {
		for b.Loop() {
			p, err := Lookup(ctx, conn.LocalAddr(), conn.RemoteAddr())
			if err != nil || p.PID != cmd.Process.Pid {
				b.Fatalf("Lookup = %+v, %v; want pid %d", p, err, cmd.Process.Pid)
			}
		}
		b.ReportMetric(float64(len(names)), "procs")
	})
	// Worst case: no process holds the inode, so every process's fds are
	// read (as for a client with the lowest pid after the pid counter
	// wrapped, or a connection whose client we may not inspect).
	b.Run("scan-all", func(b *testing.B) {
		for b.Loop() {
			if _, err := fs.holder(ctx, 1<<62); !errors.Is(err, ErrNotFound) {
				b.Fatalf("holder of an unused inode: %v, want ErrNotFound", err)
			}
		}
		b.ReportMetric(float64(len(names)), "procs")
	})
}
