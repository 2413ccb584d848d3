package node

import (
	"context"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/discovery"
	"github.com/lmosnode/lmosnode/node/tdd"
)

// peerList serves the API's peer routes (`lmosnode peers`, `lmosnode
// connect`) from the discovery service, which knows how each peer was
// found: mdns, dht, bootstrap, connect, inbound or outbound.
type peerList struct{ disc *discovery.Service }

// Peers returns the connected peers with their addresses and sources.
func (l peerList) Peers() []tdd.PeerInfo {
	ps := l.disc.Peers()
	out := make([]tdd.PeerInfo, len(ps))
	for i, p := range ps {
		out[i] = tdd.PeerInfo{ID: p.ID, Addrs: p.Addrs, Source: string(p.Source), Relayed: p.Relayed}
	}
	return out
}

// Connect dials a peer given as a multiaddr ending in /p2p/<peer ID>.
func (l peerList) Connect(ctx context.Context, addr string) (tdd.PeerInfo, error) {
	ai, err := peer.AddrInfoFromString(addr)
	if err != nil {
		return tdd.PeerInfo{}, fmt.Errorf("connect %s: %w", addr, err)
	}
	if err := l.disc.Connect(ctx, *ai); err != nil {
		return tdd.PeerInfo{}, err
	}
	info := tdd.PeerInfo{ID: ai.ID, Source: string(discovery.SourceConnect)}
	for _, p := range l.disc.Peers() {
		if p.ID == ai.ID {
			info = tdd.PeerInfo{ID: p.ID, Addrs: p.Addrs, Source: string(p.Source), Relayed: p.Relayed}
		}
	}
	return info, nil
}
