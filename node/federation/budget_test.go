package federation

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/directory"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// TestEvictedFoundAgain: a Thing the directory's budget evicted is found
// again by the next lookup of its capability, within LookupFresh of the
// lookup that found it first: the eviction made the key stale (OnEvict),
// so the lookup asks the network instead of answering from what is left.
func TestEvictedFoundAgain(t *testing.T) {
	const capability = "evicted-forecast"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	alice, carol := newMember(t, nil), newMember(t, nil)
	var held int64 // the bytes of alice's and carol's records
	for _, m := range []*member{alice, carol} {
		e, _, err := m.Publish(ctx, testTD(t, uniqueID(), 0, capability), nil)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := e.Raw()
		if err != nil {
			t.Fatal(err)
		}
		held += int64(len(raw))
	}
	want := []peer.ID{alice.id, carol.id}
	slices.Sort(want)
	dht := &gatedDHT{providers: []peer.AddrInfo{
		{ID: alice.id, Addrs: alice.host.Addrs()},
		{ID: carol.id, Addrs: carol.host.Addrs()},
	}}
	// dave: a publisher bob's operator trusts, not on the network.
	_, daveKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	dave, err := lmosproto.PeerIDFromEd25519(daveKey.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	daveTD := testTD(t, uniqueID(), 1)
	daveRec := sign(t, daveKey, daveTD, time.Now())
	// Room for alice's and carol's Things; dave's then evicts one.
	bob := newMemberWith(t, directory.Config{MaxLearnedBytes: held + int64(len(daveRec.Raw)) - 1}, func(d *Deps, _ *Config) { d.DHT = dht })
	bob.dir.SetValuer(func(p peer.ID, _ []string) directory.Value {
		if p == dave {
			return directory.ValueTrusted
		}
		return 0
	})
	lookup := func(step string, lookups int32) {
		t.Helper()
		found, err := bob.FindCapability(ctx, capability)
		if err != nil {
			t.Fatal(err)
		}
		if got := publishers(found); !slices.Equal(got, want) {
			t.Fatalf("%s: found the Things of %v, want %v", step, got, want)
		}
		if n := dht.lookups.Load(); n != lookups {
			t.Fatalf("%s: %d DHT lookups, want %d", step, n, lookups)
		}
	}
	lookup("first lookup", 1)
	if change, err := bob.dir.Put(daveRec, nil); change != directory.Created {
		t.Fatalf("dave's Thing: %s, %v", change, err)
	}
	if res, err := bob.dir.Search(directory.Query{Capability: capability}); err != nil || res.Total != 1 {
		t.Fatalf("%d Things of the capability held after dave's (%v), want 1: one evicted", res.Total, err)
	}
	// dave removes his Thing: room again.
	tomb, err := lmosproto.SignTombstone(daveTD.ID, 2, daveKey, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if change, err := bob.dir.Put(tomb, nil); change != directory.Deleted {
		t.Fatalf("dave's tombstone: %s, %v", change, err)
	}
	// Within LookupFresh of the first lookup: asks the network again.
	bob.clock.Add(time.Second)
	lookup("lookup after the eviction", 2)
}
