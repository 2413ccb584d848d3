package node

import (
	"context"
	"testing"

	ds "github.com/ipfs/go-datastore"
	"github.com/libp2p/go-libp2p/core/peer"
)

// TestDatastoreDurability: the node's own Things and everything outside the
// soft classes are durable; learned Things and DHT records are not; and
// writes of both classes read back.
func TestDatastoreDurability(t *testing.T) {
	self, other := peer.ID("self-peer"), peer.ID("other-peer")
	d, err := openDatastore(t.TempDir(), 8, self, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for key, want := range map[string]bool{
		"/directory/things/" + self.String() + "/abc":  true,
		"/directory/things/" + other.String() + "/abc": false,
		"/directory/things/" + self.String() + "x/abc": false, // another peer whose ID starts like ours
		"/directory/version":                           true,
		"/dht/providers/xyz":                           false,
		"/meta/schema":                                 true,
		"/groups/g1":                                   true,
		"/dhtx":                                        true,
	} {
		if got := d.durable(ds.NewKey(key)); got != want {
			t.Errorf("durable(%s) = %v, want %v", key, got, want)
		}
	}
	ctx := context.Background()
	b, err := d.Batch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"/directory/things/" + other.String() + "/a", "/directory/things/" + self.String() + "/a"} {
		if err := b.Put(ctx, ds.NewKey(k), []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	if !b.(*batch).durable {
		t.Error("a batch with an own Thing is not durable")
	}
	if err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(ctx, ds.NewKey("/dht/x"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(ctx, ds.NewKey("/")); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"/directory/things/" + other.String() + "/a", "/directory/things/" + self.String() + "/a", "/dht/x"} {
		if _, err := d.Get(ctx, ds.NewKey(k)); err != nil {
			t.Errorf("get %s: %v", k, err)
		}
	}
}
