// Package loopback is the connection gater of tests that run raw libp2p
// hosts: tests never send traffic off the machine, so it refuses every dial
// to an address that is not loopback, remembers it, and fails the test that
// made it.
package loopback

import (
	"sync"
	"testing"

	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// Gater is a libp2p connection gater (libp2p.ConnectionGater) that admits
// loopback addresses only. It is safe for concurrent use.
type Gater struct {
	mu      sync.Mutex
	refused []ma.Multiaddr
}

// NewGater returns a gater that fails t, when t ends, if a dial off the
// machine was attempted.
func NewGater(t testing.TB) *Gater {
	g := &Gater{}
	t.Cleanup(func() {
		if r := g.Refused(); len(r) > 0 {
			t.Errorf("dials off the machine attempted (and refused): %v", r)
		}
	})
	return g
}

// Refused returns the addresses whose dial the gater refused.
func (g *Gater) Refused() []ma.Multiaddr {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]ma.Multiaddr(nil), g.refused...)
}

// InterceptPeerDial implements connmgr.ConnectionGater.
func (g *Gater) InterceptPeerDial(peer.ID) bool { return true }

// InterceptAddrDial implements connmgr.ConnectionGater: loopback only.
func (g *Gater) InterceptAddrDial(_ peer.ID, a ma.Multiaddr) bool {
	if manet.IsIPLoopback(a) {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.refused = append(g.refused, a)
	return false
}

// InterceptAccept implements connmgr.ConnectionGater.
func (g *Gater) InterceptAccept(network.ConnMultiaddrs) bool { return true }

// InterceptSecured implements connmgr.ConnectionGater.
func (g *Gater) InterceptSecured(network.Direction, peer.ID, network.ConnMultiaddrs) bool {
	return true
}

// InterceptUpgraded implements connmgr.ConnectionGater.
func (g *Gater) InterceptUpgraded(network.Conn) (bool, control.DisconnectReason) {
	return true, 0
}
