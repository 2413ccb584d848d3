package directory

import (
	"fmt"
	"hash/maphash"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/libp2p/go-libp2p/core/peer"
)

// TestIDMap: the id map yields, for each id and in all, the entries a
// plain map of id to entries holds, through adds, replacements and
// removals, with hashes that collide often (ids of the same length), at
// the start of the table and at its end, and with the real one.
func TestIDMap(t *testing.T) {
	for name, hash := range map[string]func(string) uint64{
		"colliding": func(id string) uint64 { return uint64(len(id) % 3) },
		// Homes in the last slots: runs wrap around the table's end.
		"wrapping": func(id string) uint64 { return ^uint64(len(id) % 3) },
		"maphash":  newIDMap(maphash.MakeSeed()).hash,
	} {
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 4))
			m := newIDMap(maphash.MakeSeed())
			m.hash = hash
			want := map[string][]*thing{}
			for step := range 4000 {
				id := fmt.Sprintf("urn:%d", r.IntN(40))
				pub := peer.ID(fmt.Sprintf("p%d", r.IntN(3)))
				var held *thing
				for _, e := range want[id] {
					if e.publisher == pub {
						held = e
					}
				}
				switch {
				case held == nil:
					e := &thing{id: id, publisher: pub}
					m.add(e)
					want[id] = append(want[id], e)
				case r.IntN(2) == 0:
					e := &thing{id: id, publisher: pub, seq: held.seq + 1}
					m.replace(held, e)
					want[id][slices.Index(want[id], held)] = e
				default:
					m.remove(held)
					if want[id] = slices.DeleteFunc(want[id], func(e *thing) bool { return e == held }); len(want[id]) == 0 {
						delete(want, id)
					}
				}
				for id, list := range want {
					if got := slices.Collect(m.of(id)); !sameThings(got, list) {
						t.Fatalf("step %d: %s: %d entries, want %d", step, id, len(got), len(list))
					}
				}
				all := slices.Collect(m.all())
				if n := len(slices.Concat(slices.Collect(maps.Values(want))...)); len(all) != n {
					t.Fatalf("step %d: all yields %d, want %d", step, len(all), n)
				}
				if len(slices.Collect(m.of("urn:none"))) != 0 {
					t.Fatalf("step %d: an id never added has entries", step)
				}
			}
		})
	}
}

// TestIDMapOneSlotPerID: many publishers of one id (sybils among them)
// take one slot of the table, so they make no run that other ids' probes
// would walk.
func TestIDMapOneSlotPerID(t *testing.T) {
	m := newIDMap(maphash.MakeSeed())
	for i := range 100 {
		m.add(&thing{id: "urn:x", publisher: peer.ID(fmt.Sprintf("p%d", i))})
	}
	m.add(&thing{id: "urn:y", publisher: "p0"})
	if m.n != 2 || len(m.more["urn:x"]) != 99 {
		t.Fatalf("%d entries in the table, %d others of urn:x; want 2 and 99", m.n, len(m.more["urn:x"]))
	}
	if n := len(slices.Collect(m.of("urn:x"))); n != 100 {
		t.Fatalf("urn:x has %d entries, want 100", n)
	}
}

func sameThings(a, b []*thing) bool {
	if len(a) != len(b) {
		return false
	}
	for _, t := range a {
		if !slices.Contains(b, t) {
			return false
		}
	}
	return true
}

// TestThingSize: a directory holds a thing per Thing, millions of them;
// the struct stays in the 128-byte size class (docs/performance.md).
func TestThingSize(t *testing.T) {
	if n := unsafe.Sizeof(thing{}); n > 128 {
		t.Errorf("thing is %d bytes, want at most 128", n)
	}
}
