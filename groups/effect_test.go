package groups

import (
	"errors"
	"testing"
	"time"
)

// addAll adds ops to l, failing on an error.
func addAll(t *testing.T, l *Log, ops ...*Op) {
	t.Helper()
	for _, op := range ops {
		if _, err := l.Add(op); err != nil {
			t.Fatalf("add %s: %v", op.Kind, err)
		}
	}
}

func TestConcurrentMutualRemoval(t *testing.T) {
	alice, bob := newActor(t, "alice"), newActor(t, "bob")
	l := newGroup(t, alice, "g")
	mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: bob.id, Role: RoleAdmin}, 1)
	ra, rb := clone(t, l), clone(t, l)
	x := mustAdd(t, ra, alice, Draft{Kind: KindRemove, Peer: bob.id}, 2)
	y := mustAdd(t, rb, bob, Draft{Kind: KindRemove, Peer: alice.id}, 2)
	if ra.State().IsMember(bob.id) || rb.State().IsMember(alice.id) {
		t.Fatal("each removal alone should work")
	}
	addAll(t, l, x, y)
	st := l.State()
	if !st.IsAdmin(alice.id) || !st.IsAdmin(bob.id) || l.Effective(x.ID) || l.Effective(y.ID) {
		t.Fatalf("concurrent mutual removal: both must stay admins, got %v", st.Admins())
	}
}

func TestRemovedAdminConcurrentActs(t *testing.T) {
	alice, bob, carol, dave := newActor(t, "alice"), newActor(t, "bob"), newActor(t, "carol"), newActor(t, "dave")
	l := newGroup(t, alice, "g")
	mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: bob.id, Role: RoleAdmin}, 1)
	mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: dave.id}, 2)
	ra, rb := clone(t, l), clone(t, l)
	rm := mustAdd(t, ra, alice, Draft{Kind: KindRemove, Peer: bob.id}, 10)
	// bob, not yet knowing, adds carol, renames and removes dave.
	a1 := mustAdd(t, rb, bob, Draft{Kind: KindAdd, Peer: carol.id}, 11)
	a2 := mustAdd(t, rb, bob, Draft{Kind: KindRename, Name: "bob's"}, 12)
	a3 := mustAdd(t, rb, bob, Draft{Kind: KindRemove, Peer: dave.id}, 13)
	addAll(t, l, a1, a2, rm, a3)
	st := l.State()
	if st.IsMember(bob.id) || !l.Effective(rm.ID) {
		t.Fatal("bob must be removed")
	}
	for _, op := range []*Op{a1, a2, a3} {
		if l.Effective(op.ID) {
			t.Errorf("bob's concurrent %s had effect", op.Kind)
		}
	}
	if st.IsMember(carol.id) || !st.IsMember(dave.id) || st.Name != "g" {
		t.Fatalf("state %+v", st)
	}
	// An act bob made before the removal, which the removal saw, stands.
	l2 := newGroup(t, alice, "h")
	mustAdd(t, l2, alice, Draft{Kind: KindAdd, Peer: bob.id, Role: RoleAdmin}, 1)
	before := mustAdd(t, l2, bob, Draft{Kind: KindAdd, Peer: carol.id}, 2)
	mustAdd(t, l2, alice, Draft{Kind: KindRemove, Peer: bob.id}, 3)
	if !l2.Effective(before.ID) || !l2.State().IsMember(carol.id) {
		t.Fatal("an act that precedes the removal lost its effect")
	}
}

