package groups

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// permutations calls f with every permutation of 0..n-1 (Heap's algorithm).
func permutations(n int, f func([]int)) {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	c := make([]int, n)
	f(p)
	for i := 0; i < n; {
		if c[i] < i {
			if i%2 == 0 {
				p[0], p[i] = p[i], p[0]
			} else {
				p[c[i]], p[i] = p[i], p[c[i]]
			}
			f(p)
			c[i]++
			i = 0
		} else {
			c[i] = 0
			i++
		}
	}
}

func TestPermutationsCount(t *testing.T) {
	seen := map[string]bool{}
	permutations(5, func(p []int) { seen[fmt.Sprint(p)] = true })
	if len(seen) != 120 {
		t.Fatalf("got %d distinct permutations of 5, want 120", len(seen))
	}
}

// concurrentScenario builds a base log (alice founds; bob and carol admins,
// dave a member) and seven operations signed on replicas of it by three
// admins and a member, mostly concurrent.
func concurrentScenario(t *testing.T) (base []*Op, concurrentOps []*Op, actors map[string]actor) {
	t.Helper()
	actors = map[string]actor{}
	for _, n := range []string{"alice", "bob", "carol", "dave", "erin"} {
		actors[n] = newActor(t, n)
	}
	a, b, c, d, e := actors["alice"], actors["bob"], actors["carol"], actors["dave"], actors["erin"]
	l := newGroup(t, a, "team")
	mustAdd(t, l, a, Draft{Kind: KindAdd, Peer: b.id}, 1)
	mustAdd(t, l, a, Draft{Kind: KindGrant, Peer: b.id}, 2)
	mustAdd(t, l, a, Draft{Kind: KindAdd, Peer: c.id, Role: RoleAdmin}, 3)
	mustAdd(t, l, b, Draft{Kind: KindAdd, Peer: d.id}, 4)
	base = l.Ops()

	ra, rb, rc, rd := clone(t, l), clone(t, l), clone(t, l), clone(t, l)
	o1 := mustAdd(t, ra, a, Draft{Kind: KindRemove, Peer: c.id}, 10)         // alice removes carol
	o2 := mustAdd(t, rc, c, Draft{Kind: KindAdd, Peer: e.id}, 10)            // carol, concurrently: no effect
	o3 := mustAdd(t, rb, b, Draft{Kind: KindGrant, Peer: d.id}, 11)          // bob grants dave (who leaves)
	o4 := sign(t, clone(t, l), a, Draft{Kind: KindRename, Name: "crew"}, 12) // alice renames
	o5 := sign(t, clone(t, l), b, Draft{Kind: KindPolicy, Policy: &Policy{PostRole: RoleAdmin}}, 12)
	o6 := mustAdd(t, rd, d, Draft{Kind: KindLeave}, 13) // dave leaves
	// alice saw bob's grant, then revokes bob: bob's concurrent policy loses.
	if _, err := ra.Add(o3); err != nil {
		t.Fatal(err)
	}
	o7 := mustAdd(t, ra, a, Draft{Kind: KindRevoke, Peer: b.id}, 14)
	return base, []*Op{o1, o2, o3, o4, o5, o6, o7}, actors
}

func TestFoldAllPermutations(t *testing.T) {
	base, ops, actors := concurrentScenario(t)
	a, b, c, d, e := actors["alice"], actors["bob"], actors["carol"], actors["dave"], actors["erin"]

	build := func(order []int) *Log {
		l, err := NewLog(base[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range base[1:] {
			if _, err := l.Add(op); err != nil {
				t.Fatal(err)
			}
		}
		for _, i := range order {
			if _, err := l.Add(ops[i]); err != nil {
				t.Fatalf("order %v: op %d: %v", order, i, err)
			}
		}
		return l
	}
	ref := build([]int{0, 1, 2, 3, 4, 5, 6})
	st := ref.State()
	// What the rules say must happen.
	switch {
	case st.IsMember(c.id):
		t.Error("carol was removed but is a member")
	case st.IsMember(e.id) || ref.Effective(ops[1].ID):
		t.Error("carol's add concurrent with her removal had effect")
	case st.IsMember(d.id) || !ref.Effective(ops[5].ID) || ref.Effective(ops[2].ID):
		t.Error("dave's leave should win over the concurrent grant")
	case st.Name != "crew":
		t.Errorf("name %q, want crew", st.Name)
	case st.Policy.PostRole != "" || ref.Effective(ops[4].ID):
		t.Error("bob's policy concurrent with his revocation had effect")
	case !st.IsMember(b.id) || st.IsAdmin(b.id) || !ref.Effective(ops[6].ID):
		t.Error("bob should be a plain member")
	case !slices.Equal(st.Admins(), []peer.ID{a.id}):
		t.Errorf("admins %v, want only alice", st.Admins())
	case len(ref.Heads()) < 2:
		t.Errorf("heads %v: the scenario should leave concurrent heads", ref.Heads())
	}
	refBytes, refIDs := ref.Marshal(), opIDs(ref.Ops())
	n := 0
	permutations(len(ops), func(p []int) {
		n++
		l := build(p)
		if got := l.State(); !reflect.DeepEqual(got, st) {
			t.Fatalf("order %v: state differs:\n%+v\nwant\n%+v", p, got, st)
		}
		if got := opIDs(l.Ops()); !slices.Equal(got, refIDs) {
			t.Fatalf("order %v: fold order differs", p)
		}
		if !bytes.Equal(l.Marshal(), refBytes) {
			t.Fatalf("order %v: Marshal differs", p)
		}
		for _, op := range ops {
			if l.Effective(op.ID) != ref.Effective(op.ID) {
				t.Fatalf("order %v: Effective(%s) differs", p, op.Kind)
			}
		}
	})
	if n != 5040 {
		t.Fatalf("checked %d permutations, want 5040", n)
	}
	t.Logf("%d arrival orders, one state", n)
}

func opIDs(ops []*Op) []string {
	out := make([]string, len(ops))
	for i, op := range ops {
		out[i] = op.ID
	}
	return out
}

// TestFoldRandomized lets four replicas sign random operations (some of
// which their own log rejects), merging now and then, and then delivers
// every accepted operation to fresh logs in shuffled orders.
func TestFoldRandomized(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { randomized(t, seed, 200) })
	}
}

