package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Enforcement of groups (docs/groups.md, "Enforcement"). The components
// ask one predicate, Membership, whether a peer may see and call a Thing
// restricted to groups:
//
//   - the engine (interact.Options.Authorize) for calls from other peers
//     over libp2p; calls through this node's own API are the owner's;
//   - the directory API (tdd), the HTTP binding (gateway) and the
//     federation's lookups, with this node as the peer, for the Things it
//     learned: a group-scoped Thing is listed, served and callable through
//     this node only while this node may see it (its own Things always);
//   - the federation's sync, for the peer asking;
//   - Publish, with this node and no Thing id, for the groups a TD names.
//
// The group service sets the predicate (setMembership) and the hook that
// spreads group-scoped records on the group topics (setScopedPublisher),
// and calls reauthorize after every membership change.

// Membership reports whether peer p may see and call the Thing thingID
// whose TD names groups: p is a current member of one of them, with
// thingID in its scope. thingID is empty when only membership is asked
// (this node publishing a Thing into the groups). It is called under the
// directory's read lock and from the engine: it must not call the
// Directory, the Engine or the Node, and must be safe for concurrent use.
type Membership func(groups []string, thingID string, p peer.ID) bool

// ScopedPublisher spreads a signed group-scoped record (a TD naming
// lmos:groups, or the tombstone removing one) on the topics of groups, as
// {"thing": record}; see federation.Params.Scoped.
type ScopedPublisher func(ctx context.Context, groups []string, record []byte) error

// errNoGroupService is the answer of spreadScoped before the group
// service set its hook.
var errNoGroupService = errors.New("no group service: group-scoped Things reach members by sync only")

// setMembership makes m the node's membership predicate; nil restores the
// default, which allows this node only. Call reauthorize after.
func (n *Node) setMembership(m Membership) {
	if m == nil {
		n.membership.Store(nil)
		return
	}
	n.membership.Store(&m)
}

// setScopedPublisher makes pub the hook that spreads group-scoped
// records; nil removes it.
func (n *Node) setScopedPublisher(pub ScopedPublisher) {
	if pub == nil {
		n.scopedPub.Store(nil)
		return
	}
	n.scopedPub.Store(&pub)
}

// allowed asks the membership predicate. Without one (no group service)
// only this node is allowed: a secure default, no other peer sees or
// calls a group-scoped Thing.
func (n *Node) allowed(groups []string, thingID string, p peer.ID) bool {
	if m := n.membership.Load(); m != nil {
		return (*m)(groups, thingID, p)
	}
	return p == n.peerID
}

// memberOf reports whether this node is a member of group
// (federation.Params.MemberOf).
func (n *Node) memberOf(group string) bool {
	return n.allowed([]string{group}, "", n.peerID)
}

// visible reports whether this node's API shows e: public Things, own
// Things, and group-scoped Things this node may see.
func (n *Node) visible(e directory.Entry) bool {
	return e.Groups == nil || e.Own || n.allowed(e.Groups, e.ThingID, n.peerID)
}

// visibility is tdd.Deps.Visibility: the same for every caller of the
// API, which is this node's owner.
func (n *Node) visibility(*http.Request) func(directory.Entry) bool { return n.visible }

// authorize is the engine's interact.Options.Authorize: a call from
// another peer over libp2p needs the membership predicate's yes; a call
// through this node's own API is the owner's.
func (n *Node) authorize(ctx context.Context, td *lmosproto.TD, _ *lmosproto.Message) error {
	p, remote := interact.RemotePeerFrom(ctx)
	if !remote || p == n.peerID || n.allowed(td.Groups, td.ID, p) {
		return nil
	}
	return fmt.Errorf("peer %s: %w", p, interact.ErrForbidden)
}

// spreadScoped is federation.Params.Scoped: the group service's hook.
func (n *Node) spreadScoped(ctx context.Context, groups []string, record []byte) error {
	pub := n.scopedPub.Load()
	if pub == nil {
		return errNoGroupService
	}
	return (*pub)(ctx, groups, record)
}

// reauthorize applies a membership change to what runs: interactions of
// peers no longer allowed end with 403 Forbidden.
func (n *Node) reauthorize() {
	if n.engine != nil {
		n.engine.Reauthorize()
	}
}
