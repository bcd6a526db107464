//go:build linux

package peer

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/claude-relay/claude-relay/internal/proc"
)

// maxChain bounds the parent walk: real chains are a dozen deep, and a pid
// reused mid-walk must not loop us for ever.
const maxChain = 256

var errBadLine = errors.New("malformed socket table line")

// Lookup finds the process holding the client end of a TCP connection this
// process accepted (local = our end, remote = the client's; both on this
// machine, normally loopback), walks its parents up to pid 1, and reports
// whether any of them carries the run marker. See the package doc for what
// it cannot see.
func Lookup(ctx context.Context, local, remote net.Addr) (Process, error) {
	return procFS{root: "/proc", diag: true}.lookup(ctx, local, remote)
}

// procFS reads a /proc tree; tests point it at a fake one.
type procFS struct {
	root string
	// diag asks the kernel for the socket by netlink first (diagSocket);
	// only for the real /proc, which describes the same kernel.
	diag bool
}

func (fs procFS) lookup(ctx context.Context, local, remote net.Addr) (Process, error) {
	server, client, err := connAddrs(local, remote)
	if err != nil {
		return Process{}, err
	}
	sock, err := fs.socket(client, server)
	if err != nil {
		return Process{}, fmt.Errorf("peer: connection from %s to %s: %w", client, server, err)
	}
	pid, err := fs.holder(ctx, sock.inode)
	if errors.Is(err, ErrNotFound) {
		if _, again := fs.socket(client, server); errors.Is(again, ErrGone) {
			err = again // it closed while we looked: not hidden
		} else {
			err = &HiddenError{Inode: sock.inode, UID: int(sock.uid), SameUser: int(sock.uid) == os.Geteuid()}
		}
	}
	if err != nil {
		return Process{}, fmt.Errorf("peer: connection from %s to %s: %w", client, server, err)
	}
	return fs.chain(pid)
}

// sockInfo is what the kernel says of the client's socket.
type sockInfo struct {
	inode uint64 // 0: no process holds it (TIME_WAIT, or closed and draining)
	uid   uint32 // its owner
}

// socket finds the client's socket: the one whose local address is the
// client's and remote address ours. It asks netlink first (fast, see
// diagSocket) and reads the /proc tables when netlink is unavailable or
// found nothing, so a not-found answer is always the tables' own.
func (fs procFS) socket(client, server netip.AddrPort) (sockInfo, error) {
	if fs.diag {
		if sock, err := diagSocket(client, server); err == nil {
			return sock, nil
		}
	}
	return fs.tableSocket(client, server)
}

// tableSocket finds the client's socket in /proc/net/tcp and tcp6. A client
// on IPv4 may sit in tcp (an AF_INET socket) or in tcp6 as ::ffff:a.b.c.d
// (a dual-stack AF_INET6 socket), so both tables are read.
func (fs procFS) tableSocket(client, server netip.AddrPort) (sockInfo, error) {
	tables := []string{"tcp6"}
	if client.Addr().Is4() {
		tables = []string{"tcp", "tcp6"}
	}
	read, orphan := 0, false
	for _, name := range tables {
		b, err := os.ReadFile(filepath.Join(fs.root, "net", name))
		if err != nil {
			continue // tcp6 is absent when IPv6 is disabled
		}
		read++
		sock, found := findSocket(b, client, server)
		if found && sock.inode != 0 {
			return sock, nil
		}
		orphan = orphan || found
	}
	switch {
	case read == 0:
		return sockInfo{}, fmt.Errorf("cannot read %s/net/tcp or tcp6: %w", fs.root, ErrNotFound)
	case orphan:
		return sockInfo{}, ErrGone // draining: TIME_WAIT, FIN_WAIT
	}
	return sockInfo{}, fmt.Errorf("%w (it is not in %s/net/%s)", ErrGone, fs.root, strings.Join(tables, ", "))
}

// findSocket returns the table entry local=client, remote=server,
// preferring one a process holds (inode ≠ 0) to a TIME_WAIT leftover.
func findSocket(table []byte, client, server netip.AddrPort) (sock sockInfo, found bool) {
	for line := range bytes.Lines(table) {
		e, err := parseLine(string(line))
		if err != nil || e.local != client || e.remote != server {
			continue // the header line, one we cannot read, or another socket
		}
		sock, found = sockInfo{inode: e.inode, uid: e.uid}, true
		if e.inode != 0 {
			break
		}
	}
	return sock, found
}

// tcpEntry is one socket of /proc/net/tcp or tcp6.
type tcpEntry struct {
	local, remote netip.AddrPort // unmapped: ::ffff:127.0.0.1 is 127.0.0.1
	uid           uint32
	inode         uint64
}

// parseLine reads one entry of /proc/net/tcp or tcp6:
//
//	sl  local_address rem_address   st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...
//	 1: 0100007F:981E 0100007F:A535 06 00000000:00000000 03:00000BDB 00000000 0 0 4242 ...
func parseLine(line string) (tcpEntry, error) {
	f := strings.Fields(line)
	if len(f) < 10 || !strings.HasSuffix(f[0], ":") {
		return tcpEntry{}, fmt.Errorf("%w: %d fields: %.80q", errBadLine, len(f), line)
	}
	var e tcpEntry
	var err error
	if e.local, err = parseHexAddrPort(f[1]); err != nil {
		return tcpEntry{}, err
	}
	if e.remote, err = parseHexAddrPort(f[2]); err != nil {
		return tcpEntry{}, err
	}
	uid, err := strconv.ParseUint(f[7], 10, 32)
	if err != nil {
		return tcpEntry{}, fmt.Errorf("%w: uid %q: %w", errBadLine, f[7], err)
	}
	e.uid = uint32(uid)
	if e.inode, err = strconv.ParseUint(f[9], 10, 64); err != nil {
		return tcpEntry{}, fmt.Errorf("%w: inode %q: %w", errBadLine, f[9], err)
	}
	return e, nil
}

