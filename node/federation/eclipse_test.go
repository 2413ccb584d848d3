package federation

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/node/directory"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// eclipse is issue 24's eclipse: mallory, connected to a fresh node
// (bob), publishes one Thing with a capability, which reaches bob by sync
// before bob first looks the capability up; alice and carol, honest
// providers of it, are not connected to bob, and only the DHT names them.
type eclipse struct {
	bob, mallory *member
	dht          *gatedDHT
	pubs         []peer.ID // alice, carol and mallory, sorted
	finds        atomic.Int32
}

func newEclipse(t *testing.T, capability string) *eclipse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e := &eclipse{}
	alice, carol := newMember(t, nil), newMember(t, nil)
	e.mallory = newMember(t, nil)
	for _, m := range []*member{alice, carol, e.mallory} {
		if _, _, err := m.Publish(ctx, testTD(t, uniqueID(), 0, capability), nil); err != nil {
			t.Fatal(err)
		}
		e.pubs = append(e.pubs, m.id)
	}
	slices.Sort(e.pubs)
	// mallory answers find requests as a node does, and counts them.
	e.mallory.host.SetStreamHandler(lmosproto.ProtocolFind, func(s network.Stream) {
		e.finds.Add(1)
		e.mallory.handleFind(s)
	})
	e.dht = &gatedDHT{providers: []peer.AddrInfo{
		{ID: alice.id, Addrs: alice.host.Addrs()},
		{ID: carol.id, Addrs: carol.host.Addrs()},
	}}
	e.bob = newMember(t, func(d *Deps, _ *Config) { d.DHT = e.dht })
	connect(t, e.bob, e.mallory)
	waitIdentified(t, e.bob, e.mallory)
	if n, err := e.bob.Sync(ctx, e.mallory.id, Filter{}); err != nil || n != 1 {
		t.Fatalf("sync with mallory: %d records, %v; want 1", n, err)
	}
	return e
}

// lookup looks capability up on bob and checks that the answer holds the
// Things of all three publishers and that the DHT was asked lookups
// times in all.
func (e *eclipse) lookup(t *testing.T, capability string, lookups int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	found, err := e.bob.FindCapability(ctx, capability)
	if err != nil {
		t.Fatal(err)
	}
	if got := publishers(found); !slices.Equal(got, e.pubs) {
		t.Errorf("found the Things of %v, want those of %v (alice, carol, mallory)", got, e.pubs)
	}
	if n := e.dht.lookups.Load(); n != lookups {
		t.Errorf("%d DHT lookups, want %d", n, lookups)
	}
}

func publishers(es []directory.Entry) []peer.ID {
	var out []peer.ID
	for _, e := range es {
		out = append(out, e.Publisher)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestNoEclipseByLocal: the fresh node's first lookup of the capability
// asks the network although its directory holds mallory's Thing, and
// answers with the honest providers' Things too.
func TestNoEclipseByLocal(t *testing.T) {
	const capability = "eclipsed-forecast"
	newEclipse(t, capability).lookup(t, capability, 1)
}

// TestLookupFresh: within LookupFresh of a lookup that asked the network,
// a lookup of the same key answers from the directory alone (no DHT
// lookup, no find request); after it, the next one asks again.
func TestLookupFresh(t *testing.T) {
	const capability = "fresh-forecast"
	e := newEclipse(t, capability)
	e.lookup(t, capability, 1)
	finds := e.finds.Load()
	if finds == 0 {
		t.Error("the first lookup asked no connected peer over the find protocol")
	}
	e.bob.clock.Add(LookupFresh - time.Second)
	e.lookup(t, capability, 1)
	if n := e.finds.Load(); n != finds {
		t.Errorf("a lookup within the window sent %d find requests", n-finds)
	}
	e.bob.clock.Add(2 * time.Second)
	e.lookup(t, capability, 2)
}

// TestRecentKeysBounded: the keys remembered stay within the limit
// whatever is looked up; a full map forgets the expired keys first, then
// the one asked longest ago, and a clock that went back is not fresh.
func TestRecentKeysBounded(t *testing.T) {
	r := newRecentKeys(3)
	now := time.Now()
	keys := make([]cid.Cid, 6)
	for i := range keys {
		keys[i] = lmosdht.CapabilityCID(fmt.Sprint("cap-", i))
	}
	r.asked(keys[0], now.Add(-LookupFresh)) // expired
	r.asked(keys[1], now.Add(-2*time.Minute))
	r.asked(keys[2], now.Add(-time.Minute))
	r.asked(keys[3], now)
	if r.size() != 3 || r.fresh(keys[0], now) || !r.fresh(keys[1], now) || !r.fresh(keys[3], now) {
		t.Fatalf("after an expired key made room: %d keys, fresh 0 %v 1 %v 3 %v", r.size(), r.fresh(keys[0], now), r.fresh(keys[1], now), r.fresh(keys[3], now))
	}
	r.asked(keys[4], now)
	if r.size() != 3 || r.fresh(keys[1], now) || !r.fresh(keys[2], now) || !r.fresh(keys[4], now) {
		t.Fatalf("after the oldest made room: %d keys, fresh 1 %v 2 %v 4 %v", r.size(), r.fresh(keys[1], now), r.fresh(keys[2], now), r.fresh(keys[4], now))
	}
	r.asked(keys[4], now) // again: no eviction
	if r.size() != 3 || !r.fresh(keys[2], now) {
		t.Fatalf("asking a held key again evicted another: %d keys", r.size())
	}
	for i := range 10 * maxRecentKeys {
		r.asked(lmosdht.CapabilityCID(fmt.Sprint("spam-", i)), now)
	}
	if r.size() != 3 {
		t.Fatalf("%d keys after a flood, want at most 3", r.size())
	}
	if r.fresh(keys[5], now) {
		t.Error("a key never asked is fresh")
	}
	r.asked(keys[5], now.Add(time.Hour))
	if r.fresh(keys[5], now) {
		t.Error("a key asked in the future (the clock went back) is fresh")
	}
}

// BenchmarkWarmLookup: a lookup within LookupFresh of one that asked the
// network costs what the directory query costs (warm vs directory).
func BenchmarkWarmLookup(b *testing.B) {
	const capability = "warm-forecast"
	ctx := context.Background()
	alice := newMember(b, nil)
	for range 10 {
		if _, _, err := alice.Publish(ctx, testTD(b, uniqueID(), 0, capability), nil); err != nil {
			b.Fatal(err)
		}
	}
	dht := &gatedDHT{providers: []peer.AddrInfo{{ID: alice.id, Addrs: alice.host.Addrs()}}}
	bob := newMember(b, func(d *Deps, _ *Config) { d.DHT = dht })
	if found, err := bob.FindCapability(ctx, capability); err != nil || len(found) != 10 {
		b.Fatalf("first lookup: %d Things, %v", len(found), err)
	}
	b.Run("warm", func(b *testing.B) {
		for b.Loop() {
			if _, err := bob.FindCapability(ctx, capability); err != nil {
				b.Fatal(err)
			}
		}
		if n := dht.lookups.Load(); n != 1 {
			b.Fatalf("%d DHT lookups, want 1", n)
		}
	})
	b.Run("directory", func(b *testing.B) {
		q := directory.Query{Capability: capability + "@", Visible: bob.visible}
		for b.Loop() {
			if _, err := bob.dir.Search(q); err != nil {
				b.Fatal(err)
			}
		}
	})
}
