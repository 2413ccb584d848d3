package interact

import (
	"context"
	"errors"
	"net/http"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/proto"
)

// Owners tells a Router which node owns a Thing. The node implements it
// with its directory: the publisher of the Thing's TD (its own peer ID for
// its own Things), asking the DHT on a miss.
type Owners interface {
	// Owner returns the peer ID of the node that publishes the Thing
	// thingID. An error wrapping ErrUnknownThing means no node is known to
	// publish it. When several publishers use the same thing id, Owner
	// picks one (the node's own first); a gateway that knows the
	// publisher (from the TD it served) calls Client.Do directly instead.
	Owner(ctx context.Context, thingID string) (peer.ID, error)
}

// ErrUnknownThing is what Owners returns for a Thing no node publishes.
var ErrUnknownThing = errors.New("interact: unknown Thing")

// Router is the node's one rule of how to call a Thing: For(publisher) is
// the local Engine when the node publishes the Thing and the owner node
// over libp2p otherwise. It is also the Invoker a consumer talking to its
// own node uses: Invoke finds the publisher with Owners and calls For's
// Invoker. The gateways and bridges that resolve the publisher themselves
// (the HTTP binding, MCP, A2A) call For; the others (WebSocket, MQTT, the
// SDK) call Invoke. It is safe for concurrent use.
type Router struct {
	self   peer.ID
	local  Invoker
	remote Remote
	owners Owners
}

// Remote reaches the Things of other nodes: Invoker(owner) opens
// interactions with the Things owner publishes. *Client implements it; a
// node may wrap it (e.g. to serve event subscriptions from a gossip topic).
type Remote interface {
	Invoker(owner peer.ID) Invoker
}

// NewRouter returns a Router for the node self whose own Things local
// serves and whose other Things remote reaches.
func NewRouter(self peer.ID, local Invoker, remote Remote, owners Owners) *Router {
	return &Router{self: self, local: local, remote: remote, owners: owners}
}

// For returns the Invoker of the Things publisher publishes: the local
// Invoker when publisher is this node, remote's Invoker of publisher
// otherwise.
func (r *Router) For(publisher peer.ID) Invoker {
	if publisher == r.self {
		return r.local
	}
	return r.remote.Invoker(publisher)
}

// Invoke implements Invoker: the Invoker For the owner of the Thing
// req.ThingID (Owners) opens the interaction.
func (r *Router) Invoke(ctx context.Context, req *proto.Message) (Session, error) {
	owner, err := r.owners.Owner(ctx, req.ThingID)
	var p *proto.Problem
	switch {
	case errors.As(err, &p): // the Owners' own answer, e.g. 403 for a Thing this node may not call
		return reject(req, p), nil
	case errors.Is(err, ErrUnknownThing):
		return reject(req, problem(http.StatusNotFound, TitleThingNotFound, "no node publishes Thing %q", req.ThingID)), nil
	case err != nil:
		return reject(req, problem(http.StatusBadGateway, TitleBadGateway, "finding the node of Thing %q: %v", req.ThingID, err)), nil
	}
	return r.For(owner).Invoke(ctx, req)
}

// reject is Engine.reject without an engine.
func reject(req *proto.Message, err error) Session {
	if !req.ExpectsReply() {
		return newClosedSession(req, nil)
	}
	return newClosedSession(req, errorMessage(req, err))
}
