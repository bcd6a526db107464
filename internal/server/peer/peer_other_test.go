//go:build !linux

package peer

import (
	"errors"
	"net"
	"testing"
)

func TestLookupUnsupported(t *testing.T) {
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	remote := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
	_, err := Lookup(t.Context(), local, remote)
	if !errors.Is(err, ErrUnsupported) || !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Lookup = %v, want ErrUnsupported", err)
	}
	if _, err := Lookup(t.Context(), nil, remote); !errors.Is(err, ErrBadAddr) {
		t.Fatalf("Lookup with a nil address = %v, want ErrBadAddr", err)
	}
}
