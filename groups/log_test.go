package groups

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestBasicLifecycle(t *testing.T) {
	alice, bob, carol := newActor(t, "alice"), newActor(t, "bob"), newActor(t, "carol")
	l := newGroup(t, alice, "diag")
	if !strings.HasPrefix(l.ID(), "bafkrei") || !isOpID(l.ID()) {
		t.Fatalf("group ID %q", l.ID())
	}
	mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: bob.id}, 1)
	mustAdd(t, l, alice, Draft{Kind: KindGrant, Peer: bob.id}, 2)
	mustAdd(t, l, bob, Draft{Kind: KindAdd, Peer: carol.id, Things: []string{"urn:x"}}, 3)
	mustAdd(t, l, alice, Draft{Kind: KindRename, Name: "diagnostics"}, 4)
	st := l.State()
	if st.Name != "diagnostics" || !st.IsAdmin(bob.id) || !st.IsMember(carol.id) || st.IsAdmin(carol.id) || st.Ops != 5 {
		t.Fatalf("state %+v", st)
	}
	if !st.Allowed(carol.id, "urn:x") || st.Allowed(carol.id, "urn:y") || !st.Allowed(bob.id, "urn:y") {
		t.Fatal("Allowed")
	}
	c := clone(t, l)
	if !bytes.Equal(c.Marshal(), l.Marshal()) {
		t.Fatal("round trip changed the record")
	}
	mustAdd(t, l, carol, Draft{Kind: KindLeave}, 5)
	if l.State().IsMember(carol.id) {
		t.Fatal("carol left but is a member")
	}
	if _, err := l.Add(sign(t, l, carol, Draft{Kind: KindLeave}, 6)); !errors.Is(err, ErrNotAuthorized) {
		t.Fatalf("leave by a non-member: %v", err)
	}
}
