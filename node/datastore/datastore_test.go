package datastore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	ds "github.com/ipfs/go-datastore"
	"github.com/ipfs/go-datastore/query"
	"github.com/libp2p/go-libp2p/core/peer"
)

// TestDatastoreDurability: the node's own Things and everything outside the
// soft classes are durable; learned Things and DHT records are not; and
// writes of both classes read back.
func TestDatastoreDurability(t *testing.T) {
	self, other := peer.ID("self-peer"), peer.ID("other-peer")
	d, err := Open(Deps{Self: self}, Config{Dir: t.TempDir()}, WithLogger(slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))))
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

// TestOpenRejects: Open names what is missing or out of range, and opens
// nothing then.
func TestOpenRejects(t *testing.T) {
	for _, c := range []struct {
		name string
		deps Deps
		cfg  Config
		want string
	}{
		{"no self", Deps{}, Config{Dir: t.TempDir()}, "Self"},
		{"no dir", Deps{Self: "p"}, Config{}, "Dir"},
		{"negative cache", Deps{Self: "p"}, Config{Dir: t.TempDir(), CacheMB: -1}, "CacheMB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := Open(c.deps, c.cfg)
			if err == nil {
				d.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want one naming %s", err, c.want)
			}
		})
	}
}

// TestClosed: after Close every operation fails instead of reaching the
// closed pebble database, and a second Close is a no-op.
func TestClosed(t *testing.T) {
	d, err := Open(Deps{Self: "p"}, Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b, err := d.Batch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	k := ds.NewKey("/k")
	if _, err := d.Get(ctx, k); !errors.Is(err, errClosed) {
		t.Errorf("Get: %v", err)
	}
	if err := d.Put(ctx, k, nil); !errors.Is(err, errClosed) {
		t.Errorf("Put: %v", err)
	}
	if err := b.Commit(ctx); !errors.Is(err, errClosed) {
		t.Errorf("Commit: %v", err)
	}
	if _, err := d.Query(ctx, query.Query{}); !errors.Is(err, errClosed) {
		t.Errorf("Query: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// BenchmarkDatastoreWrite measures one durable write as the directory makes
// it on the node's datastore: a batch of one value (the size of a stored
// Thing), committed, then Sync.
func BenchmarkDatastoreWrite(b *testing.B) {
	d, err := Open(Deps{Self: peer.ID("bench")}, Config{Dir: b.TempDir()})
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

// TestDeferSync: a durable write under DeferSync leaves its fsync owed
// until Sync pays it; soft writes and writes without the mark owe none.
func TestDeferSync(t *testing.T) {
	self, other := peer.ID("self-peer"), peer.ID("other-peer")
	d, err := Open(Deps{Self: self}, Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, deferred := context.Background(), DeferSync(context.Background())
	own, learned := ds.NewKey("/directory/things/"+self.String()+"/a"), ds.NewKey("/directory/things/"+other.String()+"/a")
	for _, step := range []struct {
		name  string
		write func() error
		owed  bool
	}{
		{"soft write under DeferSync", func() error { return d.Put(deferred, learned, []byte("v")) }, false},
		{"durable write", func() error { return d.Put(ctx, own, []byte("v")) }, false},
		{"durable write under DeferSync", func() error { return d.Put(deferred, own, []byte("v2")) }, true},
		{"Sync", func() error { return d.Sync(ctx, ds.NewKey("/")) }, false},
		{"durable batch under DeferSync", func() error {
			b, err := d.Batch(deferred)
			if err != nil {
				return err
			}
			if err := b.Put(deferred, own, []byte("v3")); err != nil {
				return err
			}
			return b.Commit(deferred)
		}, true},
		{"Sync again", func() error { return d.Sync(ctx, ds.NewKey("/x")) }, false},
	} {
		if err := step.write(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		d.syncMu.Lock()
		owed := d.owed
		d.syncMu.Unlock()
		if owed != step.owed {
			t.Fatalf("%s: fsync owed %v, want %v", step.name, owed, step.owed)
		}
	}
	if v, err := d.Get(ctx, own); err != nil || string(v) != "v3" {
		t.Fatalf("read back %q, %v", v, err)
	}
}

// TestBloomFilters: the store's tables carry bloom filters, so a read
// skips the tables that do not hold its key (a large directory's reads
// were slowed by a block of every level above the record's).
func TestBloomFilters(t *testing.T) {
	d, err := Open(Deps{Self: "p"}, Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	for i := range 100 {
		if err := d.Put(ctx, ds.NewKey(fmt.Sprintf("/k/%03d", i)), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.pdb.Flush(); err != nil {
		t.Fatal(err)
	}
	before := d.pdb.Metrics().Filter
	for i := range 10 {
		if _, err := d.Get(ctx, ds.NewKey(fmt.Sprintf("/k/%03dx", i))); !errors.Is(err, ds.ErrNotFound) {
			t.Fatalf("absent key %d: %v", i, err)
		}
	}
	after := d.pdb.Metrics().Filter
	if after.Hits-before.Hits < 10 {
		t.Fatalf("the filters skipped %d of 10 reads of absent keys (misses %d)", after.Hits-before.Hits, after.Misses-before.Misses)
	}
}
