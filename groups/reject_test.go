package groups

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestRejectUnauthorized(t *testing.T) {
	alice, bob, carol, mallory := newActor(t, "alice"), newActor(t, "bob"), newActor(t, "carol"), newActor(t, "mallory")
	l := newGroup(t, alice, "g")
	mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: bob.id}, 1)
	mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: carol.id, Role: RoleAdmin}, 2)
	mustAdd(t, l, alice, Draft{Kind: KindRemove, Peer: carol.id}, 3)

	tests := []struct {
		name string
		who  actor
		d    Draft
	}{
		{"member (not admin) adds", bob, Draft{Kind: KindAdd, Peer: mallory.id}},
		{"member grants itself", bob, Draft{Kind: KindGrant, Peer: bob.id}},
		{"member renames", bob, Draft{Kind: KindRename, Name: "mine"}},
		{"member dissolves", bob, Draft{Kind: KindDissolve}},
		{"removed admin adds, after its removal", carol, Draft{Kind: KindAdd, Peer: mallory.id}},
		{"removed admin removes the remover", carol, Draft{Kind: KindRemove, Peer: alice.id}},
		{"outsider adds itself", mallory, Draft{Kind: KindAdd, Peer: mallory.id, Role: RoleAdmin}},
		{"outsider sets policy", mallory, Draft{Kind: KindPolicy, Policy: &Policy{PostRole: RoleAdmin}}},
		{"outsider leaves", mallory, Draft{Kind: KindLeave}},
	}
	before, beforeState := l.Marshal(), l.State()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op := sign(t, l, tt.who, tt.d, 10)
			added, err := l.Add(op)
			if !errors.Is(err, ErrNotAuthorized) || added != nil {
				t.Fatalf("Add = %v, %v; want ErrNotAuthorized", added, err)
			}
			if l.Has(op.ID) {
				t.Fatal("rejected op is in the log")
			}
		})
	}
	if !bytes.Equal(l.Marshal(), before) || !reflect.DeepEqual(l.State(), beforeState) {
		t.Fatal("rejected ops changed the log")
	}
}

func TestRejectReplay(t *testing.T) {
	alice, bob := newActor(t, "alice"), newActor(t, "bob")
	l := newGroup(t, alice, "one")
	op := mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: bob.id}, 1)
	before := l.Marshal()
	added, err := l.Add(op)
	if err != nil || added != nil {
		t.Fatalf("duplicate: %v, %v; want nil, nil", added, err)
	}
	reparsed, err := ParseOp(op.Raw)
	if err != nil {
		t.Fatal(err)
	}
	if added, err := l.Add(reparsed); err != nil || added != nil {
		t.Fatalf("duplicate (reparsed): %v, %v", added, err)
	}
	if !bytes.Equal(before, l.Marshal()) {
		t.Fatal("duplicate changed the log")
	}
	other := newGroup(t, alice, "two")
	if _, err := other.Add(op); !errors.Is(err, ErrWrongGroup) {
		t.Fatalf("op of another group: %v, want ErrWrongGroup", err)
	}
	if _, err := other.Add(l.Ops()[0]); !errors.Is(err, ErrWrongGroup) {
		t.Fatalf("genesis of another group: %v, want ErrWrongGroup", err)
	}
}

func TestHeldUntilParentsArrive(t *testing.T) {
	alice, bob, carol := newActor(t, "alice"), newActor(t, "bob"), newActor(t, "carol")
	l := newGroup(t, alice, "g")
	replica := clone(t, l)
	o1 := mustAdd(t, replica, alice, Draft{Kind: KindAdd, Peer: bob.id, Role: RoleAdmin}, 1)
	o2 := mustAdd(t, replica, bob, Draft{Kind: KindAdd, Peer: carol.id}, 2)
	o3 := mustAdd(t, replica, carol, Draft{Kind: KindLeave}, 3)

	for _, op := range []*Op{o3, o2} {
		added, err := l.Add(op)
		if err != nil || added != nil {
			t.Fatalf("held op: %v, %v", added, err)
		}
	}
	if l.Pending() != 2 || l.Has(o2.ID) || l.Has(o3.ID) || l.State().Ops != 1 {
		t.Fatal("held ops were applied")
	}
	added, err := l.Add(o1)
	if err != nil {
		t.Fatal(err)
	}
	if got := opIDs(added); !reflect.DeepEqual(got, []string{o1.ID, o2.ID, o3.ID}) {
		t.Fatalf("added %v, want o1, o2, o3", got)
	}
	if l.Pending() != 0 || !bytes.Equal(l.Marshal(), replica.Marshal()) {
		t.Fatal("log differs from the replica")
	}
}

