package groups

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// issue makes an invitation to l by a, at t0+sec, valid for an hour unless
// inv says otherwise, and returns it parsed from its token.
func issue(t *testing.T, l *Log, a actor, inv Invitation, sec int) *Invitation {
	t.Helper()
	at := t0.Add(time.Duration(sec) * time.Second)
	inv.Group = l.ID()
	if inv.Expires.IsZero() {
		inv.Expires = at.Add(time.Hour)
	}
	tok, err := NewInvitation(a.key, inv, at)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := ParseInvitation(tok, at)
	if err != nil {
		t.Fatal(err)
	}
	return parsed
}

// TestLogHoldsNoSecret: what an add embeds, and so the log in the DHT,
// holds the hash of the token's secret, never the secret; the invitation
// read back from the log cannot pass CheckJoin, and neither can a token
// made from it with another secret.
func TestLogHoldsNoSecret(t *testing.T) {
	alice, bob, eve := newActor(t, "alice"), newActor(t, "bob"), newActor(t, "eve")
	l := newGroup(t, alice, "g")
	inv := issue(t, l, alice, Invitation{Uses: 5, Name: "g", Addrs: []string{"/ip4/127.0.0.1/tcp/4001"}}, 1)
	var tw tokenWire
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(inv.Token(), InvitePrefix))
	if err != nil || json.Unmarshal(raw, &tw) != nil || tw.Secret == "" {
		t.Fatalf("token: %v %+v", err, tw)
	}
	mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: bob.id, Invitation: inv}, 2)
	record := l.Marshal()
	for _, leak := range []string{tw.Secret, "127.0.0.1", InvitePrefix} {
		if bytes.Contains(record, []byte(leak)) {
			t.Errorf("the log record contains %q", leak)
		}
	}
	scraped := clone(t, l).Invitations()
	if len(scraped) != 1 || scraped[0].ID != inv.ID || scraped[0].HasSecret() || scraped[0].Token() != "" {
		t.Fatalf("invitations from the log: %+v", scraped)
	}
	if err := l.CheckJoin(scraped[0], eve.id, t0.Add(3*time.Second)); !errors.Is(err, ErrNotAuthorized) {
		t.Errorf("CheckJoin with the invitation from the log: %v, want ErrNotAuthorized", err)
	}
	// A token built from the scraped invitation with a secret of eve's.
	forged, err := json.Marshal(tokenWire{Invitation: scraped[0].Raw, Secret: base64.RawURLEncoding.EncodeToString(make([]byte, secretSize))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseInvitation(InvitePrefix+base64.RawURLEncoding.EncodeToString(forged), t0); !errors.Is(err, ErrBadInvitation) {
		t.Errorf("token with a made-up secret: %v, want ErrBadInvitation", err)
	}
	if err := l.CheckJoin(inv, eve.id, t0.Add(3*time.Second)); err != nil {
		t.Errorf("CheckJoin with the token's secret: %v", err)
	}
}

func TestInvitationUses(t *testing.T) {
	alice, bob, carol, dave := newActor(t, "alice"), newActor(t, "bob"), newActor(t, "carol"), newActor(t, "dave")
	l := newGroup(t, alice, "g")
	once := issue(t, l, alice, Invitation{Uses: 1}, 1)
	first := mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: bob.id, Invitation: once}, 2)
	second := mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: carol.id, Invitation: once}, 3)
	if !l.Effective(first.ID) || l.Effective(second.ID) || l.State().IsMember(carol.id) {
		t.Error("a single-use invitation admitted two peers")
	}
	if err := l.CheckJoin(once, carol.id, t0.Add(4*time.Second)); !errors.Is(err, ErrSpent) {
		t.Errorf("CheckJoin spent: %v", err)
	}
	// Two uses: the third add has no effect; no limit: all have.
	twice := issue(t, l, alice, Invitation{Uses: 2}, 5)
	many := issue(t, l, alice, Invitation{}, 5)
	var effs []bool
	for i, p := range []actor{carol, dave, newActor(t, "erin")} {
		effs = append(effs, l.Effective(mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: p.id, Invitation: twice}, 6+i).ID))
		if !l.Effective(mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: p.id, Invitation: many}, 6+i).ID) {
			t.Errorf("use %d of an invitation without a use limit had no effect", i+1)
		}
	}
	if !effs[0] || !effs[1] || effs[2] {
		t.Errorf("uses of a two-use invitation had effect %v, want [true true false]", effs)
	}
	if st := clone(t, l).State(); st.InvitationUses(twice.ID) != 2 || st.InvitationUses(many.ID) != 3 {
		t.Errorf("uses from the record: %d, %d", st.InvitationUses(twice.ID), st.InvitationUses(many.ID))
	}
}

