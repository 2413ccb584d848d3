package node

import (
	"context"
	"maps"
	"slices"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/groupsvc"
)

// The node's signed agent groups (docs/groups.md): the group service
// (package groupsvc), its HTTP API (package groupsvc/groupapi) and its
// wiring. New builds the service before
// gossipsub and the federation, which are built with it: it is the
// gossipsub peer and subscription filter of group topics, the membership
// predicate of the federation and of the own Things (groupAccess), and
// the federation's way to spread group-scoped Things. Records it receives
// on group topics go to the federation's Intake, built before it. Its
// membership changes reauthorize running interactions and start syncs
// with members.

// groupAccess is what the node's components ask of the group service:
// who may see and call a group-scoped Thing, whether this node is a member
// of a group, and where the node's group-scoped records go.
// *groupsvc.Service implements it; tests substitute their own
// (withGroupAccess).
type groupAccess interface {
	Allowed(groups []string, thingID string, p peer.ID) bool
	MemberOf(group string) bool
	PublishThing(ctx context.Context, groups []string, raw []byte) (int, error)
}

// Groups returns the node's group service: create, invite, join, remove,
// post… (docs/groups.md).
func (n *Node) Groups() *groupsvc.Service { return n.groups }

// groupChanged is the service's OnChange, called only once the node is
// started: each part that follows membership hears of it — running
// interactions of peers no longer allowed end (own), the MCP tool list,
// the A2A cards and the agents.json are refreshed, the metric counts it,
// and the federation syncs with the members of a group this node became
// a member of.
func (n *Node) groupChanged(group string) {
	n.own.Reauthorize()
	n.mcp.Refresh()
	n.a2a.Refresh()
	n.aiCatalog.Refresh()
	n.agora.Refresh()
	n.aitp.Refresh()
	n.anp.Refresh()
	n.agentsJSON.Refresh()
	member := n.groups.MemberOf(group)
	n.metrics.GroupChange(member)
	st, _ := n.groups.State(group)
	n.fed.GroupChanged(group, member, slices.Collect(maps.Keys(st.Members)))
}
