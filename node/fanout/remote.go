package fanout

import (
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/interact"
)

// Remote reaches other nodes' Things (interact.Remote, the gateways'
// Remote): through Client, over libp2p, and with a Fanout, event
// subscriptions from each Thing's events topic instead of a stream per
// subscriber to the owner (Invoker). A nil Fanout (no gossip) leaves
// everything to Client.
type Remote struct {
	Client interact.Remote
	Fanout *Fanout
}

// Invoker implements interact.Remote.
func (r Remote) Invoker(owner peer.ID) interact.Invoker {
	if r.Fanout == nil {
		return r.Client.Invoker(owner)
	}
	return &Invoker{Owner: owner, Remote: r.Client.Invoker(owner), Fanout: r.Fanout}
}
