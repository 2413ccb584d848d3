package directory

import (
	"context"
	"slices"
	"testing"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// TestRemoveWithoutSummary: a Thing whose stored record cannot be read
// when it goes (removed from the datastore behind the directory's back)
// is still taken out of every index, by a sweep, as one whose summary is
// read back is.
func TestRemoveWithoutSummary(t *testing.T) {
	ds := memStore()
	clock := newClock()
	p0, p1 := newPublisher(t, 1), newPublisher(t, 2)
	d := open(t, ds, p0.id, clock, Config{})
	for _, id := range []string{"urn:gone", "urn:kept"} {
		mustPut(t, d, p1.sign(t, thingSpec{id: id, title: "Lonely " + id, description: "zebra quartz",
			vendor: "Acme " + id, caps: []lmosproto.Capability{capv("cap-"+id, "1.0.0")}, seq: 1}, t0), nil, Created)
	}
	if err := ds.Delete(context.Background(), d.thingKey(p1.id, "urn:gone")); err != nil {
		t.Fatal(err)
	}
	mustPut(t, d, p1.tombstone(t, "urn:gone", 2, t0), nil, Deleted)
	mustPut(t, d, p1.tombstone(t, "urn:kept", 2, t0), nil, Deleted)
	d.mu.RLock()
	defer d.mu.RUnlock()
	x := &d.idx
	if x.live != 0 || len(x.caps) != 0 || len(x.vendors) != 0 || len(x.types) != 0 || len(x.termIDs) != 0 || len(x.publishers) != 0 {
		t.Errorf("index after removing both: live %d, caps %v, vendors %v, types %v, terms %v, publishers %v",
			x.live, x.caps, x.vendors, x.types, x.termIDs, x.publishers)
	}
}

// TestCompact: compacting the index leaves no spare room in its arrays
// and lists and changes no query's answer; a Put after it still works.
func TestCompact(t *testing.T) {
	d, c := corpusDirectory(t, 3000)
	queries := []Query{
		{Capability: c.Caps[0]}, {Capability: c.Caps[3] + "@^1"}, {Type: "tool", ByID: true},
		{Vendor: c.Vendors[7]}, {Text: c.Words[0] + " " + c.Words[5]}, {Group: "group-3"}, {},
	}
	answers := func() (out [][]string) {
		for _, q := range queries {
			res, err := d.Search(q)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, e := range res.Entries {
				ids = append(ids, e.ThingID)
			}
			out = append(out, ids)
		}
		return out
	}
	before := answers()
	x := &d.idx
	// spare counts the unused room of the arrays and lists, in entries.
	spare := func() int {
		n := cap(x.slots) - len(x.slots) + cap(x.meta) - len(x.meta)
		for _, c := range x.caps {
			n += cap(c.slots) - len(c.slots)
		}
		for _, p := range x.types {
			n += cap(p) - len(p)
		}
		for i := range x.terms {
			for _, ch := range x.terms[i].posts.chunks {
				n += cap(ch.data) - len(ch.data)
			}
		}
		return n
	}
	d.mu.Lock()
	grown := spare()
	d.idx.compact()
	left := spare()
	d.mu.Unlock()
	// Size classes round a small array up: some room stays (39 % of
	// it here).
	if left > grown/2 {
		t.Errorf("%d spare entries after compact, %d before", left, grown)
	}
	if after := answers(); !slices.EqualFunc(before, after, slices.Equal) {
		t.Errorf("answers changed by compact:\n%v\n%v", before, after)
	}
	if _, err := d.Put(c.next(), nil); err != nil {
		t.Fatal(err)
	}
	if res, err := d.Search(Query{}); err != nil || res.Total != 3001 {
		t.Errorf("after a Put: %d Things, %v", res.Total, err)
	}
}
