// Package peer finds the local process at the other end of a TCP connection
// the backend accepted, so that a decision sent over loopback by an agent's
// own tool command can be refused (CONTRACT §10: an agent must not approve
// its own request).
//
// Every run's CLI carries the marker environment variable proc.MarkerEnv
// (CLAUDE_RELAY_RUN), and every process it starts inherits it. An agent can
// drop the variable from its client (`env -u CLAUDE_RELAY_RUN curl …`), but
// not from the processes that started that client: the Bash tool's shell and
// the `claude` CLI above it still carry it. Lookup therefore checks the
// client and each of its ancestors.
//
// How: the client's socket inode comes from the kernel by its exact
// address pair (NETLINK_SOCK_DIAG, as `ss` does; /proc/net/tcp and tcp6 when
// netlink is unavailable), the process holding "socket:[inode]" from a scan
// of /proc/*/fd (newest pids first), and its ancestors from the ppid field
// of /proc/PID/stat. On our 2-core machines with 90 to 130 processes a
// lookup takes 0.5 to 3 ms, nearly all of it the fd scan (a scan of every
// process, the worst case, 2.5 to 9 ms; BenchmarkPeerLookup). Netlink finds
// the socket in about 14 µs where reading the /proc tables takes 5 to 8 ms
// (the kernel walks its whole connection hash table for them).
//
// Known limits, which the caller should weigh:
//   - A client that double-forks away from the CLI (its parent exits, and it
//     is reparented to init or to a subreaper) has no marked ancestor left;
//     it is caught only if its own environment still carries the marker.
//   - /proc/PID/environ is the environment the process was started with, as
//     it stands in its memory; a process that overwrites that memory can
//     erase its own marker (its ancestors still carry theirs).
//   - A client can hide from the lookup itself. One that sends its request
//     and closes its socket at once (bash's `> /dev/tcp/…`) leaves no
//     process holding it: ErrGone. One that makes itself non-dumpable
//     cannot be inspected even by its own user: a *HiddenError with
//     SameUser set. Another user's process (a reverse proxy running as its
//     own user) is a *HiddenError too, without SameUser.
//   - Behind a reverse proxy on this machine, the client is the proxy.
//   - Only this network namespace's sockets are visible.
//
// So a caller deciding whether to trust a local client (loopback, or one
// dialling an address of this host) refuses it when Marked is set, when the
// error is ErrGone, and when it is a *HiddenError with SameUser; it may
// allow another user's hidden process and ErrUnsupported, as a policy.
//
// Linux only; elsewhere Lookup returns ErrUnsupported.
package peer

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
)

var (
	// ErrNotFound means no process we may inspect holds the client end of
	// the connection. ErrGone and *HiddenError say why, when it is known.
	ErrNotFound = errors.New("no process found for the connection")
	// ErrGone means the client has no open socket on the connection any
	// more: it closed its end (the server may still be reading what it
	// sent), or it was never on this machine. It wraps ErrNotFound. A
	// client that waits for its answer, as browsers and curl do, keeps its
	// socket open; one that sends and closes at once is hiding from Lookup.
	ErrGone error = &kindError{"the client's socket is closed: no process holds it", ErrNotFound}
	// ErrUnsupported means this platform has no way to find a socket's
	// process (no /proc). It wraps errors.ErrUnsupported.
	ErrUnsupported error = &kindError{"finding a connection's process needs Linux /proc", errors.ErrUnsupported}
	// ErrBadAddr means an address is not a TCP address with an IP and port.
	ErrBadAddr = errors.New("not a TCP address with an IP and a port")
)

// kindError is a sentinel that is also a case of a broader one.
type kindError struct {
	msg    string
	parent error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.parent }

// HiddenError means the client's socket is open on this machine but no
// process we may inspect holds it: a process of another user, or one of
// our own user's that made itself non-dumpable (prctl PR_SET_DUMPABLE),
// which closes its /proc entries to its own user. SameUser tells them
// apart: a hidden socket of our own user is a process hiding from Lookup.
// It wraps ErrNotFound.
type HiddenError struct {
	Inode    uint64 // the socket's inode
	UID      int    // the socket's owner
	SameUser bool   // UID is this process's effective user
}

func (e *HiddenError) Error() string {
	msg := fmt.Sprintf("no process we may inspect holds the client's socket (inode %d, uid %d)", e.Inode, e.UID)
	if e.SameUser {
		msg += "; the uid is ours, so its holder hid its /proc entries"
	}
	return msg
}

func (e *HiddenError) Unwrap() error { return ErrNotFound }

// Process is the client process of a connection.
type Process struct {
	// PID is the process holding the client's socket (the first one found
	// when several share it, e.g. across a fork).
	PID int
	// Marked reports whether PID or any process in Chain carries the run
	// marker (proc.MarkerEnv, whatever its value, even empty).
	Marked bool
	// Chain is the pids walked: PID first, then its parent, its parent's
	// parent, … up to pid 1 (or the first one that vanished or could not be
	// read).
	Chain []int
}

// addrPort turns a net.Addr into an unmapped netip.AddrPort: Go reports an
// IPv4 client of a dual-stack listener as 127.0.0.1 while the kernel tables
// may hold it as ::ffff:127.0.0.1, so both sides are compared unmapped.
func addrPort(a net.Addr) (netip.AddrPort, error) {
	if a == nil {
		return netip.AddrPort{}, fmt.Errorf("<nil>: %w", ErrBadAddr)
	}
	var ap netip.AddrPort
	if t, ok := a.(*net.TCPAddr); ok {
		ap = t.AddrPort()
	} else {
		var err error
		if ap, err = netip.ParseAddrPort(a.String()); err != nil {
			return netip.AddrPort{}, fmt.Errorf("%q (%s): %w: %w", a.String(), a.Network(), ErrBadAddr, err)
		}
	}
	if !ap.Addr().IsValid() || ap.Port() == 0 {
		return netip.AddrPort{}, fmt.Errorf("%q: %w", a.String(), ErrBadAddr)
	}
	return netip.AddrPortFrom(ap.Addr().Unmap().WithZone(""), ap.Port()), nil
}

// connAddrs is Lookup's arguments (local = our end, remote = the client's)
// as addrPort makes them, on every platform alike.
func connAddrs(local, remote net.Addr) (server, client netip.AddrPort, err error) {
	if server, err = addrPort(local); err != nil {
		return server, client, fmt.Errorf("peer: server address: %w", err)
	}
	if client, err = addrPort(remote); err != nil {
		return server, client, fmt.Errorf("peer: client address: %w", err)
	}
	return server, client, nil
}