func TestInvitationRevoked(t *testing.T) {
	alice, bob, carol, dave := newActor(t, "alice"), newActor(t, "bob"), newActor(t, "carol"), newActor(t, "dave")
	l := newGroup(t, alice, "g")
	mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: bob.id, Role: RoleAdmin}, 1)
	inv := issue(t, l, alice, Invitation{}, 2)
	used := mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: carol.id, Invitation: inv}, 3)
	// A member cannot revoke; bob (an admin) can, whoever issued it.
	mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: dave.id}, 4)
	if _, err := l.Add(sign(t, l, dave, Draft{Kind: KindUninvite, InvitationID: inv.ID}, 5)); !errors.Is(err, ErrNotAuthorized) {
		t.Errorf("uninvite by a member: %v, want ErrNotAuthorized", err)
	}
	// Concurrent with the revocation: an add on the log bob had not seen.
	r := clone(t, l)
	erin := newActor(t, "erin")
	concurrent := mustAdd(t, r, alice, Draft{Kind: KindAdd, Peer: erin.id, Invitation: inv}, 6)
	if !r.Effective(concurrent.ID) {
		t.Fatal("add before the revocation arrived had no effect")
	}
	un := mustAdd(t, l, bob, Draft{Kind: KindUninvite, InvitationID: inv.ID}, 6)
	if _, err := l.Merge(r); err != nil {
		t.Fatal(err)
	}
	if !l.Effective(un.ID) || l.Effective(concurrent.ID) || l.State().IsMember(erin.id) {
		t.Error("an add concurrent with the uninvite of its invitation had effect")
	}
	if !l.Effective(used.ID) || !l.State().IsMember(carol.id) {
		t.Error("the uninvite voided an add its author had seen")
	}
	if !l.State().InvitationRevoked(inv.ID) {
		t.Error("State does not show the revocation")
	}
	if err := l.CheckJoin(inv, erin.id, t0.Add(7*time.Second)); !errors.Is(err, ErrRevoked) {
		t.Errorf("CheckJoin revoked: %v", err)
	}
	after := mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: erin.id, Invitation: inv}, 8)
	if l.Effective(after.ID) {
		t.Error("an add after the uninvite had effect")
	}
	// Every node folds the same, from the record.
	c := clone(t, l)
	if c.Effective(concurrent.ID) || c.Effective(after.ID) || !c.Effective(used.ID) {
		t.Error("the record folds to other effects")
	}
	// An uninvite names an invitation ID.
	if _, err := l.Sign(alice.key, Draft{Kind: KindUninvite, InvitationID: "nope"}, t0); !errors.Is(err, ErrBadOp) {
		t.Errorf("uninvite of a malformed ID: %v, want ErrBadOp", err)
	}
}

func TestInvitationBeforeRemoval(t *testing.T) {
	alice, bob := newActor(t, "alice"), newActor(t, "bob")
	l := newGroup(t, alice, "g")
	old := issue(t, l, alice, Invitation{}, 1)
	mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: bob.id, Invitation: old}, 2)
	mustAdd(t, l, alice, Draft{Kind: KindRemove, Peer: bob.id}, 10)
	if at, ok := l.State().RemovedAt(bob.id); !ok || !at.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("RemovedAt: %v %v", at, ok)
	}
	if err := l.CheckJoin(old, bob.id, t0.Add(11*time.Second)); !errors.Is(err, ErrNotAuthorized) {
		t.Errorf("CheckJoin with an invitation from before the removal: %v", err)
	}
	again := mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: bob.id, Invitation: old}, 11)
	if l.Effective(again.ID) || l.State().IsMember(bob.id) {
		t.Error("a removed member rejoined with an invitation issued before its removal")
	}
	// Issued in the same second as the removal: refused too.
	same := issue(t, l, alice, Invitation{}, 10)
	if l.Effective(mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: bob.id, Invitation: same}, 12).ID) {
		t.Error("an invitation issued in the second of the removal admitted the removed member")
	}
	// Others may still use the old one; a fresh one admits bob.
	carol := newActor(t, "carol")
	if !l.Effective(mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: carol.id, Invitation: old}, 13).ID) {
		t.Error("the old invitation no longer admits others")
	}
	fresh := issue(t, l, alice, Invitation{For: bob.id}, 14)
	if err := l.CheckJoin(fresh, bob.id, t0.Add(15*time.Second)); err != nil {
		t.Errorf("CheckJoin fresh: %v", err)
	}
	if !l.Effective(mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: bob.id, Invitation: fresh}, 15).ID) {
		t.Error("a fresh invitation did not admit the removed member")
	}
	if c := clone(t, l); !c.State().IsMember(bob.id) || c.Effective(again.ID) {
		t.Error("the record folds to another state")
	}
}

