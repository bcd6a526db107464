package peer

import (
	"errors"
	"net"
	"testing"
)

// strAddr is a net.Addr known only by its string, as a caller might build
// one from http.Request.RemoteAddr.
type strAddr string

func (a strAddr) Network() string { return "tcp" }
func (a strAddr) String() string  { return string(a) }

func TestAddrPort(t *testing.T) {
	for _, tc := range []struct {
		in   net.Addr
		want string // "" = ErrBadAddr
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, "127.0.0.1:8080"}, // 16-byte form: unmapped
		{&net.TCPAddr{IP: net.ParseIP("::ffff:127.0.0.1"), Port: 1}, "127.0.0.1:1"},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 443}, "[::1]:443"},
		{&net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 22, Zone: "lo"}, "[fe80::1]:22"},
		{strAddr("127.0.0.1:55555"), "127.0.0.1:55555"},
		{strAddr("[::ffff:127.0.0.1]:9"), "127.0.0.1:9"},
		{strAddr("localhost:80"), ""},
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, ""}, // no port
		{&net.TCPAddr{Port: 80}, ""},                   // no IP
		{&net.UnixAddr{Name: "/run/x.sock", Net: "unix"}, ""},
		{nil, ""},
	} {
		got, err := addrPort(tc.in)
		switch {
		case tc.want == "" && !errors.Is(err, ErrBadAddr):
			t.Errorf("addrPort(%v) = %s, %v; want ErrBadAddr", tc.in, got, err)
		case tc.want != "" && (err != nil || got.String() != tc.want):
			t.Errorf("addrPort(%v) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}
