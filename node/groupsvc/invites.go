package groupsvc

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	ds "github.com/ipfs/go-datastore"
	"github.com/ipfs/go-datastore/query"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/groups"
)

// The invitations this node issued are kept (their signed part, never the
// secret) under /groups/<id>/invites/<invitation ID>, so that Invitations
// lists them before anyone used them: an unused invitation is nowhere in
// the group's log.

func inviteKey(group, inv string) ds.Key {
	return ds.NewKey(DatastorePrefix + "/" + group + "/invites/" + inv)
}

// scopeKey is where the Thing ID of a scope digest that this node put in
// an invitation is kept: the log holds only the digest (groups.ScopeDigest),
// so the node shows the IDs it knows.
func scopeKey(group, digest string) ds.Key {
	return ds.NewKey(DatastorePrefix + "/" + group + "/scopes/" + strings.TrimPrefix(digest, "sha256:"))
}

// keepScope remembers the Thing IDs of things (IDs, or digests which need
// nothing) by their digests in group.
func (s *Service) keepScope(ctx context.Context, group string, things []string) error {
	for _, t := range things {
		if groups.IsScopeDigest(t) {
			continue
		}
		if err := s.p.Datastore.Put(ctx, scopeKey(group, groups.ScopeDigest(group, t)), []byte(t)); err != nil {
			return fmt.Errorf("group %s: keep scope: %w", group, err)
		}
	}
	return nil
}

// scopeNames returns things (scope digests) with the Thing ID of each
// digest this node knows; nil stays nil.
func (s *Service) scopeNames(group string, things []string) []string {
	if things == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), DHTTimeout)
	defer cancel()
	out := make([]string, len(things))
	for i, t := range things {
		out[i] = t
		if id, err := s.p.Datastore.Get(ctx, scopeKey(group, t)); err == nil && groups.ScopeDigest(group, string(id)) == t {
			out[i] = string(id)
		}
	}
	return out
}

// Invitation states of InvitationInfo.Status.
const (
	// InvitationOutstanding: it may still admit a peer.
	InvitationOutstanding = "outstanding"
	// InvitationSpent: its uses are used up.
	InvitationSpent = "spent"
	// InvitationRevoked: an admin revoked it (an uninvite operation).
	InvitationRevoked = "revoked"
	// InvitationExpired: it expired.
	InvitationExpired = "expired"
)

// InvitationInfo describes an invitation to a group, as this node knows
// it: one it issued, or one an add operation of the log embeds.
type InvitationInfo struct {
	ID     string
	Issuer peer.ID
	// For is the only peer that may use it; "" = anyone.
	For  peer.ID
	Role string
	// Things scopes the joiner: Thing IDs this node knows (it issued an
	// invitation with them), else their digests (groups.ScopeDigest).
	Things []string
	// Uses is how many peers may join with it (0: no limit); Used how
	// many did (effective adds).
	Uses, Used int
	Issued     time.Time
	Expires    time.Time
	// Status is InvitationOutstanding, InvitationSpent, InvitationRevoked
	// or InvitationExpired (the first that applies of revoked, expired,
	// spent).
	Status string
	// Mine is whether this node issued it.
	Mine bool
}

