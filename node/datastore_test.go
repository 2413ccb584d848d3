package node

import (
	"context"
	"fmt"
	"log/slog"
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

// BenchmarkDatastoreWrite measures one durable write as the directory makes
// it on the node's datastore: a batch of one value (the size of a stored
// Thing), committed, then Sync.
func BenchmarkDatastoreWrite(b *testing.B) {
	d, err := openDatastore(b.TempDir(), 8, peer.ID("bench"), slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	val := make([]byte, 3500)
	i := 0
	for b.Loop() {
		i++
		batch, err := d.Batch(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := batch.Put(ctx, ds.NewKey(fmt.Sprintf("/bench/%d", i)), val); err != nil {
			b.Fatal(err)
		}
		if err := batch.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		if err := d.Sync(ctx, ds.NewKey("/bench")); err != nil {
			b.Fatal(err)
		}
	}
}
