package groups

import (
	"maps"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// State is a group's state: the fold of its log.
type State struct {
	ID, Name  string
	Founder   peer.ID
	Created   time.Time
	Policy    Policy
	Dissolved bool
	Members   map[peer.ID]Member
	// Heads are the IDs of the operations no other operation names as
	// parent (sorted).
	Heads []string
	// Ops is the number of operations in the log.
	Ops int

	used    map[string]int        // invitation ID → effective adds that used it
	revoked map[string]bool       // invitation IDs of effective uninvites
	removed map[peer.ID]time.Time // peer → created time of its latest effective remove
	step    int                   // operations applied so far; orders seniority (Member.rank)
}

// Member is a member of a group.
type Member struct {
	Peer peer.ID
	Role string
	// Things scopes the member, as digests of Thing IDs (ScopeDigest);
	// nil: every Thing of the group.
	Things  []string
	Since   time.Time
	AddedBy peer.ID

	// rank is the fold step at which the member last became admin; among
	// admins, a lower rank is more senior (the founder's is 0).
	rank int
}

// IsMember reports whether p is a member; false when dissolved.
func (s State) IsMember(p peer.ID) bool {
	_, ok := s.Members[p]
	return ok && !s.Dissolved
}

// IsAdmin reports whether p is an admin; false when dissolved.
func (s State) IsAdmin(p peer.ID) bool {
	m, ok := s.Members[p]
	return ok && !s.Dissolved && m.Role == RoleAdmin
}

// Admins returns the admins, sorted (none when dissolved).
func (s State) Admins() []peer.ID {
	var out []peer.ID
	if s.Dissolved {
		return out
	}
	for p, m := range s.Members {
		if m.Role == RoleAdmin {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// Allowed reports whether p is a member whose scope includes thingID.
func (s State) Allowed(p peer.ID, thingID string) bool {
	if !s.IsMember(p) {
		return false
	}
	return inScope(s.ID, s.Members[p].Things, thingID)
}

// CanPost reports whether p may post on the group topic under the policy.
func (s State) CanPost(p peer.ID) bool {
	if s.Policy.PostRole == RoleAdmin {
		return s.IsAdmin(p)
	}
	return s.IsMember(p)
}

// InvitationUsed reports whether an effective add used the invitation.
func (s State) InvitationUsed(invitationID string) bool {
	return s.used[invitationID] > 0
}

// InvitationUses returns how many effective adds used the invitation.
func (s State) InvitationUses(invitationID string) int {
	return s.used[invitationID]
}

// InvitationRevoked reports whether an effective uninvite revoked the
// invitation.
func (s State) InvitationRevoked(invitationID string) bool {
	return s.revoked[invitationID]
}

// LastRemoval returns the latest created time of an effective removal of
// any peer (zero if none): an invitation issued after it admits every
// removed peer again.
func (s State) LastRemoval() time.Time {
	var last time.Time
	for _, t := range s.removed {
		if t.After(last) {
			last = t
		}
	}
	return last
}

// RemovedAt returns the created time of p's latest effective removal, and
// whether p was ever removed; invitations issued up to then do not admit p.
func (s State) RemovedAt(p peer.ID) (time.Time, bool) {
	t, ok := s.removed[p]
	return t, ok
}

func (s State) clone() State {
	c := s
	c.Members = make(map[peer.ID]Member, len(s.Members))
	for p, m := range s.Members {
		m.Things = slices.Clone(m.Things)
		c.Members[p] = m
	}
	c.used = maps.Clone(s.used)
	c.revoked = maps.Clone(s.revoked)
	c.removed = maps.Clone(s.removed)
	c.Heads = slices.Clone(s.Heads)
	return c
}

// senior reports whether p is an admin more senior than x (an admin who
// became admin earlier in the fold order, or any admin if x is not one).
func (s *State) senior(p, x peer.ID) bool {
	mp, ok := s.Members[p]
	if !ok || mp.Role != RoleAdmin || p == x {
		return false
	}
	mx, ok := s.Members[x]
	return !ok || mx.Role != RoleAdmin || mp.rank < mx.rank
}

func (s *State) adminCount() int {
	n := 0
	for _, m := range s.Members {
		if m.Role == RoleAdmin {
			n++
		}
	}
	return n
}

// priority orders operations that are ready at the same time in the fold.
func priority(k Kind) int {
	switch k {
	case KindGenesis:
		return 0
	case KindDissolve:
		return 1
	case KindRemove, KindRevoke, KindLeave, KindUninvite:
		return 2
	case KindPolicy:
		return 3
	case KindRename:
		return 4
	case KindGrant:
		return 5
	default: // add
		return 6
	}
}

// before reports whether a comes before b among operations that are ready
// at the same time in the fold: by kind priority, then by ID.
func before(a, b *entry) bool {
	pa, pb := priority(a.op.Kind), priority(b.op.Kind)
	if pa != pb {
		return pa < pb
	}
	return a.op.ID < b.op.ID
}

// The fold order is Kahn's algorithm over the DAG, taking among the ready
// operations the first by before. The Log keeps it incrementally: a new
// operation e has no children, so the run with e is the run without it
// until e is ready (after its last parent, at position p) and is the least
// ready one; that is before the first operation after p that e comes
// before; from there on the run continues as without e. So e is inserted
// there (place), with O(n) work instead of a new O(n log n) sort. The same
// argument shows that the fold order of a set closed under ancestors (the
// causal past of an operation) is the full order restricted to the set, so
// rule 4's state is a replay of the full order filtered to the ancestors.

// place inserts e into l.order at its position in the fold and returns it.
func (l *Log) place(e *entry) int {
	p := -1
	for _, q := range e.parents {
		p = max(p, q.pos)
	}
	at := len(l.order)
	for k := p + 1; k < len(l.order); k++ {
		if before(e, l.order[k]) {
			at = k
			break
		}
	}
	l.order = slices.Insert(l.order, at, e)
	for k := at; k < len(l.order); k++ {
		l.order[k].pos = k
	}
	return at
}

// replay applies, in fold order, the entries for which in is true (a set
// closed under ancestors) and returns the state and which had effect (by
// entry index; nil unless withEffects).
func (l *Log) replay(in func(*entry) bool, withEffects bool) (State, []bool) {
	var st State
	var eff []bool
	if withEffects {
		eff = make([]bool, len(l.entries))
	}
	for _, e := range l.order {
		if !in(e) {
			continue
		}
		ok := l.apply(&st, e, in)
		if withEffects {
			eff[e.idx] = ok
		}
	}
	return st, eff
}

// concurrent reports whether neither of a and b is an ancestor of the other.
func concurrent(a, b *entry) bool {
	return a != b && !a.anc.has(b.idx) && !b.anc.has(a.idx)
}

// apply applies e to st if it has effect there, and reports whether it had.
// in is the set being folded (for the concurrency condition).
func (l *Log) apply(st *State, e *entry, in func(*entry) bool) bool {
	op := e.op
	if op.Kind == KindGenesis {
		*st = State{
			ID: op.ID, Name: op.Name, Founder: op.Author, Created: op.Created,
			Members: map[peer.ID]Member{op.Author: {Peer: op.Author, Role: RoleAdmin, Since: op.Created, AddedBy: op.Author}},
			used:    map[string]int{},
			revoked: map[string]bool{},
			removed: map[peer.ID]time.Time{},
		}
		if op.Policy != nil {
			st.Policy = *op.Policy
		}
		return true
	}
	if st.Dissolved || st.Members == nil {
		return false
	}
	st.step++
	if op.Kind == KindLeave {
		if !st.IsMember(op.Author) {
			return false
		}
	} else if !st.IsAdmin(op.Author) {
		return false
	}
	// Seniority decides concurrent conflicts: the author's own leave, or a
	// remove or revoke of the author by a more senior admin (here), voids
	// what the author did concurrently.
	for _, s := range l.strikes[op.Author] {
		if in(s) && concurrent(s, e) && (s.op.Kind == KindLeave || st.senior(s.op.Author, op.Author)) {
			return false
		}
	}
	switch op.Kind {
	case KindAdd:
		return l.addEffect(st, e, in)
	case KindRemove:
		m, ok := st.Members[op.Peer]
		if !ok || (m.Role == RoleAdmin && st.adminCount() == 1) {
			return false
		}
		delete(st.Members, op.Peer)
		if op.Created.After(st.removed[op.Peer]) {
			st.removed[op.Peer] = op.Created
		}
	case KindUninvite:
		st.revoked[op.InvitationID] = true
	case KindLeave:
		m := st.Members[op.Author]
		if m.Role == RoleAdmin && st.adminCount() == 1 {
			return false
		}
		delete(st.Members, op.Author)
	case KindGrant:
		m, ok := st.Members[op.Peer]
		if !ok || m.Role == RoleAdmin {
			return false
		}
		m.Role, m.rank = RoleAdmin, st.step
		st.Members[op.Peer] = m
	case KindRevoke:
		m, ok := st.Members[op.Peer]
		if !ok || m.Role != RoleAdmin || st.adminCount() == 1 {
			return false
		}
		m.Role = RoleMember
		st.Members[op.Peer] = m
	case KindPolicy:
		st.Policy = *op.Policy
	case KindRename:
		st.Name = op.Name
	case KindDissolve:
		st.Dissolved = true
	default:
		return false
	}
	return true
}

// addEffect applies the add e if it has effect in st. in is the set being
// folded (for the uninvites concurrent with e).
func (l *Log) addEffect(st *State, e *entry, in func(*entry) bool) bool {
	op := e.op
	old, exists := st.Members[op.Peer]
	if !exists && st.Policy.MaxMembers > 0 && len(st.Members) >= st.Policy.MaxMembers {
		return false
	}
	if exists && old.Role == RoleAdmin && op.role() != RoleAdmin && st.adminCount() == 1 {
		return false // would leave the group without an admin
	}
	if op.Invitation != nil {
		inv := op.inv
		if inv == nil || inv.Group != st.ID || !st.IsAdmin(inv.Issuer) || op.Created.After(inv.Expires) ||
			(inv.For != "" && inv.For != op.Peer) || inv.role() != op.role() ||
			!sameScope(inv.Things, op.Things) || (inv.Uses > 0 && st.used[inv.ID] >= inv.Uses) ||
			issuedBeforeRemoval(st, inv, op.Peer) || l.revokedFor(st, e, inv.ID, in) {
			return false
		}
		st.used[inv.ID]++
	}
	m := Member{Peer: op.Peer, Role: op.role(), Things: slices.Clone(op.Things), Since: op.Created, AddedBy: op.Author, rank: st.step}
	if exists {
		m.Since, m.AddedBy = old.Since, old.AddedBy
		if old.Role == RoleAdmin && m.Role == RoleAdmin {
			m.rank = old.rank // still admin: keeps its seniority
		}
	}
	st.Members[op.Peer] = m
	return true
}

// revokedFor reports whether an uninvite of the invitation in the folded
// set voids the add e: one that e does not precede (it is concurrent with
// e or after it) and whose author is an admin in st. An add the revoking
// admin had seen stands; removing its member is a remove.
func (l *Log) revokedFor(st *State, e *entry, invID string, in func(*entry) bool) bool {
	for _, u := range l.revokes[invID] {
		if in(u) && !u.anc.has(e.idx) && st.IsAdmin(u.op.Author) {
			return true
		}
	}
	return false
}

func sameScope(a, b []string) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	return sameSet(a, b)
}
