//go:build linux

package peer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// diagSocket asks the kernel for one socket by its exact 4-tuple through
// NETLINK_SOCK_DIAG (what `ss` uses). Reading /proc/net/tcp makes the
// kernel walk its whole connection hash table, about 2.5 ms a file on our
// 2-core machines however few sockets there are; this lookup is a hash
// probe. It returns errDiagUnavailable when the kernel has no inet_diag
// (some sandboxes), and ErrGone when no process holds such a socket.
//
// An IPv4 client is asked for as AF_INET: the kernel's established table
// is shared by both families and matches a dual-stack AF_INET6 socket
// connected to ::ffff:a.b.c.d by its IPv4 addresses too.
func diagSocket(client, server netip.AddrPort) (sockInfo, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return sockInfo{}, fmt.Errorf("%w: netlink socket: %w", errDiagUnavailable, err)
	}
	defer unix.Close(fd)
	if err := unix.Sendto(fd, diagRequest(client, server), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return sockInfo{}, fmt.Errorf("%w: netlink send: %w", errDiagUnavailable, err)
	}
	// The kernel answers inside sendto, so the reply is already queued; a
	// kernel that did otherwise gets the /proc tables instead of a wait.
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, unix.MSG_DONTWAIT)
	if err != nil {
		return sockInfo{}, fmt.Errorf("%w: netlink receive: %w", errDiagUnavailable, err)
	}
	return parseDiagReply(buf[:n])
}

var errDiagUnavailable = errors.New("sock_diag unavailable")

// Sizes and offsets of <linux/netlink.h> nlmsghdr, <linux/inet_diag.h>
// inet_diag_req_v2 and inet_diag_msg.
const (
	nlmsgHdrLen   = 16
	diagReqLen    = 56
	diagSockIDLen = 48
	// inet_diag_msg: family, state, timer, retrans (4 bytes), id, then
	// expires, rqueue, wqueue, uid, inode (u32 each).
	diagMsgUIDOff   = 4 + diagSockIDLen + 3*4
	diagMsgInodeOff = diagMsgUIDOff + 4
	diagMsgLen      = diagMsgInodeOff + 4
)

// diagRequest encodes an exact-match SOCK_DIAG_BY_FAMILY request for the
// client's socket (source = client, destination = server). Ports and
// addresses are in network order; the rest in host order.
func diagRequest(client, server netip.AddrPort) []byte {
	ne := binary.NativeEndian
	b := make([]byte, nlmsgHdrLen+diagReqLen)
	ne.PutUint32(b[0:], uint32(len(b)))
	ne.PutUint16(b[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(b[6:], unix.NLM_F_REQUEST) // no NLM_F_DUMP: one socket
	ne.PutUint32(b[8:], 1)                  // seq
	r := b[nlmsgHdrLen:]
	r[0] = unix.AF_INET6
	if client.Addr().Is4() {
		r[0] = unix.AF_INET
	}
	r[1] = unix.IPPROTO_TCP
	ne.PutUint32(r[4:], ^uint32(0)) // every TCP state
	id := r[8:]
	binary.BigEndian.PutUint16(id[0:], client.Port())
	binary.BigEndian.PutUint16(id[2:], server.Port())
	putAddr(id[4:20], client.Addr())
	putAddr(id[20:36], server.Addr())
	// id[36:40] interface 0: any. Cookie ~0: INET_DIAG_NOCOOKIE.
	ne.PutUint32(id[40:], ^uint32(0))
	ne.PutUint32(id[44:], ^uint32(0))
	return b
}

// putAddr writes an address as inet_diag_sockid holds it: IPv4 in the
// first 4 bytes, IPv6 in all 16.
func putAddr(dst []byte, a netip.Addr) {
	if a.Is4() {
		v := a.As4()
		copy(dst, v[:])
		return
	}
	v := a.As16()
	copy(dst, v[:])
}

// parseDiagReply reads the kernel's answer: one inet_diag_msg, or an
// NLMSG_ERROR whose ENOENT means no such socket.
func parseDiagReply(b []byte) (sockInfo, error) {
	ne := binary.NativeEndian
	if len(b) < nlmsgHdrLen+4 {
		return sockInfo{}, fmt.Errorf("%w: short netlink reply (%d bytes)", errDiagUnavailable, len(b))
	}
	switch typ := ne.Uint16(b[4:]); typ {
	case unix.NLMSG_ERROR:
		errno := unix.Errno(-int32(ne.Uint32(b[nlmsgHdrLen:])))
		if errno == unix.ENOENT {
			return sockInfo{}, ErrGone
		}
		return sockInfo{}, fmt.Errorf("%w: netlink error: %w", errDiagUnavailable, errno)
	case unix.SOCK_DIAG_BY_FAMILY:
		if len(b) < nlmsgHdrLen+diagMsgLen {
			return sockInfo{}, fmt.Errorf("%w: short inet_diag_msg (%d bytes)", errDiagUnavailable, len(b))
		}
		sock := sockInfo{
			uid:   ne.Uint32(b[nlmsgHdrLen+diagMsgUIDOff:]),
			inode: uint64(ne.Uint32(b[nlmsgHdrLen+diagMsgInodeOff:])),
		}
		if sock.inode == 0 {
			// TIME_WAIT or an orphan: the socket is no process's.
			return sockInfo{}, ErrGone
		}
		return sock, nil
	default:
		return sockInfo{}, fmt.Errorf("%w: unexpected netlink message type %d", errDiagUnavailable, typ)
	}
}
