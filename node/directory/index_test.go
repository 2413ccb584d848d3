package directory

import (
	"context"
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