func randomized(t *testing.T, seed uint64, steps int) *Log {
	rng := rand.New(rand.NewPCG(seed, 42))
	var people []actor
	for i := range 7 {
		people = append(people, newActor(t, fmt.Sprint("p", i)))
	}
	root := newGroup(t, people[0], "rand")
	for i := 1; i < 4; i++ {
		mustAdd(t, root, people[0], Draft{Kind: KindAdd, Peer: people[i].id, Role: RoleAdmin}, i)
	}
	replicas := []*Log{clone(t, root), clone(t, root), clone(t, root), clone(t, root)}
	all := map[string]*Op{}
	for _, op := range root.Ops() {
		all[op.ID] = op
	}
	// Invitations by two admins: single use, two uses, no limit; adds use
	// them, uninvites revoke them, concurrently.
	invs := []*Invitation{
		issue(t, root, people[0], Invitation{Uses: 1, Expires: t0.Add(time.Hour)}, 4),
		issue(t, root, people[1], Invitation{Uses: 2, Expires: t0.Add(time.Hour)}, 4),
		issue(t, root, people[0], Invitation{Expires: t0.Add(time.Hour)}, 4),
	}
	kinds := []Kind{KindAdd, KindAdd, KindRemove, KindGrant, KindRevoke, KindPolicy, KindRename, KindLeave, KindAdd, KindUninvite}
	for step := 0; step < steps; step++ {
		if step%25 == 0 { // fresh ones, issued after some removals
			invs = append(invs, issue(t, root, people[rng.IntN(2)], Invitation{Uses: rng.IntN(3), Expires: t0.Add(time.Hour)}, 10+step))
		}
		r := rng.IntN(len(replicas))
		who := people[rng.IntN(len(people))]
		d := Draft{Kind: kinds[rng.IntN(len(kinds))], Peer: people[rng.IntN(len(people))].id}
		switch d.Kind {
		case KindPolicy:
			d.Peer, d.Policy = "", &Policy{MaxMembers: 3 + rng.IntN(5)}
		case KindRename:
			d.Peer, d.Name = "", fmt.Sprint("name", step)
		case KindLeave:
			d.Peer = ""
		case KindAdd:
			switch rng.IntN(3) {
			case 0:
				d.Role = RoleAdmin
			case 1:
				d.Invitation = invs[rng.IntN(len(invs))]
			}
		case KindUninvite:
			if rng.IntN(3) != 0 { // rarer than the others
				d = Draft{Kind: KindAdd, Peer: d.Peer, Invitation: invs[rng.IntN(len(invs))]}
			} else {
				d.Peer, d.InvitationID = "", invs[rng.IntN(len(invs))].ID
			}
		}
		if step == steps*9/10 && rng.IntN(2) == 0 {
			d = Draft{Kind: KindDissolve}
		}
		op := sign(t, replicas[r], who, d, 10+step)
		if added, err := replicas[r].Add(op); err == nil && len(added) > 0 {
			all[op.ID] = op
		}
		if rng.IntN(3) == 0 {
			x, y := replicas[rng.IntN(len(replicas))], replicas[rng.IntN(len(replicas))]
			if _, err := x.Merge(y); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Replicas that merge everything agree.
	for _, r := range replicas[1:] {
		if _, err := replicas[0].Merge(r); err != nil {
			t.Fatal(err)
		}
	}
	ref := replicas[0]
	if ref.State().Ops != len(all) {
		t.Fatalf("union has %d ops, %d were accepted", ref.State().Ops, len(all))
	}
	for _, r := range replicas[1:] {
		if _, err := r.Merge(ref); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(r.Marshal(), ref.Marshal()) || !reflect.DeepEqual(r.State(), ref.State()) {
			t.Fatal("merged replicas differ")
		}
	}
	var ops []*Op
	for _, op := range all {
		if op.Kind != KindGenesis {
			ops = append(ops, op)
		}
	}
	slices.SortFunc(ops, func(a, b *Op) int { return cmpString(a.ID, b.ID) })
	effective, invited, uninvites := 0, 0, 0
	for _, op := range ops {
		if ref.Effective(op.ID) {
			effective++
			if op.Invitation != nil {
				invited++
			}
		}
		if op.Kind == KindUninvite {
			uninvites++
		}
	}
	t.Logf("%d ops accepted, %d with effect (%d adds by invitation), %d uninvites, %d heads", len(all), effective, invited, uninvites, len(ref.Heads()))
	for shuffle := range 20 {
		rng.Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
		l, err := NewLog(root.Ops()[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			if _, err := l.Add(op); err != nil {
				t.Fatalf("shuffle %d: %v", shuffle, err)
			}
		}
		if l.Pending() != 0 {
			t.Fatalf("shuffle %d: %d ops still pending", shuffle, l.Pending())
		}
		if !bytes.Equal(l.Marshal(), ref.Marshal()) || !reflect.DeepEqual(l.State(), ref.State()) {
			t.Fatalf("shuffle %d: differs from the merged replicas", shuffle)
		}
	}
	if c := clone(t, ref); !reflect.DeepEqual(c.State(), ref.State()) {
		t.Fatal("ParseLog of the union differs")
	}
	return ref
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
