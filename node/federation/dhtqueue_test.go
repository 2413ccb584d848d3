package federation

import (
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"
)

// TestDHTQueueOrder: the DHT worker takes one item at a time: first one
// with a provider key it has not provided (which no cold lookup can find
// before), then the one due earliest; items not yet due wait.
func TestDHTQueueOrder(t *testing.T) {
	key := func(s string) cid.Cid {
		h, err := multihash.Sum([]byte(s), multihash.SHA2_256, -1)
		if err != nil {
			t.Fatal(err)
		}
		return cid.NewCidV1(cid.Raw, h)
	}
	now := time.Now()
	q := &dhtQueue{pending: map[string]dhtItem{
		"old-capability, due first": {keys: []cid.Cid{key("a")}, due: now.Add(-3 * time.Second)},
		"old-capability, due next":  {keys: []cid.Cid{key("a")}, due: now.Add(-2 * time.Second)},
		"new capability, due last":  {keys: []cid.Cid{key("a"), key("b")}, due: now.Add(-time.Second)},
		"not due":                   {keys: []cid.Cid{key("c")}, due: now.Add(time.Minute)},
	}, provided: map[cid.Cid]time.Time{key("a"): now}}
	var order []time.Time
	for {
		it, ok, soonest := q.next(now, q.unprovided)
		if !ok {
			if !soonest.Equal(now.Add(time.Minute)) {
				t.Errorf("soonest %v, want the item not due", soonest.Sub(now))
			}
			break
		}
		order = append(order, it.due)
		for _, c := range it.keys {
			q.provided[c] = now
		}
	}
	want := []time.Time{now.Add(-time.Second), now.Add(-3 * time.Second), now.Add(-2 * time.Second)}
	if len(order) != len(want) {
		t.Fatalf("took %d items, want %d", len(order), len(want))
	}
	for i := range want {
		if !order[i].Equal(want[i]) {
			t.Errorf("item %d was due %v, want %v", i, order[i].Sub(now), want[i].Sub(now))
		}
	}
	if len(q.pending) != 1 {
		t.Errorf("%d items left, want the one not due", len(q.pending))
	}
}
