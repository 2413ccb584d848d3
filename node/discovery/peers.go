package discovery

import (
	"cmp"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// Source says how a connected peer was found (see the package doc).
type Source string

// Sources of connected peers.
const (
	// SourceMDNS: dialled after an mDNS announcement on the LAN.
	SourceMDNS Source = "mdns"
	// SourceDHT: dialled after a DHT rendezvous lookup.
	SourceDHT Source = "dht"
	// SourceBootstrap: dialled as a configured bootstrap peer.
	SourceBootstrap Source = "bootstrap"
	// SourceConnect: dialled on request, through Service.Connect
	// (`lmosnode connect`).
	SourceConnect Source = "connect"
	// SourceInbound: the peer connected to us, and none of our ways has
	// found it.
	SourceInbound Source = "inbound"
	// SourceOutbound: this host dialled the peer for another reason than
	// discovery (a DHT query, an invocation).
	SourceOutbound Source = "outbound"
)

// PeerInfo describes one connected peer.
type PeerInfo struct {
	// ID is the peer's ID.
	ID peer.ID
	// Addrs are the distinct remote multiaddrs of the open connections to
	// the peer, oldest connection first.
	Addrs []ma.Multiaddr
	// Source is how the peer was found.
	Source Source
	// ConnectedAt is when the oldest open connection was opened.
	ConnectedAt time.Time
	// State is the connectedness: "connected", or "limited" when every
	// connection is a limited (relayed) one.
	State string
	// Direction is "inbound", "outbound" or "both": who opened the open
	// connections.
	Direction string
	// Relayed is true when every open connection goes through a
	// circuit-relay (/p2p-circuit); false when one at least is direct.
	Relayed bool
	// Latency is the peerstore's moving average of round-trip times
	// (identify, ping); 0 if not measured yet.
	Latency time.Duration
	// AgentVersion is what the peer's identify said (e.g.
	// "lmosnode/v1.2.0"); empty until identify completed.
	AgentVersion string
}

// Peers returns the host's connected peers, sorted by peer ID.
func (s *Service) Peers() []PeerInfo {
	ids := s.h.Network().Peers()
	out := make([]PeerInfo, 0, len(ids))
	for _, p := range ids {
		conns := s.h.Network().ConnsToPeer(p)
		if len(conns) == 0 {
			continue // closed since Peers
		}
		info := s.describe(p, conns)
		src, ok := s.Source(p)
		if !ok {
			// Connected before New started tracking.
			src = directionSource(conns[0].Stat().Direction)
		}
		info.Source = src
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b PeerInfo) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// describe fills in what the open connections conns and the peerstore say
// about p.
func (s *Service) describe(p peer.ID, conns []network.Conn) PeerInfo {
	slices.SortStableFunc(conns, func(a, b network.Conn) int { return a.Stat().Opened.Compare(b.Stat().Opened) })
	info := PeerInfo{ID: p, Addrs: make([]ma.Multiaddr, 0, len(conns)), Relayed: true}
	dirs := map[network.Direction]bool{}
	for _, c := range conns {
		addr := c.RemoteMultiaddr()
		if !slices.ContainsFunc(info.Addrs, addr.Equal) {
			info.Addrs = append(info.Addrs, addr)
		}
		st := c.Stat()
		if info.ConnectedAt.IsZero() || st.Opened.Before(info.ConnectedAt) {
			info.ConnectedAt = st.Opened
		}
		if _, err := addr.ValueForProtocol(ma.P_CIRCUIT); err != nil {
			info.Relayed = false
		}
		dirs[st.Direction] = true
	}
	switch {
	case dirs[network.DirInbound] && dirs[network.DirOutbound]:
		info.Direction = "both"
	case dirs[network.DirInbound]:
		info.Direction = "inbound"
	case dirs[network.DirOutbound]:
		info.Direction = "outbound"
	}
	info.State = "connected"
	if s.h.Network().Connectedness(p) == network.Limited {
		info.State = "limited"
	}
	info.Latency = s.h.Peerstore().LatencyEWMA(p)
	if v, err := s.h.Peerstore().Get(p, "AgentVersion"); err == nil {
		info.AgentVersion, _ = v.(string)
	}
	return info
}

// Source returns how the connected peer p was found; false if p is not
// connected (or connected before the service was built).
func (s *Service) Source(p peer.ID) (Source, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	src, ok := s.sources[p]
	return src, ok
}

// claim records that src found the connected peer p: it names a peer that
// has no source yet or that only connected inbound or outbound.
func (s *Service) claim(p peer.ID, src Source) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch cur, ok := s.sources[p]; {
	case !ok && s.h.Network().Connectedness(p) == network.NotConnected:
		// Disconnected again before we got here.
	case cur == SourceInbound && src == SourceDHT:
		// It dialled us: the rendezvous found a peer that was already
		// here, not the way it came.
	case !ok, cur == SourceInbound, cur == SourceOutbound:
		s.sources[p] = src
	}
}

// connected is the network notifiee's callback for every new connection.
func (s *Service) connected(_ network.Network, c network.Conn) {
	p := c.RemotePeer()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.sources[p]; ok {
		return
	}
	if src, ok := s.pending[p]; ok {
		s.sources[p] = src
		return
	}
	s.sources[p] = directionSource(c.Stat().Direction)
}

// disconnected is the network notifiee's callback for every closed
// connection. go-libp2p calls it asynchronously, possibly after a new
// connection to the same peer opened, so it asks whether any is left.
func (s *Service) disconnected(n network.Network, c network.Conn) {
	p := c.RemotePeer()
	// Asked under the lock: a connection that opens after the question
	// is recorded by connected once we release it.
	s.mu.Lock()
	defer s.mu.Unlock()
	if n.Connectedness(p) == network.NotConnected {
		delete(s.sources, p)
	}
}

func directionSource(d network.Direction) Source {
	if d == network.DirInbound {
		return SourceInbound
	}
	return SourceOutbound
}

// Relayed reports whether c goes through a circuit relay: limited by its
// relay, or reaching the peer through /p2p-circuit.
func Relayed(c network.Conn) bool {
	if c.Stat().Limited {
		return true
	}
	_, err := c.RemoteMultiaddr().ValueForProtocol(ma.P_CIRCUIT)
	return err == nil
}
