//go:build !linux

package peer

import (
	"context"
	"fmt"
	"net"
)

// Lookup needs Linux's /proc; here it checks its arguments as on Linux,
// then returns ErrUnsupported, and the caller decides what an unknown peer
// means.
func Lookup(_ context.Context, local, remote net.Addr) (Process, error) {
	server, client, err := connAddrs(local, remote)
	if err != nil {
		return Process{}, err
	}
	return Process{}, fmt.Errorf("peer: connection from %s to %s: %w", client, server, ErrUnsupported)
}
