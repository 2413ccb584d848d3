package node

import (
	"context"
	"fmt"
	"sync"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/tdd"
)

// peerBook lists the host's connected peers for the API and dials peers
// on request. It remembers how each peer was found (Note), so that
// `lmosnode peers` can say "mdns", "dht", "bootstrap" or "connect".
type peerBook struct {
	host host.Host

	mu     sync.Mutex
	source map[peer.ID]string
}

func newPeerBook(h host.Host) *peerBook {
	return &peerBook{host: h, source: make(map[peer.ID]string)}
}

// Note records how p was found; the first source noted wins.
func (b *peerBook) Note(p peer.ID, source string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.source[p]; !ok {
		b.source[p] = source
	}
}

// Peers returns the connected peers with their addresses and sources.
func (b *peerBook) Peers() []tdd.PeerInfo {
	ids := b.host.Network().Peers()
	out := make([]tdd.PeerInfo, 0, len(ids))
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, id := range ids {
		src := b.source[id]
		if src == "" {
			src = "inbound"
		}
		out = append(out, tdd.PeerInfo{ID: id, Addrs: b.host.Peerstore().Addrs(id), Source: src})
	}
	return out
}

// Connect dials a peer given as a multiaddr ending in /p2p/<peer ID>.
func (b *peerBook) Connect(ctx context.Context, addr string) (tdd.PeerInfo, error) {
	ai, err := peer.AddrInfoFromString(addr)
	if err != nil {
		return tdd.PeerInfo{}, fmt.Errorf("connect %s: %w", addr, err)
	}
	if err := b.host.Connect(ctx, *ai); err != nil {
		return tdd.PeerInfo{}, fmt.Errorf("connect %s: %w", ai.ID, err)
	}
	b.Note(ai.ID, "connect")
	return tdd.PeerInfo{ID: ai.ID, Addrs: b.host.Peerstore().Addrs(ai.ID), Source: b.sourceOf(ai.ID)}, nil
}

func (b *peerBook) sourceOf(p peer.ID) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.source[p]
}
