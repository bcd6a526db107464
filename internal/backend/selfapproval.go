package backend

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strconv"

	"github.com/claude-relay/claude-relay/internal/peer"
)

// PeerLookup finds the local process at the other end of a TCP connection
// this server accepted (local is our end); peer.Lookup is the real one.
type PeerLookup func(ctx context.Context, local, remote net.Addr) (peer.Process, error)

// refuseSelfApproval answers 403 when a decision comes from a process a
// claude-relay run started, or from one of its descendants: an agent's
// Bash tool that found an approve token on disk must not approve its own
// request (CONTRACT §10). It reports whether it answered.
//
// Only connections from this machine are checked: the remote address is
// loopback, or it is the very address the connection reached (a client on
// this host dialling one of the host's own addresses); anything else comes
// from another machine, where no run of ours can be the client. A lookup
// that fails is allowed and logged at debug when the platform cannot find a
// socket's process (peer.ErrUnsupported off Linux) or the client belongs to
// another user (a reverse proxy running as its own user, say), which is no
// agent of this serve's user; a client that already closed its socket, or
// hides from inspection as our own user, is refused.
// The peer package doc lists what it cannot see.
func (s *Server) refuseSelfApproval(w http.ResponseWriter, r *http.Request) bool {
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	remote, err := netip.ParseAddrPort(r.RemoteAddr)
	if local == nil || err != nil || !sameHost(local, remote.Addr()) {
		return false
	}
	p, err := s.peer(r.Context(), local, net.TCPAddrFromAddrPort(remote))
	var hidden *peer.HiddenError
	switch {
	case errors.Is(err, peer.ErrGone), errors.As(err, &hidden) && hidden.SameUser:
		// A sender that closed its socket before we looked, or that made
		// itself uninspectable while running as our user, is what an agent
		// hiding from this check looks like: a browser waits for the answer.
		s.log.Warn("backend: refused a decision whose sender could not be checked for a claude-relay run",
			"approval", r.PathValue("id"), "remote", r.RemoteAddr, "err", err)
		writeError(w, http.StatusForbidden, "refused: the process that sent this decision could not be checked ("+err.Error()+
			"); keep the connection open until the answer, or decide from the dashboard, the editor or the terminal")
		return true
	case err != nil:
		s.log.Debug("backend: cannot tell which process sent a decision; allowing it", "remote", r.RemoteAddr, "err", err)
		return false
	case !p.Marked:
		return false
	}
	who := principalOf(r)
	s.log.Warn("backend: refused a decision from a process started by a claude-relay run (self-approval)",
		"approval", r.PathValue("id"), "pid", p.PID, "chain", p.Chain, "remote", r.RemoteAddr, "token", who.name)
	writeError(w, http.StatusForbidden, "refused: this decision comes from a process started by a claude-relay run (pid "+
		strconv.Itoa(p.PID)+"); an agent cannot approve its own request; decide from the dashboard, the editor or the terminal")
	return true
}

// sameHost reports whether a client at remote is on this machine, given
// the local address of its connection.
func sameHost(local net.Addr, remote netip.Addr) bool {
	remote = remote.Unmap()
	if remote.IsLoopback() {
		return true
	}
	var l netip.Addr
	switch a := local.(type) {
	case *net.TCPAddr:
		l, _ = netip.AddrFromSlice(a.IP)
	default:
		ap, err := netip.ParseAddrPort(local.String())
		if err != nil {
			return false
		}
		l = ap.Addr()
	}
	return l.Unmap().WithZone("") == remote.WithZone("")
}