func TestPendingBounded(t *testing.T) {
	alice, bob := newActor(t, "alice"), newActor(t, "bob")
	l := newGroup(t, alice, "g")
	replica := clone(t, l)
	first := mustAdd(t, replica, alice, Draft{Kind: KindAdd, Peer: bob.id}, 1)
	// MaxPending+1 siblings, all children of first, which l lacks.
	var held []*Op
	for i := range MaxPending + 1 {
		op := sign(t, replica, alice, Draft{Kind: KindRename, Name: fmt.Sprint("n", i)}, 2+i)
		if added, err := l.Add(op); err != nil || added != nil {
			t.Fatalf("held op %d: %v, %v", i, added, err)
		}
		held = append(held, op)
		if want := min(i+1, MaxPending); l.Pending() != want {
			t.Fatalf("pending %d, want %d", l.Pending(), want)
		}
	}
	added, err := l.Add(first)
	if err != nil || len(added) != MaxPending+1 {
		t.Fatalf("unblocking added %d ops, err %v; want first and %d held", len(added), err, MaxPending)
	}
	if l.Has(held[0].ID) || !l.Has(held[1].ID) || !l.Has(held[MaxPending].ID) {
		t.Fatal("the oldest held op should have been dropped, the others applied")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pending) != 0 || len(l.waiting) != 0 {
		t.Fatalf("leftovers: %d pending, %d waiting", len(l.pending), len(l.waiting))
	}
}

