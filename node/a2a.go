package node

import (
	"crypto/ed25519"
	"log/slog"

	"github.com/lmosnode/lmosnode/node/a2abridge"
)

// buildA2A builds the A2A bridge: every lmos:Agent the node may see is an
// A2A agent on the API (docs/bridges.md), calls going the way of the HTTP
// binding's (the own Things' rule of which publisher serves a Thing, the
// engine or the owner node); imported A2A agents are published as own
// Things. Every caller of the API is this node's owner: one view.
func (n *Node) buildA2A(key ed25519.PrivateKey, log *slog.Logger) error {
	var err error
	n.a2a, err = a2abridge.New(a2abridge.Deps{
		Directory: n.dir,
		Visible:   n.own.Visible,
		Resolver:  n.own,
		TDs:       n.own,
		Self:      n.peerID,
		Invokers:  n.bridgeRouter,
		Key:       key,
		Publisher: n.own,
		Client:    n.a2aClient,
		Orgs:      n.orgs,
	}, a2abridge.Config{BearerAuth: n.tokenForAll}, a2abridge.WithLogger(log.With("component", "a2a")))
	return err
}
