package node

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/ping"

	"github.com/lmosnode/lmosnode/node/discovery"
	"github.com/lmosnode/lmosnode/node/tdd"
)

// peerList serves the API's peer routes (`lmosnode peers`, `lmosnode
// connect`) from the discovery service, which knows how each peer was
// found: mdns, dht, bootstrap, connect, inbound or outbound.
type peerList struct {
	disc *discovery.Service
	host host.Host
}

// pingTimeout bounds the pings Peers sends to peers whose latency is not
// known yet.
const pingTimeout = time.Second

// Peers returns the connected peers with their addresses, sources and
// connections. A peer whose round-trip time is unknown (no DHT request or
// ping measured it yet) is pinged once, all in parallel for at most
// pingTimeout; one that does not answer in time is listed without.
func (l peerList) Peers() []tdd.PeerInfo {
	ps := l.disc.Peers()
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for i := range ps {
		if ps[i].Latency > 0 {
			continue
		}
		wg.Go(func() {
			res, ok := <-ping.Ping(ctx, l.host, ps[i].ID)
			if ok && res.Error == nil {
				ps[i].Latency = res.RTT
			}
		})
	}
	wg.Wait()
	out := make([]tdd.PeerInfo, len(ps))
	for i, p := range ps {
		out[i] = toTDDPeer(p)
	}
	return out
}

// toTDDPeer converts discovery's view of a peer to the API's.
func toTDDPeer(p discovery.PeerInfo) tdd.PeerInfo {
	return tdd.PeerInfo{ID: p.ID, Addrs: p.Addrs, Source: string(p.Source), Conn: tdd.PeerConn{
		State: p.State, Direction: p.Direction, Relayed: p.Relayed, Latency: p.Latency,
		AgentVersion: p.AgentVersion, ConnectedAt: p.ConnectedAt,
	}}
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
			info = toTDDPeer(p)
		}
	}
	return info, nil
}