func TestInvitationExpiredAndWrongPeer(t *testing.T) {
	alice, bob, eve := newActor(t, "alice"), newActor(t, "bob"), newActor(t, "eve")
	l := newGroup(t, alice, "g")
	short := issue(t, l, alice, Invitation{Expires: t0.Add(10 * time.Second)}, 1)
	if err := l.CheckJoin(short, bob.id, t0.Add(11*time.Second)); !errors.Is(err, ErrExpired) {
		t.Errorf("CheckJoin expired: %v", err)
	}
	if l.Effective(mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: bob.id, Invitation: short}, 11).ID) {
		t.Error("an add after the expiry had effect")
	}
	forBob := issue(t, l, alice, Invitation{For: bob.id}, 12)
	if err := l.CheckJoin(forBob, eve.id, t0.Add(13*time.Second)); !errors.Is(err, ErrNotAuthorized) {
		t.Errorf("CheckJoin wrong peer: %v", err)
	}
	if l.Effective(mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: eve.id, Invitation: forBob}, 13).ID) {
		t.Error("an add of another peer than the invitation's had effect")
	}
	if !l.Effective(mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: bob.id, Invitation: forBob}, 14).ID) {
		t.Error("the invitation did not admit its peer")
	}
}

// TestScopeDigests: a scope is recorded as digests of the Thing IDs, salted
// with the group ID; the log names no scoped Thing, and a member's scope
// is enforced all the same.
func TestScopeDigests(t *testing.T) {
	alice, bob, carol := newActor(t, "alice"), newActor(t, "bob"), newActor(t, "carol")
	l := newGroup(t, alice, "g")
	inv := issue(t, l, alice, Invitation{Things: []string{"urn:acme:secret-pump"}}, 1)
	if bytes.Contains(inv.Raw, []byte("secret-pump")) || inv.Things[0] != ScopeDigest(l.ID(), "urn:acme:secret-pump") {
		t.Fatalf("the invitation names the Thing: %s", inv.Raw)
	}
	// The add may name the IDs or the digests: Sign records digests, and
	// they match the invitation's.
	add := mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: bob.id, Things: []string{"urn:acme:secret-pump"}, Invitation: inv}, 2)
	mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: carol.id, Things: []string{ScopeDigest(l.ID(), "urn:acme:other")}}, 3)
	if !l.Effective(add.ID) {
		t.Fatal("an add with the invitation's scope had no effect")
	}
	if bytes.Contains(l.Marshal(), []byte("urn:acme")) {
		t.Error("the log record names a scoped Thing")
	}
	st := clone(t, l).State()
	if !st.Allowed(bob.id, "urn:acme:secret-pump") || st.Allowed(bob.id, "urn:acme:other") ||
		!st.Allowed(carol.id, "urn:acme:other") || st.Allowed(carol.id, "urn:acme:secret-pump") || !st.Allowed(alice.id, "urn:any") {
		t.Error("Allowed does not follow the scopes")
	}
	other := newGroup(t, alice, "h")
	if ScopeDigest(other.ID(), "urn:acme:secret-pump") == ScopeDigest(l.ID(), "urn:acme:secret-pump") {
		t.Error("one Thing has the same digest in two groups")
	}
	if IsScopeDigest("urn:x") || IsScopeDigest("sha256:short") || !IsScopeDigest(ScopeDigest("g", "t")) {
		t.Error("IsScopeDigest")
	}
}
