package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/fanout"
	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/node/own"
	"github.com/lmosnode/lmosnode/node/p2p"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// registerTimeout bounds the publication of a Thing by Register.
const registerTimeout = 30 * time.Second

// Register publishes td as one of the node's own Things (signed, stored,
// announced, like PUT /things/{id}) and makes thing serve its
// interactions, for a Go program that embeds the node. Registering the
// same id again replaces both.
func (n *Node) Register(td *lmosproto.TD, thing *interact.Thing) (directory.Entry, error) {
	if td == nil || thing == nil {
		return directory.Entry{}, errors.New("node: register: td and thing are required")
	}
	ctx, cancel := context.WithTimeout(n.ctx, registerTimeout)
	defer cancel()
	if err := n.own.Register(ctx, td, thing); err != nil {
		return directory.Entry{}, fmt.Errorf("node: register thing %q: %w", td.ID, err)
	}
	e, _ := n.dir.Get(n.peerID, td.ID)
	return e, nil
}

// Find returns the Things of the federation that offer the capability id
// (lmos:id, exactly as written): the directory's, after asking the
// providers the DHT names unless this node did so for the capability
// within federation.LookupFresh and holds a match (package federation,
// FindCapability). Only the Things this node may see are returned.
func (n *Node) Find(ctx context.Context, id string) ([]directory.Entry, error) {
	found, err := n.fed.FindCapability(ctx, id)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(found, func(e directory.Entry) bool { return !n.own.Visible(e) }), nil
}

// Things returns the node's own Things: publish, register and remove
// them, and resolve which publisher serves a Thing for this node's
// consumers (package own).
func (n *Node) Things() *own.Things { return n.own }

// Invoker returns the node's router: it opens interactions with any Thing
// the node knows, its own (through its engine) or another node's (over
// libp2p). See package interact.
func (n *Node) Invoker() interact.Invoker {
	return interact.Instrument(n.router, interact.SideConsumer, "go", n.instrumentation())
}

// ownerLocal is the engine of the own Things as this node's own consumers
// reach it, instrumented as the owner side (transport "local").
func (n *Node) ownerLocal() interact.Invoker {
	return interact.Instrument(n.own.Engine(), interact.SideOwner, "local", n.instrumentation())
}

// buildInteract builds the libp2p server and client of the interactions,
// the gossip fan-out of events and the router; teardown closes them.
func (n *Node) buildInteract() error {
	log := n.log.With("component", "interact")
	var err error
	if n.interactServer, err = interact.NewServer(interact.ServerDeps{Host: n.host,
		Invoker: interact.Instrument(n.own.Engine(), interact.SideOwner, "libp2p", n.instrumentation())},
		interact.TransportConfig{MaxPeerInteractions: n.cfg.Resources.MaxPeerInteractions}, interact.WithLogger(log)); err != nil {
		return err
	}
	if n.interactClient, err = interact.NewClient(interact.ClientDeps{Host: n.host, Routing: n.dht, Asked: n.asked}, interact.TransportConfig{}, interact.WithLogger(log)); err != nil {
		return err
	}
	if n.ps != nil {
		n.fanout, err = fanout.New(fanout.Deps{
			PubSub:     n.ps,
			Self:       n.peerID,
			Local:      n.own.Engine(),
			TD:         n.own.TDOf,
			TopicScore: p2p.TopicScore(),
		}, fanout.Config{}, fanout.WithLogger(n.log.With("component", "fanout")))
		if err != nil {
			return err
		}
	}
	n.router = interact.NewRouter(n.peerID, n.ownerLocal(), n.remote(), n.own)
	// The MCP, A2A, Agora and AITP bridges' calls: the same rule, not instrumented
	// (unlike the HTTP binding's, WebSocket's and MQTT's).
	n.bridgeRouter = interact.NewRouter(n.peerID, n.own.Engine(), n.remote(), n.own)
	return nil
}

// closeInteract closes what buildInteract built and the own Things: first
// the server (no more remote callers), then the client (our calls to
// other nodes), then the engine (running backend calls).
func (n *Node) closeInteract() error {
	var errs []error
	if n.fanout != nil {
		errs = append(errs, n.fanout.Close())
	}
	if n.interactServer != nil {
		errs = append(errs, n.interactServer.Close())
	}
	if n.interactClient != nil {
		errs = append(errs, n.interactClient.Close())
	}
	if n.own != nil {
		errs = append(errs, n.own.Close())
	}
	return errors.Join(errs...)
}

// remote reaches other nodes' Things: over libp2p, with event
// subscriptions served from the gossip fan-out when gossip is on.
func (n *Node) remote() fanout.Remote {
	return fanout.Remote{Client: n.interactClient, Fanout: n.fanout}
}
