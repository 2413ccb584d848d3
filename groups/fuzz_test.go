package groups

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// seedLogs returns the record forms of a few generated logs.
func seedLogs(f *testing.F) [][]byte {
	alice, bob, carol := newActor(f, "alice"), newActor(f, "bob"), newActor(f, "carol")
	l := newGroup(f, alice, "fuzz")
	out := [][]byte{l.Marshal()}
	mustAdd(f, l, alice, Draft{Kind: KindAdd, Peer: bob.id, Role: RoleAdmin, Things: []string{"urn:a"}}, 1)
	r := clone(f, l)
	mustAdd(f, l, alice, Draft{Kind: KindRemove, Peer: bob.id}, 2)
	mustAdd(f, r, bob, Draft{Kind: KindAdd, Peer: carol.id}, 2)
	if _, err := l.Merge(r); err != nil {
		f.Fatal(err)
	}
	tok, err := NewInvitation(alice.key, Invitation{Group: l.ID(), Uses: 1, Expires: t0.Add(time.Hour)}, t0)
	if err != nil {
		f.Fatal(err)
	}
	inv, err := ParseInvitation(tok, t0)
	if err != nil {
		f.Fatal(err)
	}
	mustAdd(f, l, alice, Draft{Kind: KindAdd, Peer: carol.id, Invitation: inv}, 3)
	mustAdd(f, l, alice, Draft{Kind: KindUninvite, InvitationID: inv.ID}, 3)
	mustAdd(f, l, alice, Draft{Kind: KindPolicy, Policy: &Policy{PostRole: RoleAdmin, MaxMembers: 9}}, 4)
	mustAdd(f, l, alice, Draft{Kind: KindRename, Name: "renamed"}, 5)
	mustAdd(f, l, carol, Draft{Kind: KindLeave}, 6)
	mustAdd(f, l, alice, Draft{Kind: KindDissolve}, 7)
	return append(out, l.Marshal())
}

func FuzzParseLog(f *testing.F) {
	for _, s := range seedLogs(f) {
		f.Add(s)
	}
	f.Add([]byte("[]"))
	f.Add([]byte(`[{"type":"lmos:GroupOp","kind":"genesis"}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var raws []json.RawMessage
		id := "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy"
		if json.Unmarshal(data, &raws) == nil && len(raws) > 0 {
			if g, err := ParseOp(raws[0]); err == nil {
				id = g.ID
			}
		}
		l, err := ParseLog(id, data)
		if err != nil {
			return
		}
		st := l.State()
		if st.Ops != len(raws) || st.ID != id {
			t.Fatalf("%d ops parsed from %d", st.Ops, len(raws))
		}
		again, err := ParseLog(id, l.Marshal())
		if err != nil {
			t.Fatalf("Marshal of a valid log does not parse: %v", err)
		}
		if !bytes.Equal(again.Marshal(), l.Marshal()) || !reflect.DeepEqual(again.State(), st) {
			t.Fatal("round trip changed the log")
		}
	})
}

func FuzzParseOp(f *testing.F) {
	for _, s := range seedLogs(f) {
		var raws []json.RawMessage
		if err := json.Unmarshal(s, &raws); err != nil {
			f.Fatal(err)
		}
		for _, r := range raws {
			f.Add([]byte(r))
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		op, err := ParseOp(raw)
		if err != nil {
			return
		}
		if op.ID != opID(op.Raw) || len(op.Raw) > MaxOpSize || op.Author == "" || op.Created.IsZero() {
			t.Fatalf("inconsistent op %+v", op)
		}
		again, err := ParseOp(op.Raw)
		if err != nil || again.ID != op.ID || !bytes.Equal(again.Raw, op.Raw) {
			t.Fatalf("canonical form does not parse to the same op: %v", err)
		}
	})
}

func FuzzParseInvitation(f *testing.F) {
	alice := newActor(f, "alice")
	l := newGroup(f, alice, "fuzz")
	for _, inv := range []Invitation{
		{Group: l.ID(), Expires: t0.Add(time.Hour)},
		{Group: l.ID(), Name: "n", Addrs: []string{"/ip4/127.0.0.1/tcp/1"}, For: alice.id, Role: "r", Things: []string{"x"}, Uses: 2, Expires: t0.Add(time.Hour)},
	} {
		tok, err := NewInvitation(alice.key, inv, t0)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(tok)
	}
	f.Fuzz(func(t *testing.T, token string) {
		inv, err := ParseInvitation(token, t0)
		if err != nil {
			return
		}
		again, err := ParseInvitation(inv.Token(), t0)
		if err != nil || again.ID != inv.ID {
			t.Fatalf("canonical token does not parse to the same invitation: %v", err)
		}
	})
}

func FuzzParseMessage(f *testing.F) {
	f.Add([]byte(`{"post":{"body":"hello","sent":"2026-11-21T10:00:00Z"}}`))
	f.Add([]byte(`{"op":{"type":"lmos:GroupOp"}}`))
	f.Add([]byte(`{"thing":{"id":"urn:x"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseMessage(data)
		if err != nil {
			return
		}
		n := 0
		for _, set := range []bool{m.Op != nil, m.Post != nil, m.Thing != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d members set", n)
		}
	})
}