func TestLastAdmin(t *testing.T) {
	alice, bob := newActor(t, "alice"), newActor(t, "bob")
	l := newGroup(t, alice, "g")
	mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: bob.id}, 1)
	for i, d := range []Draft{
		{Kind: KindLeave},
		{Kind: KindRevoke, Peer: alice.id},
		{Kind: KindRemove, Peer: alice.id},
		{Kind: KindAdd, Peer: alice.id, Role: RoleMember}, // demotion by add
	} {
		op := mustAdd(t, l, alice, d, 2+i)
		if l.Effective(op.ID) {
			t.Errorf("%s of the last admin had effect", d.Kind)
		}
		if !l.State().IsAdmin(alice.id) {
			t.Fatalf("%s left the group without an admin", d.Kind)
		}
	}
	// With a second admin, the first may leave.
	mustAdd(t, l, alice, Draft{Kind: KindGrant, Peer: bob.id}, 10)
	op := mustAdd(t, l, alice, Draft{Kind: KindLeave}, 11)
	if !l.Effective(op.ID) || l.State().IsMember(alice.id) {
		t.Fatal("leave with another admin present had no effect")
	}
}

func TestDissolve(t *testing.T) {
	alice, bob, carol := newActor(t, "alice"), newActor(t, "bob"), newActor(t, "carol")
	l := newGroup(t, alice, "g")
	mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: bob.id, Role: RoleAdmin}, 1)
	rb := clone(t, l)
	concurrentAdd := mustAdd(t, rb, bob, Draft{Kind: KindAdd, Peer: carol.id}, 3)
	d := mustAdd(t, l, alice, Draft{Kind: KindDissolve}, 2)
	addAll(t, l, concurrentAdd)
	st := l.State()
	if !st.Dissolved || !l.Effective(d.ID) || l.Effective(concurrentAdd.ID) {
		t.Fatal("dissolve must void the concurrent add")
	}
	if st.IsMember(alice.id) || st.IsAdmin(alice.id) || st.IsMember(carol.id) || len(st.Admins()) != 0 || st.CanPost(alice.id) {
		t.Fatal("nobody is a member of a dissolved group")
	}
	if _, err := l.Add(sign(t, l, alice, Draft{Kind: KindRename, Name: "again"}, 4)); !errors.Is(err, ErrNotAuthorized) {
		t.Fatalf("op after dissolve: %v, want ErrNotAuthorized", err)
	}
}

func TestMaxMembersAndPostRole(t *testing.T) {
	alice, bob, carol := newActor(t, "alice"), newActor(t, "bob"), newActor(t, "carol")
	g, err := Genesis(alice.key, "g", &Policy{MaxMembers: 2, PostRole: RoleAdmin}, t0)
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLog(g)
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: bob.id}, 1)
	over := mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: carol.id}, 2)
	st := l.State()
	if l.Effective(over.ID) || st.IsMember(carol.id) || len(st.Members) != 2 {
		t.Fatal("add beyond maxMembers had effect")
	}
	if st.CanPost(bob.id) || !st.CanPost(alice.id) {
		t.Fatal("postRole admin: only admins post")
	}
	// Updating an existing member is not an add beyond the cap.
	upd := mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: bob.id, Role: "reviewer"}, 3)
	if !l.Effective(upd.ID) || l.State().Members[bob.id].Role != "reviewer" {
		t.Fatal("role update of a member at the cap")
	}
	mustAdd(t, l, alice, Draft{Kind: KindPolicy, Policy: &Policy{}}, 4)
	if !l.State().CanPost(bob.id) {
		t.Fatal("default policy: members post")
	}
}

