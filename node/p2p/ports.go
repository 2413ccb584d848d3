package p2p

import (
	"errors"
	"fmt"
	"net"
	"syscall"

	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// errPortInUse marks a listen address another process holds.
var errPortInUse = errors.New("already in use")

// checkPortFree fails with errPortInUse if the fixed port of the listen
// address a is taken. libp2p's TCP transport binds with SO_REUSEPORT, so a
// second node on the same port would share it silently with the first
// and receive half of its connections; a plain bind, without
// SO_REUSEPORT, fails while any socket holds the port, whatever its
// options. The probe socket is closed at once. Port 0 needs no check.
func checkPortFree(a ma.Multiaddr) error {
	base, _ := ma.SplitFunc(a, func(c ma.Component) bool { return c.Code() == ma.P_WS || c.Code() == ma.P_QUIC_V1 })
	addr, err := manet.ToNetAddr(base)
	if err != nil {
		return nil // not ours to judge: libp2p reports it
	}
	var probe func() error
	switch addr := addr.(type) {
	case *net.TCPAddr:
		if addr.Port == 0 {
			return nil
		}
		probe = func() error {
			ln, err := net.ListenTCP(family("tcp", addr.IP), addr)
			if err == nil {
				err = ln.Close()
			}
			return err
		}
	case *net.UDPAddr:
		if addr.Port == 0 {
			return nil
		}
		probe = func() error {
			c, err := net.ListenUDP(family("udp", addr.IP), addr)
			if err == nil {
				err = c.Close()
			}
			return err
		}
	default:
		return nil
	}
	if err := probe(); errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%s port %s %w (another lmosnode, or another program, listens there): stop it, or choose other ports with --listen (port 0 picks a free one)", addr.Network(), portOf(addr), errPortInUse)
	}
	return nil
}

// family is network with the IP version of ip ("tcp4", "udp6"), as libp2p
// listens: "tcp" on :: would also bind 0.0.0.0 (dual stack) and collide
// with the node's own IPv4 listener on the same port.
func family(network string, ip net.IP) string {
	if ip.To4() != nil {
		return network + "4"
	}
	return network + "6"
}

func portOf(addr net.Addr) string {
	_, port, _ := net.SplitHostPort(addr.String())
	return port
}