// parseHexAddrPort reads "ADDR:PORT" as the kernel prints it: the port is
// a plain hex number, but the address is the in-memory (network order)
// bytes printed as 32-bit words in host order, one word for IPv4 and four
// for IPv6. So 127.0.0.1 is 0100007F on little-endian machines, and each
// word has to be put back in native order to recover the bytes.
func parseHexAddrPort(s string) (netip.AddrPort, error) {
	h, p, ok := strings.Cut(s, ":")
	if !ok || len(p) != 4 {
		return netip.AddrPort{}, fmt.Errorf("%w: address %q", errBadLine, s)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%w: port in %q: %w", errBadLine, s, err)
	}
	var b [16]byte
	switch len(h) {
	case 8, 32:
		for i := 0; i < len(h); i += 8 {
			w, err := strconv.ParseUint(h[i:i+8], 16, 32)
			if err != nil {
				return netip.AddrPort{}, fmt.Errorf("%w: address in %q: %w", errBadLine, s, err)
			}
			binary.NativeEndian.PutUint32(b[i/2:], uint32(w))
		}
	default:
		return netip.AddrPort{}, fmt.Errorf("%w: address %q is neither 8 nor 32 hex digits", errBadLine, s)
	}
	if len(h) == 8 {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[:4])), uint16(port)), nil
	}
	return netip.AddrPortFrom(netip.AddrFrom16(b).Unmap(), uint16(port)), nil
}

// holder finds a process with an fd on the socket. It tries the highest
// pids first: the client is usually a process started just before it
// connected, so this finds it after a few directories instead of after all
// of them (a wrapped pid counter only costs time). Processes we may not
// inspect, and ones that exit during the scan, are skipped.
func (fs procFS) holder(ctx context.Context, inode uint64) (int, error) {
	d, err := os.Open(fs.root)
	if err != nil {
		return 0, fmt.Errorf("listing processes: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return 0, fmt.Errorf("listing processes in %s: %w", fs.root, err)
	}
	pids := make([]int, 0, len(names))
	for _, n := range names {
		if pid, err := strconv.Atoi(n); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	target := []byte("socket:[" + strconv.FormatUint(inode, 10) + "]")
	buf := make([]byte, 128)
	for _, pid := range slices.Backward(pids) {
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("scanning processes: %w", err)
		}
		if fs.holds(pid, target, buf) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("none of the %d processes in %s holds socket inode %d: %w", len(pids), fs.root, inode, ErrNotFound)
}

// holds reports whether one of pid's fds is target. It reads the links
// relative to the open fd directory (readlinkat) rather than by full path:
// a busy process has thousands of fds, and this is the hot loop.
func (fs procFS) holds(pid int, target, buf []byte) bool {
	d, err := os.Open(filepath.Join(fs.root, strconv.Itoa(pid), "fd"))
	if err != nil {
		return false // exited, or not ours to inspect
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return false
	}
	sc, err := d.SyscallConn()
	if err != nil {
		return false
	}
	found := false
	_ = sc.Control(func(dirfd uintptr) {
		for _, name := range names {
			n, err := unix.Readlinkat(int(dirfd), name, buf)
			if err == nil && bytes.Equal(buf[:n], target) {
				found = true
				return
			}
		}
	})
	return found
}

// chain walks from pid up its parents, checking each one's environment for
// the marker. Only pid's own stat must be readable: an ancestor that exited
// mid-walk ends the chain there (its child was reparented anyway).
func (fs procFS) chain(pid int) (Process, error) {
	p := Process{PID: pid}
	for cur := pid; cur > 0 && len(p.Chain) < maxChain && !slices.Contains(p.Chain, cur); {
		p.Chain = append(p.Chain, cur)
		if !p.Marked {
			p.Marked = fs.marked(cur)
		}
		ppid, err := fs.ppid(cur)
		if err != nil {
			if cur == pid {
				return Process{}, fmt.Errorf("peer: reading the parent of client pid %d: %w", pid, err)
			}
			break
		}
		cur = ppid
	}
	return p, nil
}

// marked reports whether pid's environment has the marker with any value;
// an unreadable one (another user's process, pid 1) counts as unmarked.
func (fs procFS) marked(pid int) bool {
	env, err := os.ReadFile(filepath.Join(fs.root, strconv.Itoa(pid), "environ"))
	return err == nil && hasMarker(env)
}

// hasMarker reports whether a NUL-separated environment block has a
// MarkerEnv entry. Any value counts, even an empty one: an agent could set
// CLAUDE_RELAY_RUN= to dodge a check for a value.
func hasMarker(environ []byte) bool {
	prefix := []byte(proc.MarkerEnv + "=")
	for e := range bytes.SplitSeq(environ, []byte{0}) {
		if bytes.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

// ppid reads the parent pid from /proc/PID/stat.
func (fs procFS) ppid(pid int) (int, error) {
	b, err := os.ReadFile(filepath.Join(fs.root, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	ppid, err := proc.PPID(b)
	if err != nil {
		return 0, fmt.Errorf("%s/%d/stat: %w", fs.root, pid, err)
	}
	return ppid, nil
}
