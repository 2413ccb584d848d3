package federation

import (
	"context"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
)

// Syncs with the members of the node's groups: a member serves this node
// the Things it restricts to their groups only once it holds this node as
// a member, so the node asks again when that changes.

const (
	// maxMemberSyncs bounds the members SyncMembers syncs with.
	maxMemberSyncs = 64
	// memberSyncEvery is the least time between two syncs SyncMember
	// starts with one peer.
	memberSyncEvery = 2 * time.Second
)

// GroupChanged is told of a change of group: whether this node is a member
// now, and the members. When the node became a member, it syncs with the
// other members (SyncMembers): Things restricted to the group are open to
// it now.
func (f *Federation) GroupChanged(group string, member bool, members []peer.ID) {
	if !f.joined.update(group, member) || !member {
		return
	}
	others := make([]peer.ID, 0, len(members))
	for _, p := range members {
		if p != f.self {
			others = append(others, p)
		}
	}
	f.SyncMembers(others)
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

// SyncMembers syncs in the background with each of peers in turn (at most
// 64): the members of a group this node became a member of. Members it is
// not connected to are found through the DHT.
func (f *Federation) SyncMembers(peers []peer.ID) {
	if len(peers) > maxMemberSyncs {
		peers = peers[:maxMemberSyncs]
	}
	f.spawn(func() {
		for _, p := range peers {
			if f.ctx.Err() != nil {
				return
			}
			ctx, cancel := context.WithTimeout(f.ctx, SyncTimeout)
			if f.p.Host.Network().Connectedness(p) != network.Connected && len(f.p.Host.Peerstore().Addrs(p)) == 0 && f.p.DHT != nil {
				if ai, err := f.p.DHT.FindPeer(ctx, p); err == nil {
					f.p.Host.Peerstore().AddAddrs(ai.ID, ai.Addrs, peerstore.TempAddrTTL)
				}
			}
			if _, err := f.Sync(ctx, p, Filter{}); err != nil && f.ctx.Err() == nil {
				f.log.Debug("sync with group member", "peer", p, "err", err)
			}
			cancel()
		}
	})
}

// SyncMember syncs with the member p in the background, at most once
// every two seconds: p asked this node for a group's log, so it holds
// this node as a member and serves it what it restricts to the group.
func (f *Federation) SyncMember(p peer.ID) {
	if !f.memberSyncs.due(p) {
		return
	}
	f.spawn(func() {
		ctx, cancel := context.WithTimeout(f.ctx, SyncTimeout)
		defer cancel()
		if _, err := f.Sync(ctx, p, Filter{}); err != nil && f.ctx.Err() == nil {
			f.log.Debug("sync with group member", "peer", p, "err", err)
		}
	})
}

// spawn runs fn on a goroutine the Federation owns, unless it is closed.
func (f *Federation) spawn(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.wg.Go(fn)
	}
}

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
