package own

import (
	"context"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Enforcement of groups on the owning side (docs/groups.md,
// "Enforcement"): every decision asks Deps.Access.

// Allowed reports whether peer p may see and call the Thing thingID
// restricted to groups. Without Deps.Access only this node is allowed.
func (t *Things) Allowed(groups []string, thingID string, p peer.ID) bool {
	if t.deps.Access != nil {
		return t.deps.Access.Allowed(groups, thingID, p)
	}
	return p == t.deps.Self
}

// Visible reports whether this node's API shows e: public Things, own
// Things, and group-scoped Things this node may see.
func (t *Things) Visible(e directory.Entry) bool {
	return e.Groups == nil || e.Own || t.Allowed(e.Groups, e.ThingID, t.deps.Self)
}

// Reauthorize applies a membership change to what runs: interactions of
// peers no longer allowed end with 403 Forbidden.
func (t *Things) Reauthorize() { t.engine.Reauthorize() }

// VisibleTo is what a caller authenticated by its DID (ANP, package anp)
// may see and call through this node: public Things, and this node's own
// Things of groups the caller's key is a member of. A group-scoped Thing
// of another publisher is not: the call would go out as this node.
func (t *Things) VisibleTo(c interact.DIDCaller) func(directory.Entry) bool {
	return func(e directory.Entry) bool {
		return e.Groups == nil || (e.Own && t.Allowed(e.Groups, e.ThingID, c.Peer))
	}
}

// authorize is the engine's interact.EngineDeps.Authorize: a call from
// another peer over libp2p, or from a caller the API authenticated by its
// DID (interact.DIDCallerFrom, its key's peer ID), needs Access's yes; any
// other call through this node's own API is the owner's.
func (t *Things) authorize(ctx context.Context, td *lmosproto.TD, _ *lmosproto.Message) error {
	if c, ok := interact.DIDCallerFrom(ctx); ok {
		if t.Allowed(td.Groups, td.ID, c.Peer) {
			return nil
		}
		return fmt.Errorf("%s (key %s): %w", c.DID, c.Peer, interact.ErrForbidden)
	}
	p, remote := interact.RemotePeerFrom(ctx)
	if !remote || p == t.deps.Self || t.Allowed(td.Groups, td.ID, p) {
		return nil
	}
	return fmt.Errorf("peer %s: %w", p, interact.ErrForbidden)
}