// keepIssued persists the signed part of the invitation of token, and
// the Thing IDs of its scope things.
func (s *Service) keepIssued(group, token string, things []string) error {
	inv, err := groups.ParseInvitation(token, time.Time{})
	if err != nil {
		return fmt.Errorf("groupsvc: invitation made: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), DHTTimeout)
	defer cancel()
	if err := s.keepScope(ctx, group, things); err != nil {
		return err
	}
	if err := s.p.Datastore.Put(ctx, inviteKey(group, inv.ID), inv.Raw); err != nil {
		return fmt.Errorf("group %s: keep invitation: %w", group, err)
	}
	return nil
}

// issued returns the invitations this node issued to the group; it
// forgets those expired for more than a day.
func (s *Service) issued(ctx context.Context, group string) ([]*groups.Invitation, error) {
	prefix := DatastorePrefix + "/" + group + "/invites/"
	res, err := s.p.Datastore.Query(ctx, query.Query{Prefix: prefix})
	if err != nil {
		return nil, fmt.Errorf("group %s: invitations: %w", group, err)
	}
	entries, err := res.Rest()
	if err != nil {
		return nil, fmt.Errorf("group %s: invitations: %w", group, err)
	}
	var out []*groups.Invitation
	for _, e := range entries {
		if !strings.HasPrefix(e.Key, prefix) {
			continue
		}
		inv, err := groups.ParseSignedInvitation(e.Value)
		if err != nil || inv.Group != group {
			s.log.Warn("kept invitation does not check; dropped", "key", e.Key, "err", err)
			_ = s.p.Datastore.Delete(ctx, ds.NewKey(e.Key))
			continue
		}
		if s.now().Sub(inv.Expires) > 24*time.Hour {
			_ = s.p.Datastore.Delete(ctx, ds.NewKey(e.Key))
			continue
		}
		out = append(out, inv)
	}
	return out, nil
}

// Invitations lists the group's invitations this node knows: those it
// issued (kept until a day after they expire) and those the log's add
// operations embed, with their use count and status, outstanding ones
// first, then by expiry. With all false, only outstanding ones.
func (s *Service) Invitations(ctx context.Context, id string, all bool) ([]InvitationInfo, error) {
	g, err := s.lookup(id)
	if err != nil {
		return nil, err
	}
	mine, err := s.issued(ctx, g.id)
	if err != nil {
		return nil, err
	}
	st := g.state()
	now := s.now()
	seen := map[string]bool{}
	out := []InvitationInfo{}
	for _, inv := range append(mine, g.log.Invitations()...) {
		if seen[inv.ID] {
			continue
		}
		seen[inv.ID] = true
		in := InvitationInfo{
			ID: inv.ID, Issuer: inv.Issuer, For: inv.For, Role: inv.Role, Things: s.scopeNames(g.id, inv.Things),
			Uses: inv.Uses, Used: st.InvitationUses(inv.ID), Issued: inv.Issued, Expires: inv.Expires,
			Status: InvitationOutstanding, Mine: inv.Issuer == s.self,
		}
		if in.Role == "" {
			in.Role = groups.RoleMember
		}
		switch {
		case st.InvitationRevoked(inv.ID):
			in.Status = InvitationRevoked
		case now.After(inv.Expires):
			in.Status = InvitationExpired
		case inv.Uses > 0 && in.Used >= inv.Uses:
			in.Status = InvitationSpent
		}
		if all || in.Status == InvitationOutstanding {
			out = append(out, in)
		}
	}
	slices.SortFunc(out, func(a, b InvitationInfo) int {
		if (a.Status == InvitationOutstanding) != (b.Status == InvitationOutstanding) {
			if a.Status == InvitationOutstanding {
				return -1
			}
			return 1
		}
		if c := a.Expires.Compare(b.Expires); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// RevokeInvitation revokes the invitation inv (its ID) with an uninvite
// operation, which every node enforces: no add that uses it and that the
// revocation does not follow has effect. This node must be an admin; any
// admin may revoke any invitation to the group, even one it never saw.
// Revoking a revoked invitation changes nothing.
func (s *Service) RevokeInvitation(ctx context.Context, id, inv string) (Info, error) {
	if !groups.IsID(inv) {
		return Info{}, fmt.Errorf("%w: invitation ID %q: want a bafkrei… ID", ErrBadRequest, inv)
	}
	return s.act(ctx, id, func(st groups.State) (groups.Draft, error) {
		if err := s.mayAdmin(st); err != nil {
			return groups.Draft{}, err
		}
		if st.InvitationRevoked(inv) {
			return groups.Draft{}, nil
		}
		return groups.Draft{Kind: groups.KindUninvite, InvitationID: inv}, nil
	})
}
