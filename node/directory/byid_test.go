package directory

import (
	"fmt"
	"hash/maphash"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"unique"
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
				pub := unique.Make(peer.ID(fmt.Sprintf("p%d", r.IntN(3))))
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
		m.add(&thing{id: "urn:x", publisher: unique.Make(peer.ID(fmt.Sprintf("p%d", i)))})
	}
	m.add(&thing{id: "urn:y", publisher: unique.Make(peer.ID("p0"))})
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
// the struct stays in the 96-byte size class and a slot's metadata at 20
// bytes (docs/performance.md).
func TestThingSize(t *testing.T) {
	if n := unsafe.Sizeof(thing{}); n > 96 {
		t.Errorf("thing is %d bytes, want at most 96", n)
	}
	if n := unsafe.Sizeof(slotMeta{}); n > 20 {
		t.Errorf("slotMeta is %d bytes, want at most 20", n)
	}
}

// TestThingClone: clone copies every field (a field added to thing and
// not to clone fails here).
func TestThingClone(t *testing.T) {
	var src thing
	v := reflect.ValueOf(&src).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f := reflect.NewAt(f.Type(), f.Addr().UnsafePointer()).Elem(); f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Uint32, reflect.Uint64:
			f.SetUint(uint64(i + 1))
		case reflect.Int64:
			f.SetInt(int64(i + 1))
		case reflect.Bool:
			f.SetBool(true)
		}
	}
	src.publisher = unique.Make(peer.ID("p"))
	src.rare = &rareFields{groups: []string{"g"}}
	src.used.Store(7)
	c := src.clone()
	cv := reflect.ValueOf(c).Elem()
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		a := reflect.NewAt(v.Field(i).Type(), v.Field(i).Addr().UnsafePointer()).Elem().Interface()
		b := reflect.NewAt(cv.Field(i).Type(), cv.Field(i).Addr().UnsafePointer()).Elem().Interface()
		if name == "used" {
			a, b = src.used.Load(), c.used.Load()
		}
		if !reflect.DeepEqual(a, b) || reflect.ValueOf(a).IsZero() {
			t.Errorf("field %s: clone has %v, want %v (set)", name, b, a)
		}
	}
}