func TestPendingJunkDoesNotLeak(t *testing.T) {
	alice, mallory := newActor(t, "alice"), newActor(t, "mallory")
	l := newGroup(t, alice, "g")
	fake := newGroup(t, mallory, "fake") // ops whose parents l never sees
	for i := range 3 * MaxPending {
		w := opWire{Type: typeOp, Group: l.ID(), Kind: KindRename, Name: fmt.Sprint("junk", i), Parents: []string{fake.ID()}}
		op, err := signOp(mallory.key, w, t0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Add(op); err != nil {
			t.Fatal(err)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pending) != MaxPending || len(l.waiting[fake.ID()]) != MaxPending || len(l.held) > 2*MaxPending+1 {
		t.Fatalf("junk grows: %d pending, %d waiting, %d held IDs", len(l.pending), len(l.waiting[fake.ID()]), len(l.held))
	}
}

func TestRejectBrokenChain(t *testing.T) {
	alice, bob := newActor(t, "alice"), newActor(t, "bob")
	l := newGroup(t, alice, "g")
	replica := clone(t, l)
	mustAdd(t, replica, alice, Draft{Kind: KindAdd, Peer: bob.id}, 1) // never delivered
	child := mustAdd(t, replica, alice, Draft{Kind: KindRename, Name: "x"}, 2)
	if added, err := l.Add(child); err != nil || added != nil {
		t.Fatalf("child of an unknown op: %v, %v", added, err)
	}
	if l.Has(child.ID) || l.Effective(child.ID) || l.State().Name != "g" {
		t.Fatal("an op with an unknown parent was applied")
	}
	// The record form without the lost parent: a dangling parent.
	dangling := []byte("[" + string(l.Ops()[0].Raw) + "," + string(child.Raw) + "]")
	if _, err := ParseLog(l.ID(), dangling); !errors.Is(err, ErrBadChain) {
		t.Fatalf("ParseLog with a dangling parent: %v, want ErrBadChain", err)
	}
}

func TestRejectBadRecords(t *testing.T) {
	alice, bob, carol := newActor(t, "alice"), newActor(t, "bob"), newActor(t, "carol")
	l := newGroup(t, alice, "g")
	a := clone(t, l)
	b := clone(t, l)
	mustAdd(t, a, alice, Draft{Kind: KindAdd, Peer: bob.id}, 1)
	mustAdd(t, b, alice, Draft{Kind: KindAdd, Peer: carol.id}, 1)
	if _, err := l.Merge(a); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Merge(b); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, l, alice, Draft{Kind: KindRename, Name: "h"}, 2)
	ops := l.Ops() // genesis, two concurrent adds, the rename on both
	if len(ops) != 4 || len(ops[3].Parents) != 2 {
		t.Fatalf("scenario: %d ops, the last with %d parents", len(ops), len(ops[3].Parents))
	}
	list := func(ops ...*Op) []byte {
		raws := make([]json.RawMessage, len(ops))
		for i, op := range ops {
			raws[i] = op.Raw
		}
		b, err := json.Marshal(raws)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if _, err := ParseLog(l.ID(), list(ops...)); err != nil {
		t.Fatalf("good log: %v", err)
	}
	cases := []struct {
		name string
		id   string
		data []byte
		want error
	}{
		{"concurrent ops swapped", l.ID(), list(ops[0], ops[2], ops[1], ops[3]), ErrBadChain},
		{"child before parent", l.ID(), list(ops[0], ops[1], ops[3], ops[2]), ErrBadChain},
		{"duplicate", l.ID(), list(ops[0], ops[1], ops[1], ops[2], ops[3]), ErrDuplicate},
		{"genesis twice", l.ID(), list(ops[0], ops[0], ops[1]), ErrDuplicate},
		{"no genesis first", l.ID(), list(ops[1], ops[0]), ErrBadChain},
		{"genesis of another group", newGroup(t, alice, "g").ID(), list(ops...), ErrWrongGroup},
		{"empty", l.ID(), []byte("[]"), ErrBadChain},
		{"not a list", l.ID(), []byte(`{"a":1}`), ErrBadChain},
		{"too large", l.ID(), append(list(ops...), bytes.Repeat([]byte(" "), MaxLogSize)...), ErrTooLarge},
		{"too many ops", l.ID(), []byte("[" + strings.Repeat("{},", MaxLogOps) + "{}]"), ErrTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := ParseLog(c.id, c.data); !errors.Is(err, c.want) {
				t.Fatalf("ParseLog: %v, want %v", err, c.want)
			}
		})
	}
}

func TestRejectCreatedBeforeParent(t *testing.T) {
	alice, bob := newActor(t, "alice"), newActor(t, "bob")
	l := newGroup(t, alice, "g")
	mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: bob.id}, 60)
	w := opWire{Type: typeOp, Group: l.ID(), Kind: KindRename, Name: "early", Parents: l.Heads()}
	op, err := signOp(alice.key, w, t0.Add(59*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Add(op); !errors.Is(err, ErrBadChain) {
		t.Fatalf("op created before its parent: %v, want ErrBadChain", err)
	}
	// Same second as the parent is fine (created has second precision).
	op, err = signOp(alice.key, w, t0.Add(60*time.Second+500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Add(op); err != nil {
		t.Fatalf("op in the parent's second: %v", err)
	}
	// Sign never makes an op that predates its parents.
	op = sign(t, l, alice, Draft{Kind: KindRename, Name: "late"}, 0)
	if op.Created.Before(t0.Add(60 * time.Second)) {
		t.Fatalf("Sign predated the parents: %v", op.Created)
	}
}

func TestRejectMalformedOps(t *testing.T) {
	alice, bob := newActor(t, "alice"), newActor(t, "bob")
	l := newGroup(t, alice, "g")
	op := mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: bob.id}, 1)

	forged := bytes.Replace(op.Raw, []byte(`"kind":"add"`), []byte(`"kind":"adl"`), 1)
	forged2 := bytes.Clone(op.Raw)
	i := bytes.Index(forged2, []byte(`"proofValue":"z`)) + len(`"proofValue":"z`) + 3
	forged2[i] ^= 1
	var many []string
	for i := range MaxOpSize / 50 {
		many = append(many, fmt.Sprint("urn:", i))
	}
	if _, err := l.Sign(alice.key, Draft{Kind: KindAdd, Peer: bob.id, Things: many}, t0); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Sign of an oversized op: %v, want ErrTooLarge", err)
	}
	for name, raw := range map[string][]byte{
		"changed member": forged,
		"flipped proof":  forged2,
		"not JSON":       []byte("nope"),
		"unsigned":       []byte(`{"type":"lmos:GroupOp","kind":"leave"}`),
	} {
		if _, err := ParseOp(raw); !errors.Is(err, ErrBadOp) {
			t.Errorf("%s: %v, want ErrBadOp", name, err)
		}
	}
	if _, err := ParseOp(make([]byte, MaxOpSize+1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversized: %v, want ErrTooLarge", err)
	}
	if _, err := NewLog(op); !errors.Is(err, ErrBadChain) {
		t.Errorf("NewLog of an add: %v", err)
	}
	// Shapes: fields that do not fit the kind, signed correctly.
	shape := []struct {
		name string
		w    opWire
	}{
		{"add without peer", opWire{Kind: KindAdd}},
		{"remove with name", opWire{Kind: KindRemove, Peer: bob.id.String(), Name: "x"}},
		{"leave with peer", opWire{Kind: KindLeave, Peer: bob.id.String()}},
		{"bad peer", opWire{Kind: KindGrant, Peer: "12D3Koo"}},
		{"long role", opWire{Kind: KindAdd, Peer: bob.id.String(), Role: strings.Repeat("r", 65)}},
		{"bad policy", opWire{Kind: KindPolicy, Policy: &Policy{PostRole: "owner"}}},
		{"negative cap", opWire{Kind: KindPolicy, Policy: &Policy{MaxMembers: -1}}},
		{"unknown kind", opWire{Kind: "promote", Peer: bob.id.String()}},
		{"empty thing", opWire{Kind: KindAdd, Peer: bob.id.String(), Things: []string{""}}},
		{"thing ID, not its digest", opWire{Kind: KindAdd, Peer: bob.id.String(), Things: []string{"urn:x"}}},
		{"no parents", opWire{Kind: KindDissolve, Parents: []string{}}},
		{"bad parent", opWire{Kind: KindDissolve, Parents: []string{"bafkreiabc"}}},
		{"duplicate parent", opWire{Kind: KindDissolve, Parents: []string{l.ID(), l.ID()}}},
		{"no group", opWire{Kind: KindDissolve, Group: "-"}},
		{"genesis with parents", opWire{Kind: KindGenesis, Name: "x", Nonce: "n"}},
	}
	for _, s := range shape {
		t.Run(s.name, func(t *testing.T) {
			w := s.w
			w.Type = typeOp
			if w.Group == "" && w.Kind != KindGenesis {
				w.Group = l.ID()
			} else if w.Group == "-" {
				w.Group = ""
			}
			if w.Parents == nil {
				w.Parents = l.Heads()
			}
			if _, err := signOp(alice.key, w, t0.Add(time.Hour)); !errors.Is(err, ErrBadOp) {
				t.Fatalf("%v, want ErrBadOp", err)
			}
		})
	}
}

func TestSignSameSecondDistinct(t *testing.T) {
	alice, bob := newActor(t, "alice"), newActor(t, "bob")
	l := newGroup(t, alice, "g")
	d := Draft{Kind: KindAdd, Peer: bob.id}
	a, b := sign(t, l, alice, d, 5), sign(t, l, alice, d, 5)
	if a.ID == b.ID {
		t.Fatal("two ops signed by Sign share an ID")
	}
	if _, err := l.Add(a); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Add(b); err != nil {
		t.Fatal(err)
	}
	if l.State().Ops != 3 {
		t.Fatalf("ops %d, want 3", l.State().Ops)
	}
}