func TestInvitationEffects(t *testing.T) {
	alice, bob, carol, dave := newActor(t, "alice"), newActor(t, "bob"), newActor(t, "carol"), newActor(t, "dave")
	l := newGroup(t, alice, "g")
	mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: bob.id, Role: RoleAdmin}, 1)
	invite := func(by actor, inv Invitation) (string, *Invitation) {
		t.Helper()
		inv.Group = l.ID()
		if inv.Expires.IsZero() {
			inv.Expires = t0.Add(24 * time.Hour)
		}
		tok, err := NewInvitation(by.key, inv, t0)
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := ParseInvitation(tok, t0)
		if err != nil {
			t.Fatal(err)
		}
		return tok, parsed
	}
	now := t0.Add(time.Hour)

	// for: carol only.
	tok, inv := invite(bob, Invitation{For: carol.id})
	if err := l.CheckJoin(inv, dave.id, now); !errors.Is(err, ErrNotAuthorized) {
		t.Errorf("CheckJoin wrong peer: %v", err)
	}
	op := mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: dave.id, Invitation: tok}, 2)
	if l.Effective(op.ID) || l.State().IsMember(dave.id) {
		t.Error("add of the wrong peer had effect")
	}
	if err := l.CheckJoin(inv, carol.id, now); err != nil {
		t.Errorf("CheckJoin right peer: %v", err)
	}
	// Role and scope must match the invitation.
	op = mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: carol.id, Role: RoleAdmin, Invitation: tok}, 3)
	if l.Effective(op.ID) {
		t.Error("add with another role than the invitation's had effect")
	}

	// Expired at the add's created time.
	tok, inv = invite(bob, Invitation{Expires: t0.Add(10 * time.Second)})
	if err := l.CheckJoin(inv, dave.id, t0.Add(11*time.Second)); !errors.Is(err, ErrExpired) {
		t.Errorf("CheckJoin expired: %v", err)
	}
	op = mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: dave.id, Invitation: tok}, 11)
	if l.Effective(op.ID) {
		t.Error("add after the invitation's expiry had effect")
	}

	// Single use.
	tok, inv = invite(bob, Invitation{Once: true, Things: []string{"urn:a"}})
	op = mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: dave.id, Things: []string{"urn:a"}, Invitation: tok}, 20)
	if !l.Effective(op.ID) || !l.State().Allowed(dave.id, "urn:a") || l.State().Allowed(dave.id, "urn:b") {
		t.Fatal("first use of a single-use invitation had no effect")
	}
	if err := l.CheckJoin(inv, carol.id, now); !errors.Is(err, ErrSpent) {
		t.Errorf("CheckJoin spent: %v", err)
	}
	op = mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: carol.id, Things: []string{"urn:a"}, Invitation: tok}, 21)
	if l.Effective(op.ID) || l.State().IsMember(carol.id) {
		t.Error("second use of a single-use invitation had effect")
	}

	// Issuer no longer admin.
	tok, inv = invite(bob, Invitation{})
	mustAdd(t, l, alice, Draft{Kind: KindRevoke, Peer: bob.id}, 30)
	if err := l.CheckJoin(inv, carol.id, now); !errors.Is(err, ErrNotAuthorized) {
		t.Errorf("CheckJoin issuer not admin: %v", err)
	}
	op = mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: carol.id, Invitation: tok}, 31)
	if l.Effective(op.ID) {
		t.Error("add with an invitation of a former admin had effect")
	}

	// Another group's invitation; a dissolved group; a full group.
	other := newGroup(t, alice, "other")
	if err := other.CheckJoin(inv, carol.id, now); !errors.Is(err, ErrWrongGroup) {
		t.Errorf("CheckJoin other group: %v", err)
	}
	tok, inv = invite(alice, Invitation{})
	mustAdd(t, l, alice, Draft{Kind: KindPolicy, Policy: &Policy{MaxMembers: 3}}, 40)
	if err := l.CheckJoin(inv, carol.id, now); !errors.Is(err, ErrGroupFull) {
		t.Errorf("CheckJoin full group: %v", err)
	}
	mustAdd(t, l, alice, Draft{Kind: KindPolicy, Policy: &Policy{}}, 41)
	if err := l.CheckJoin(inv, carol.id, now); err != nil {
		t.Errorf("CheckJoin good: %v", err)
	}
	op = mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: carol.id, Invitation: tok}, 42)
	if !l.Effective(op.ID) || l.State().Members[carol.id].AddedBy != alice.id {
		t.Error("add with a good invitation had no effect")
	}
	mustAdd(t, l, alice, Draft{Kind: KindDissolve}, 50)
	if err := l.CheckJoin(inv, carol.id, now); !errors.Is(err, ErrDissolved) {
		t.Errorf("CheckJoin dissolved: %v", err)
	}
}
