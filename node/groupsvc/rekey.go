package groupsvc

import (
	"context"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/groups"
)

// Rekey moves the memberships of a retired key (docs/identity.md, "Key
// rotation and revocation"): in every live group this node administers
// where old is a member, it adds successor with old's role and scope and
// removes old, with ordinary signed operations, so that every node folds
// the same log to the same state whether or not it knows the rotation.
// With successor empty (a revocation) old is only removed. Two admins
// doing it concurrently add the successor twice and remove old twice,
// which folds to the same state as once. It then asks the successor's
// node for its log, which makes that node ask back and learn that it is
// a member. It returns how many groups it changed.
func (s *Service) Rekey(ctx context.Context, old, successor peer.ID) int {
	n := 0
	for _, g := range s.all() {
		st := g.state()
		m, ok := st.Members[old]
		if !ok || st.Dissolved || !st.IsAdmin(s.self) || old == s.self {
			continue
		}
		add := func(st groups.State) (groups.Draft, error) {
			if successor == "" || st.IsMember(successor) {
				return groups.Draft{}, nil
			}
			return groups.Draft{Kind: groups.KindAdd, Peer: successor, Role: m.Role, Things: m.Things}, nil
		}
		remove := func(st groups.State) (groups.Draft, error) {
			if !st.IsMember(old) {
				return groups.Draft{}, nil
			}
			return groups.Draft{Kind: groups.KindRemove, Peer: old}, nil
		}
		// An admin's successor comes in before the admin goes (the last
		// admin cannot be removed); a member leaves room first (maxMembers).
		steps := []func(groups.State) (groups.Draft, error){remove, add}
		if m.Role == groups.RoleAdmin {
			steps = []func(groups.State) (groups.Draft, error){add, remove}
		}
		failed := false
		for _, step := range steps {
			if _, err := s.act(ctx, g.id, step); err != nil {
				s.log.Warn("move membership of a retired key", "group", g.id, "key", old, "successor", successor, "err", err)
				failed = true
				break
			}
		}
		if failed {
			continue
		}
		n++
		s.log.Info("membership of a retired key moved", "group", g.id, "key", old, "successor", successor)
		if successor != "" {
			s.spawn(func() { s.syncWith(g, successor, true) })
		}
	}
	return n
}
