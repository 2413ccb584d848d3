package directory

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// TestBudgetEvictionOrder: over Config.MaxLearnedBytes a learned record
// evicts the least valuable learned Things (the rest before online
// publishers' before used ones before group members' before trusted
// publishers'; of equal value the least recently used), never own Things,
// and never anything as valuable as itself: then it is refused.
func TestBudgetEvictionOrder(t *testing.T) {
	clock := newClock()
	self := newPublisher(t, 1)
	pubs := map[string]publisher{}
	for i, name := range []string{"trusted", "member", "online", "rest1", "rest2", "used", "newTrusted", "newRest"} {
		pubs[name] = newPublisher(t, byte(10+i))
	}
	values := map[peer.ID]Value{
		pubs["trusted"].id:    ValueTrusted,
		pubs["newTrusted"].id: ValueTrusted,
		pubs["member"].id:     ValueMember,
		pubs["online"].id:     ValueOnline,
	}
	rec := func(name string, n int) *lmosproto.Record {
		return pubs[name].unsigned(t, thingSpec{id: fmt.Sprintf("urn:budget:%s:%d", name, n), description: "padding", seq: 1}.td(t), t0)
	}
	size := int64(len(rec("trusted", 0).Raw))
	// Room for six learned records (the names have the same length ± 3).
	d := open(t, memStore(), self.id, clock, Config{MaxLearnedBytes: 6*size + 20, OfflineAfter: time.Nanosecond})
	d.SetValuer(func(p peer.ID, _ []string) Value { return values[p] })
	var evicted []string
	d.OnEvict(func(es []Entry) {
		for _, e := range es {
			evicted = append(evicted, e.ThingID)
		}
	})
	for _, name := range []string{"trusted", "member", "online", "rest1", "rest2", "used"} {
		clock.Advance(time.Second)
		mustPut(t, d, rec(name, 0), nil, Created)
	}
	if e, ok := d.Get(pubs["used"].id, "urn:budget:used:0"); ok {
		d.Use(e)
	}
	// Own Things count against nothing and are never evicted.
	for i := range 3 {
		mustPut(t, d, self.sign(t, thingSpec{id: fmt.Sprintf("urn:own:%d", i), seq: 1}, t0), nil, Created)
	}

	expect := func(step string, want ...string) {
		t.Helper()
		if fmt.Sprint(evicted) != fmt.Sprint(want) {
			t.Fatalf("%s: evicted %v, want %v", step, evicted, want)
		}
		evicted = nil
		for _, id := range want {
			for _, p := range pubs {
				if _, ok := d.Latest(p.id, id); ok {
					t.Fatalf("%s: evicted %s still held", step, id)
				}
			}
		}
		if got := d.LearnedBytes(); got > d.cfg.MaxLearnedBytes {
			t.Fatalf("%s: learned bytes %d over the budget %d", step, got, d.cfg.MaxLearnedBytes)
		}
	}
	// A trusted newcomer evicts the least valuable, least recently used:
	// rest1 (learned before rest2).
	mustPut(t, d, rec("newTrusted", 0), nil, Created)
	expect("trusted newcomer", "urn:budget:rest1:0")
	// A newcomer of no value finds nothing less valuable: refused.
	if c, err := d.Put(rec("newRest", 0), nil); c != OverBudget || !errors.Is(err, ErrBudget) {
		t.Fatalf("newcomer of no value: %s, %v; want over budget", c, err)
	}
	expect("newcomer of no value")
	// The same record learned for a lookup (Used) outranks rest2.
	clock.Advance(time.Second)
	if c, err := d.Put(rec("newRest", 0), nil, Used()); c != Created {
		t.Fatalf("used newcomer: %s, %v", c, err)
	}
	expect("used newcomer", "urn:budget:rest2:0")
	// Trusted newcomers then evict the online publisher's Thing, then the
	// used ones (least recently used first), then the member's.
	for i := 1; i <= 4; i++ {
		clock.Advance(time.Second)
		mustPut(t, d, rec("newTrusted", i), nil, Created)
	}
	expect("trusted newcomers", "urn:budget:online:0", "urn:budget:used:0", "urn:budget:newRest:0", "urn:budget:member:0")
	// Only trusted Things are left: one more trusted is refused.
	if c, _ := d.Put(rec("newTrusted", 5), nil); c != OverBudget {
		t.Fatalf("trusted newcomer with only trusted Things held: %s", c)
	}
	if n := len(d.Own()); n != 3 {
		t.Fatalf("%d own Things held, want 3", n)
	}
}

// TestBudgetLoweredAtOpen: a directory opened with a budget below what
// its datastore holds of other publishers evicts down to it, own Things
// kept.
func TestBudgetLoweredAtOpen(t *testing.T) {
	ds, clock := memStore(), newClock()
	self, other := newPublisher(t, 1), newPublisher(t, 2)
	d := open(t, ds, self.id, clock, Config{})
	for i := range 10 {
		mustPut(t, d, other.unsigned(t, thingSpec{id: fmt.Sprintf("urn:lowered:%d", i), seq: 1}.td(t), t0), nil, Created)
	}
	mustPut(t, d, self.sign(t, thingSpec{id: "urn:own", seq: 1}, t0), nil, Created)
	held := d.LearnedBytes()
	d.Close()
	d = open(t, ds, self.id, clock, Config{MaxLearnedBytes: held / 2})
	if got := d.LearnedBytes(); got > held/2 || got == 0 {
		t.Fatalf("after reopening with a budget of %d: %d learned bytes held", held/2, got)
	}
	if len(d.Own()) != 1 {
		t.Fatal("the own Thing went")
	}
}
