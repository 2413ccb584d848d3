package groupsvc

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/groups"
)

// DefaultInviteTTL is how long an invitation is valid when InviteOptions
// leave TTL zero.
const DefaultInviteTTL = time.Hour

// UnlimitedUses, as InviteOptions.Uses, lets any number of peers join with
// one invitation until it expires.
const UnlimitedUses = -1

// Create founds a group named name with policy (nil: the defaults), with
// this node as its admin.
func (s *Service) Create(ctx context.Context, name string, policy *groups.Policy) (Info, error) {
	if strings.TrimSpace(name) == "" {
		return Info{}, fmt.Errorf("%w: name: must not be empty", ErrBadRequest)
	}
	op, err := groups.Genesis(s.p.Key, name, policy, s.now())
	if err != nil {
		return Info{}, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	l, err := groups.NewLog(op)
	if err != nil {
		return Info{}, fmt.Errorf("groupsvc: create: %w", err)
	}
	if err := s.alive(); err != nil {
		return Info{}, err
	}
	g, _, err := s.adopt(l)
	if err != nil {
		return Info{}, err
	}
	s.reconcile(g)
	s.puts.add(g.id)
	s.log.Info("created group", "group", g.id, "name", name)
	return s.info(g, false), nil
}

// InviteOptions shape an invitation.
type InviteOptions struct {
	// For binds the invitation to one peer; empty: anyone holding it.
	For peer.ID
	// TTL is how long the invitation is valid; 0 means DefaultInviteTTL.
	TTL time.Duration
	// Uses is how many peers may join with it: 0 means 1 (single use),
	// UnlimitedUses any number until it expires.
	Uses int
	// Role is the joiner's role; empty means member.
	Role string
	// Things scopes the joiner to these Thing IDs; empty: every Thing of
	// the group. The invitation and the log record their digests
	// (groups.ScopeDigest); this node keeps the IDs to show them.
	Things []string
}

// Invite makes an invitation token to the group, signed by this node,
// which must be an admin. It returns the token and its expiry.
func (s *Service) Invite(id string, o InviteOptions) (string, time.Time, error) {
	g, err := s.lookup(id)
	if err != nil {
		return "", time.Time{}, err
	}
	st := g.state()
	if err := s.mayAdmin(st); err != nil {
		return "", time.Time{}, err
	}
	if o.TTL < 0 {
		return "", time.Time{}, fmt.Errorf("%w: ttl: %s is negative", ErrBadRequest, o.TTL)
	}
	if o.TTL == 0 {
		o.TTL = DefaultInviteTTL
	}
	switch {
	case o.Uses == 0:
		o.Uses = 1
	case o.Uses == UnlimitedUses:
		o.Uses = 0
	case o.Uses < 0 || o.Uses > groups.MaxLogOps:
		return "", time.Time{}, fmt.Errorf("%w: uses: %d: want 1 to %d, or unlimited", ErrBadRequest, o.Uses, groups.MaxLogOps)
	}
	if o.For != "" {
		if err := o.For.Validate(); err != nil {
			return "", time.Time{}, fmt.Errorf("%w: for: %w", ErrBadRequest, err)
		}
	}
	// Issued after every removal this node knows of, even one in the same
	// second or signed by a node whose clock is ahead (as an operation is
	// signed no earlier than its parents): the fold refuses an add whose
	// invitation was issued at or before its peer's removal.
	now := s.now()
	if last := st.LastRemoval(); !last.IsZero() && !now.Truncate(time.Second).After(last) {
		now = last.Add(time.Second)
	}
	addrs := make([]string, 0, len(s.p.Host.Addrs()))
	for _, a := range s.p.Host.Addrs() {
		addrs = append(addrs, a.String()+"/p2p/"+s.self.String())
	}
	inv := groups.Invitation{
		Group:   g.id,
		Name:    st.Name,
		Addrs:   addrs,
		For:     o.For,
		Role:    o.Role,
		Things:  o.Things,
		Uses:    o.Uses,
		Expires: now.Add(o.TTL).UTC().Truncate(time.Second),
	}
	token, err := groups.NewInvitation(s.p.Key, inv, now)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	if err := s.keepIssued(g.id, token, o.Things); err != nil {
		return "", time.Time{}, err
	}
	return token, inv.Expires, nil
}

// Remove removes p from the group; this node must be an admin.
func (s *Service) Remove(ctx context.Context, id string, p peer.ID) (Info, error) {
	return s.act(ctx, id, func(st groups.State) (groups.Draft, error) {
		if err := s.mayAdmin(st); err != nil {
			return groups.Draft{}, err
		}
		if !st.IsMember(p) {
			return groups.Draft{}, fmt.Errorf("peer %s: %w", p, ErrNotMember)
		}
		if st.IsAdmin(p) && len(st.Admins()) == 1 {
			return groups.Draft{}, fmt.Errorf("remove %s: %w", p, ErrLastAdmin)
		}
		return groups.Draft{Kind: groups.KindRemove, Peer: p}, nil
	})
}

// SetAdmin grants p the admin role (grant) or makes it a plain member
// (revoke); this node must be an admin. Granting to an admin or revoking
// from a plain member changes nothing.
func (s *Service) SetAdmin(ctx context.Context, id string, p peer.ID, grant bool) (Info, error) {
	return s.act(ctx, id, func(st groups.State) (groups.Draft, error) {
		if err := s.mayAdmin(st); err != nil {
			return groups.Draft{}, err
		}
		if !st.IsMember(p) {
			return groups.Draft{}, fmt.Errorf("peer %s: %w", p, ErrNotMember)
		}
		switch {
		case grant && st.IsAdmin(p), !grant && !st.IsAdmin(p):
			return groups.Draft{}, nil
		case grant:
			return groups.Draft{Kind: groups.KindGrant, Peer: p}, nil
		case len(st.Admins()) == 1:
			return groups.Draft{}, fmt.Errorf("revoke %s: %w", p, ErrLastAdmin)
		}
		return groups.Draft{Kind: groups.KindRevoke, Peer: p}, nil
	})
}

// Rename renames the group; this node must be an admin.
func (s *Service) Rename(ctx context.Context, id, name string) (Info, error) {
	if strings.TrimSpace(name) == "" {
		return Info{}, fmt.Errorf("%w: name: must not be empty", ErrBadRequest)
	}
	return s.act(ctx, id, func(st groups.State) (groups.Draft, error) {
		if err := s.mayAdmin(st); err != nil {
			return groups.Draft{}, err
		}
		if st.Name == name {
			return groups.Draft{}, nil
		}
		return groups.Draft{Kind: groups.KindRename, Name: name}, nil
	})
}

// SetPolicy replaces the group's policy; this node must be an admin.
func (s *Service) SetPolicy(ctx context.Context, id string, policy groups.Policy) (Info, error) {
	return s.act(ctx, id, func(st groups.State) (groups.Draft, error) {
		if err := s.mayAdmin(st); err != nil {
			return groups.Draft{}, err
		}
		return groups.Draft{Kind: groups.KindPolicy, Policy: &policy}, nil
	})
}

// Leave makes this node leave the group. The last admin cannot leave
// (ErrLastAdmin): it dissolves the group instead.
func (s *Service) Leave(ctx context.Context, id string) (Info, error) {
	return s.act(ctx, id, func(st groups.State) (groups.Draft, error) {
		switch {
		case st.Dissolved:
			return groups.Draft{}, fmt.Errorf("group %s: %w", id, ErrDissolved)
		case !st.IsMember(s.self):
			return groups.Draft{}, fmt.Errorf("group %s: this node: %w", id, ErrNotMember)
		case st.IsAdmin(s.self) && len(st.Admins()) == 1:
			return groups.Draft{}, fmt.Errorf("leave: %w", ErrLastAdmin)
		}
		return groups.Draft{Kind: groups.KindLeave}, nil
	})
}

// Dissolve ends the group; this node must be an admin.
func (s *Service) Dissolve(ctx context.Context, id string) (Info, error) {
	return s.act(ctx, id, func(st groups.State) (groups.Draft, error) {
		if err := s.mayAdmin(st); err != nil {
			return groups.Draft{}, err
		}
		return groups.Draft{Kind: groups.KindDissolve}, nil
	})
}

// mayAdmin checks that the node may act as an admin in st.
func (s *Service) mayAdmin(st groups.State) error {
	switch {
	case st.Dissolved:
		return fmt.Errorf("group %s: %w", st.ID, ErrDissolved)
	case !st.IsAdmin(s.self):
		return fmt.Errorf("group %s: %w", st.ID, ErrNotAdmin)
	}
	return nil
}

// act makes the operation that decide drafts from the group's current
// state (no operation for a zero Draft) and commits it.
func (s *Service) act(ctx context.Context, id string, decide func(groups.State) (groups.Draft, error)) (Info, error) {
	g, err := s.lookup(id)
	if err != nil {
		return Info{}, err
	}
	if err := s.alive(); err != nil {
		return Info{}, err
	}
	s.opMu.Lock()
	d, err := decide(g.state())
	if err != nil {
		s.opMu.Unlock()
		return Info{}, err
	}
	if d.Kind == "" {
		s.opMu.Unlock()
		return s.info(g, false), nil
	}
	_, err = s.commitLocked(ctx, g, d)
	s.opMu.Unlock()
	if err != nil {
		return Info{}, err
	}
	return s.info(g, false), nil
}

// commitLocked signs d on g's heads, adds it, publishes the operation on
// the topic, persists the log, reconciles, and queues the DHT put. The
// caller holds opMu.
//
// The operation leaves before the log's fsync, which would otherwise
// delay it by milliseconds, and commitLocked returns after both. A crash
// in between can leave the members holding an operation this node's log
// lacks after the restart. That is safe by the log's rules: operations
// are named by the hash of their signed bytes and ordered by their
// parents, not by a counter, so nothing the node signs next can collide
// with the lost one — its next operation is concurrent with it, which the
// fold orders like any two concurrent operations — and the node learns
// the lost one back from the members when it syncs with them (as it
// learns any operation it missed). A persist that fails after the
// publication is returned; the operation is then in effect on the network
// and in this node's memory, and the next persist writes it.
func (s *Service) commitLocked(ctx context.Context, g *group, d groups.Draft) (*groups.Op, error) {
	op, err := g.log.Sign(s.p.Key, d, s.now())
	if err != nil {
		return nil, fmt.Errorf("group %s: sign %s: %w", g.id, d.Kind, err)
	}
	if _, err := g.log.Add(op); err != nil {
		return nil, fmt.Errorf("group %s: %s: %w", g.id, d.Kind, err)
	}
	g.refresh()
	// Published before reconcile, which leaves the topic after the node's
	// own leave or dissolve.
	s.publishOp(ctx, g, op)
	perr := s.persist(g)
	s.reconcile(g)
	s.changed(g)
	s.puts.add(g.id)
	if perr != nil {
		return nil, perr
	}
	s.log.Info("group op", "group", g.id, "op", op.ID, "kind", op.Kind, "peer", op.Peer)
	return op, nil
}

// alive fails once Close started.
func (s *Service) alive() error {
	if s.ctx.Err() != nil {
		return ErrClosed
	}
	return nil
}

// Info describes a group as this node sees it (package groupapi serves
// it as the API's GroupInfo).
type Info struct {
	ID        string
	Name      string
	Founder   peer.ID
	Created   time.Time
	Dissolved bool
	// Policy is the group's policy, PostRole filled in.
	Policy  groups.Policy
	Members []MemberInfo // by peer ID
	Self    SelfInfo
	Heads   []string
	Ops     int
	// Log is every operation in fold order; only Show fills it.
	Log []OpInfo
}

// MemberInfo is one member of Info.
type MemberInfo struct {
	Peer  peer.ID
	Role  string
	Admin bool
	// Things scopes the member to these Things: their IDs where this
	// node knows them (it issued an invitation with them), else their
	// digests as the log holds them (groups.ScopeDigest); nil: every
	// Thing.
	Things []string
	Since  time.Time
}

// SelfInfo is this node's place in the group.
type SelfInfo struct {
	Member bool
	Admin  bool
}

// OpInfo is one operation of Info.Log.
type OpInfo struct {
	ID        string
	Kind      groups.Kind
	Author    peer.ID
	Created   time.Time
	Peer      peer.ID // the subject of add, remove, grant and revoke
	Effective bool
	// Op is the signed operation.
	Op json.RawMessage
}

// info builds g's Info.
func (s *Service) info(g *group, withLog bool) Info {
	st := g.state()
	in := Info{
		ID: st.ID, Name: st.Name, Founder: st.Founder, Created: st.Created,
		Dissolved: st.Dissolved, Policy: st.Policy,
		Members: make([]MemberInfo, 0, len(st.Members)),
		Self:    SelfInfo{Member: st.IsMember(s.self), Admin: st.IsAdmin(s.self)},
		Heads:   st.Heads, Ops: st.Ops,
	}
	if in.Policy.PostRole == "" {
		in.Policy.PostRole = groups.RoleMember
	}
	for _, m := range st.Members {
		in.Members = append(in.Members, MemberInfo{Peer: m.Peer, Role: m.Role, Admin: m.Role == groups.RoleAdmin, Things: s.scopeNames(st.ID, m.Things), Since: m.Since})
	}
	slices.SortFunc(in.Members, func(a, b MemberInfo) int { return strings.Compare(string(a.Peer), string(b.Peer)) })
	if withLog {
		for _, op := range g.log.Ops() {
			in.Log = append(in.Log, OpInfo{ID: op.ID, Kind: op.Kind, Author: op.Author, Created: op.Created, Peer: op.Peer, Effective: g.log.Effective(op.ID), Op: op.Raw})
		}
	}
	return in
}

// List returns every group the node knows (member, or left, removed or
// dissolved), by name then ID.
func (s *Service) List() []Info {
	gs := s.all()
	out := make([]Info, 0, len(gs))
	for _, g := range gs {
		out = append(out, s.info(g, false))
	}
	slices.SortFunc(out, func(a, b Info) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// Show returns the group's Info with its log.
func (s *Service) Show(id string) (Info, error) {
	g, err := s.lookup(id)
	if err != nil {
		return Info{}, err
	}
	return s.info(g, true), nil
}

// Resolve returns the ID of the group ref names: a group ID, or a name
// that exactly one of the node's groups has.
func (s *Service) Resolve(ref string) (string, error) {
	if s.get(ref) != nil {
		return ref, nil
	}
	var found []string
	for _, g := range s.all() {
		if g.state().Name == ref {
			found = append(found, g.id)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", fmt.Errorf("group %q: %w", ref, ErrUnknownGroup)
	}
	return "", fmt.Errorf("%w: group name %q is ambiguous: %s", ErrBadRequest, ref, strings.Join(found, ", "))
}
