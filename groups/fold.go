package groups

import (
	"container/heap"
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

	used map[string]bool // IDs of invitations used by an effective add
}

// Member is a member of a group.
type Member struct {
	Peer peer.ID
	Role string
	// Things scopes the member; nil: every Thing of the group.
	Things  []string
	Since   time.Time
	AddedBy peer.ID
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
	m := s.Members[p]
	return m.Things == nil || slices.Contains(m.Things, thingID)
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
	return s.used[invitationID]
}

func (s State) clone() State {
	c := s
	c.Members = make(map[peer.ID]Member, len(s.Members))
	for p, m := range s.Members {
		m.Things = slices.Clone(m.Things)
		c.Members[p] = m
	}
	c.used = maps.Clone(s.used)
	c.Heads = slices.Clone(s.Heads)
	return c
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
	case KindRemove, KindRevoke, KindLeave:
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

// folded is the result of a fold.
type folded struct {
	order     []*entry
	state     State
	effective map[string]bool
}

// readyQueue is the Kahn queue: ready entries by kind priority, then ID.
type readyQueue []*entry

func (q readyQueue) Len() int { return len(q) }
func (q readyQueue) Less(i, j int) bool {
	pi, pj := priority(q[i].op.Kind), priority(q[j].op.Kind)
	if pi != pj {
		return pi < pj
	}
	return q[i].op.ID < q[j].op.ID
}
func (q readyQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *readyQueue) Push(x any)   { *q = append(*q, x.(*entry)) }
func (q *readyQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// fold folds the entries for which in is true (a set closed under
// ancestors, containing the genesis) in the deterministic order.
func (l *Log) fold(in func(*entry) bool) *folded {
	f := &folded{effective: make(map[string]bool)}
	indeg := make(map[*entry]int)
	q := &readyQueue{}
	for _, e := range l.entries {
		if !in(e) {
			continue
		}
		indeg[e] = len(e.parents)
		if len(e.parents) == 0 {
			heap.Push(q, e)
		}
	}
	f.order = make([]*entry, 0, len(indeg))
	for q.Len() > 0 {
		e := heap.Pop(q).(*entry)
		f.order = append(f.order, e)
		f.effective[e.op.ID] = l.apply(&f.state, e, in)
		for _, c := range e.children {
			if _, ok := indeg[c]; !ok {
				continue
			}
			indeg[c]--
			if indeg[c] == 0 {
				heap.Push(q, c)
			}
		}
	}
	return f
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
			used:    map[string]bool{},
		}
		if op.Policy != nil {
			st.Policy = *op.Policy
		}
		return true
	}
	if st.Dissolved || st.Members == nil {
		return false
	}
	if op.Kind == KindLeave {
		if !st.IsMember(op.Author) {
			return false
		}
	} else if !st.IsAdmin(op.Author) {
		return false
	}
	for _, s := range l.strikes[op.Author] {
		if in(s) && concurrent(s, e) {
			return false
		}
	}
	switch op.Kind {
	case KindAdd:
		return addEffect(st, op)
	case KindRemove:
		m, ok := st.Members[op.Peer]
		if !ok || (m.Role == RoleAdmin && st.adminCount() == 1) {
			return false
		}
		delete(st.Members, op.Peer)
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
		m.Role = RoleAdmin
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

func addEffect(st *State, op *Op) bool {
	old, exists := st.Members[op.Peer]
	if !exists && st.Policy.MaxMembers > 0 && len(st.Members) >= st.Policy.MaxMembers {
		return false
	}
	if exists && old.Role == RoleAdmin && op.role() != RoleAdmin && st.adminCount() == 1 {
		return false // would leave the group without an admin
	}
	if op.Invitation != "" {
		inv := op.inv
		if inv == nil || inv.Group != st.ID || !st.IsAdmin(inv.Issuer) || op.Created.After(inv.Expires) ||
			(inv.For != "" && inv.For != op.Peer) || inv.role() != op.role() ||
			!sameScope(inv.Things, op.Things) || (inv.Once && st.used[inv.ID]) {
			return false
		}
		st.used[inv.ID] = true
	}
	m := Member{Peer: op.Peer, Role: op.role(), Things: slices.Clone(op.Things), Since: op.Created, AddedBy: op.Author}
	if exists {
		m.Since, m.AddedBy = old.Since, old.AddedBy
	}
	st.Members[op.Peer] = m
	return true
}

func sameScope(a, b []string) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	return sameSet(a, b)
}
