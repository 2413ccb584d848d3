package node

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	pubsubpb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"

	"github.com/lmosnode/lmosnode/node/federation"
	"github.com/lmosnode/lmosnode/node/groupsvc"
	"github.com/lmosnode/lmosnode/node/groupsvc/groupapi"
)

// The node's signed agent groups (docs/groups.md): the group service
// (package groupsvc), its HTTP API (package groupapi) and its wiring. New builds the service after
// gossipsub, the datastore, the DHT and the federation; it becomes the
// node's membership predicate (membership.go), the federation's way to
// spread group-scoped Things, the gossipsub peer and subscription filter
// of group topics, and its membership changes reauthorize running
// interactions.

// scopedAcceptTimeout bounds the storing of one group-scoped record that
// arrived on a group topic.
const scopedAcceptTimeout = 10 * time.Second

// Groups returns the node's group service: create, invite, join, remove,
// post… (docs/groups.md).
func (n *Node) Groups() *groupsvc.Service { return n.groups }

// buildGroups builds the group service and hooks it into the node.
func (n *Node) buildGroups(key ed25519.PrivateKey) error {
	p := groupsvc.Params{
		Host:      n.host,
		Key:       key,
		PubSub:    n.ps,
		Datastore: n.store,
		OnChange:  n.groupChanged,
		OnMemberSync: func(_ string, p peer.ID) {
			if n.memberSyncs.due(p) {
				n.groupSync(p)
			}
		},
		Things: n.acceptScoped,
		Logger: n.log.With("component", "groups"),
	}
	if n.ps != nil {
		p.TopicScore = topicScore()
	}
	if n.dht != nil {
		p.DHT = n.dht
	}
	svc, err := groupsvc.New(p)
	if err != nil {
		return err
	}
	n.groups = svc
	if n.groupAPI, err = groupapi.New(groupapi.Deps{Groups: svc}); err != nil {
		return err
	}
	n.groupFilter.set(svc)
	n.setMembership(svc.Allowed)
	n.setScopedPublisher(func(ctx context.Context, groups []string, record []byte) error {
		_, err := svc.PublishThing(ctx, groups, record)
		return err
	})
	return nil
}

// acceptScoped is the service's groupsvc.ThingHandler: the federation
// checks and stores the record.
func (n *Node) acceptScoped(group string, from peer.ID, raw []byte) error {
	ctx, cancel := context.WithTimeout(n.ctx, scopedAcceptTimeout)
	defer cancel()
	err := n.fed.AcceptScoped(ctx, from, group, raw)
	if errors.Is(err, federation.ErrNotNewer) {
		return fmt.Errorf("%w: %w", groupsvc.ErrStaleThing, err)
	}
	return err
}

// groupChanged is the service's OnChange: running interactions of peers
// no longer allowed end, and when this node became a member of the group
// it asks the group's members for their Things (group-scoped ones
// included, now that it may see them).
func (n *Node) groupChanged(group string) {
	n.reauthorize()
	member := n.groups.MemberOf(group)
	if !n.joinedGroups.update(group, member) || !member {
		return
	}
	st, _ := n.groups.State(group)
	var peers []peer.ID
	for p := range st.Members {
		if p != n.peerID {
			peers = append(peers, p)
		}
	}
	if len(peers) > maxGroupSyncs {
		peers = peers[:maxGroupSyncs]
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	n.wg.Go(func() { n.syncMembers(peers) })
}

// maxGroupSyncs bounds the members a node syncs with after it joined a
// group.
const maxGroupSyncs = 64

// syncMembers syncs with each of peers in turn, finding those it is not
// connected to through the DHT.
func (n *Node) syncMembers(peers []peer.ID) {
	for _, p := range peers {
		if n.ctx.Err() != nil {
			return
		}
		ctx, cancel := context.WithTimeout(n.ctx, federation.SyncTimeout)
		if n.host.Network().Connectedness(p) != network.Connected && len(n.host.Peerstore().Addrs(p)) == 0 {
			if ai, err := n.dht.FindPeer(ctx, p); err == nil {
				n.host.Peerstore().AddAddrs(ai.ID, ai.Addrs, peerstore.TempAddrTTL)
			}
		}
		if _, err := n.fed.Sync(ctx, p, federation.Filter{}); err != nil && n.ctx.Err() == nil {
			n.log.Debug("sync with group member", "peer", p, "err", err)
		}
		cancel()
	}
}

// groupSync syncs with p in the background: a member that holds this node
// as a member serves it the Things it restricts to their groups.
func (n *Node) groupSync(p peer.ID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	n.wg.Go(func() {
		ctx, cancel := context.WithTimeout(n.ctx, federation.SyncTimeout)
		defer cancel()
		if _, err := n.fed.Sync(ctx, p, federation.Filter{}); err != nil && n.ctx.Err() == nil {
			n.log.Debug("sync with group member", "peer", p, "err", err)
		}
	})
}

// memberSyncEvery is the least time between two syncs groupSync starts
// with one peer.
const memberSyncEvery = 2 * time.Second

// peerTimes notes when something was last done per peer.
type peerTimes struct {
	mu   sync.Mutex
	last map[peer.ID]time.Time
}

// due reports whether memberSyncEvery passed since the last due(p), and
// notes now.
func (t *peerTimes) due(p peer.ID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last == nil || len(t.last) > 4096 {
		t.last = map[peer.ID]time.Time{}
	}
	if time.Since(t.last[p]) < memberSyncEvery {
		return false
	}
	t.last[p] = time.Now()
	return true
}

// groupSet is the set of groups this node was a member of at the last
// change.
type groupSet struct {
	mu  sync.Mutex
	ids map[string]bool
}

// update records whether the node is a member of group and reports
// whether that changed.
func (s *groupSet) update(group string, member bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids == nil {
		s.ids = map[string]bool{}
	}
	was := s.ids[group]
	s.ids[group] = member
	return was != member
}

// groupFilter is the gossipsub peer and subscription filter of the node:
// the group service's once it is built (gossipsub is built before it),
// admitting everyone before.
type groupFilter struct {
	svc atomic.Pointer[groupsvc.Service]
}

func (f *groupFilter) set(s *groupsvc.Service) { f.svc.Store(s) }

// peerFilter is pubsub.WithPeerFilter's function.
func (f *groupFilter) peerFilter(pid peer.ID, topic string) bool {
	s := f.svc.Load()
	return s == nil || s.PeerFilter(pid, topic)
}

// CanSubscribe implements pubsub.SubscriptionFilter.
func (f *groupFilter) CanSubscribe(string) bool { return true }

// FilterIncomingSubscriptions implements pubsub.SubscriptionFilter.
func (f *groupFilter) FilterIncomingSubscriptions(from peer.ID, subs []*pubsubpb.RPC_SubOpts) ([]*pubsubpb.RPC_SubOpts, error) {
	s := f.svc.Load()
	if s == nil {
		return subs, nil
	}
	return s.SubscriptionFilter().FilterIncomingSubscriptions(from, subs)
}
