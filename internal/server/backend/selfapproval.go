package backend

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/peer"
)

// PeerLookup finds the local process at the other end of a TCP connection
// this server accepted (local is our end); peer.Lookup is the real one.
type PeerLookup func(ctx context.Context, local, remote net.Addr) (peer.Process, error)

// refuseSelfApproval answers 403 when a decision may come from a process a
// claude-relay run started, or from one of its descendants: an agent's
// Bash tool that found an approve token on disk must not approve its own
// request (CONTRACT §10). It reports whether it answered.
//
// Only connections from this machine are checked: the remote address is
// loopback, the address the connection reached, or any other address of
// this host's interfaces (a client binding its source to a second address
// is still local). Anything else comes from another machine, where no run
// of ours can be the client.
//
// A local client is refused when its process, or an ancestor, carries a
// run's marker; when it cannot be checked as our own user (its socket is
// already closed, or it made itself non-dumpable): that is what an agent
// hiding from the check looks like; and, unless the operator opted in
// (Options.AllowUncheckedLocal), when it cannot be checked at all: another
// user's process (an agent with sudo, or a reverse proxy running as its own
// user) or a platform where no socket's process can be found. SECURITY.md
// says what this does not defend.
func (s *Server) refuseSelfApproval(w http.ResponseWriter, r *http.Request) bool {
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	remote, err := netip.ParseAddrPort(r.RemoteAddr)
	if local == nil || err != nil || !s.hostAddrs.local(local, remote.Addr()) {
		return false
	}
	p, err := s.peer(r.Context(), local, net.TCPAddrFromAddrPort(remote))
	var hidden *peer.HiddenError
	switch {
	case errors.Is(err, peer.ErrGone), errors.As(err, &hidden) && hidden.SameUser:
		// A browser waits for the answer; a sender gone or hiding as our
		// user is an agent dodging this check.
		s.log.Warn("backend: refused a decision whose sender could not be checked for a claude-relay run",
			"approval", r.PathValue("id"), "remote", r.RemoteAddr, "err", err)
		writeError(w, http.StatusForbidden, "refused: the process that sent this decision could not be checked ("+err.Error()+
			"); keep the connection open until the answer, or decide from the dashboard, the editor or the terminal")
		return true
	case err != nil && s.allowUnchecked:
		s.log.Debug("backend: cannot tell which local process sent a decision; allowed (serve.allow_unchecked_local_decisions)",
			"remote", r.RemoteAddr, "err", err)
		return false
	case err != nil:
		s.log.Warn("backend: refused a decision from a local process that cannot be checked for a claude-relay run",
			"approval", r.PathValue("id"), "remote", r.RemoteAddr, "err", err)
		writeError(w, http.StatusForbidden, "refused: this decision comes from this machine, from a process that cannot be checked for a "+
			"claude-relay run ("+err.Error()+"), such as another user's or a reverse proxy's; decide in the editor or the terminal, or "+
			"from another machine; if a reverse proxy on this host serves the dashboard, set serve.allow_unchecked_local_decisions: true "+
			"(then any local process that holds an approve token can decide)")
		return true
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

// hostAddrsTTL is how long the host's interface addresses are reused: they
// change rarely, and a decision is no hot path.
const hostAddrsTTL = 5 * time.Second

// hostAddrs knows this host's own addresses, read from its interfaces at
// most every hostAddrsTTL.
type hostAddrs struct {
	mu    sync.Mutex
	at    time.Time
	addrs map[netip.Addr]bool
	list  func() ([]net.Addr, error) // nil: net.InterfaceAddrs
}

// local reports whether a client at remote is on this machine, given the
// local address of its connection.
func (h *hostAddrs) local(local net.Addr, remote netip.Addr) bool {
	remote = remote.Unmap().WithZone("")
	if sameHost(local, remote) {
		return true
	}
	return h.own()[remote]
}

func (h *hostAddrs) own() map[netip.Addr]bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.addrs != nil && time.Since(h.at) < hostAddrsTTL {
		return h.addrs
	}
	list := h.list
	if list == nil {
		list = net.InterfaceAddrs
	}
	addrs := map[netip.Addr]bool{}
	as, err := list()
	for _, a := range as {
		if p, perr := netip.ParsePrefix(a.String()); perr == nil {
			addrs[p.Addr().Unmap().WithZone("")] = true
		} else if ip, perr := netip.ParseAddr(a.String()); perr == nil {
			addrs[ip.Unmap().WithZone("")] = true
		}
	}
	if err == nil || h.addrs == nil {
		h.addrs, h.at = addrs, time.Now()
	}
	return h.addrs
}

// sameHost reports whether a client at remote is on this machine from the
// connection alone: loopback, or the address it reached.
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
