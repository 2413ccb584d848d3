package p2p

import (
	"fmt"
	"time"

	coreconnmgr "github.com/libp2p/go-libp2p/core/connmgr"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
)

// The connection manager's value of a peer the node asks (calls its
// Things, fetches its records): each ask adds askBump, up to askMax, and
// every askDecayInterval takes askDecay off. A peer asked every few
// minutes keeps a value above the connections nobody uses, so trimming
// (past ConnMgr.High) closes those first, and the next call or lookup
// does not pay a new handshake (~3 round trips over TCP, 1 over QUIC).
// kad-dht's routing-table peers carry their own tag.
const (
	askedTag         = "lmos-asked"
	askBump          = 10
	askMax           = 50
	askDecay         = 1
	askDecayInterval = time.Minute
)

// KeepAsked returns the function that marks a peer as asked on h's
// connection manager; a no-op if it cannot decay tags.
func KeepAsked(h host.Host) (func(peer.ID), error) {
	dc, ok := h.ConnManager().(coreconnmgr.Decayer)
	if !ok {
		return func(peer.ID) {}, nil
	}
	tag, err := dc.RegisterDecayingTag(askedTag, askDecayInterval, coreconnmgr.DecayFixed(askDecay), coreconnmgr.BumpSumBounded(0, askMax))
	if err != nil {
		return nil, fmt.Errorf("p2p: connection manager tag %s: %w", askedTag, err)
	}
	return func(p peer.ID) { _ = tag.Bump(p, askBump) }, nil
}
