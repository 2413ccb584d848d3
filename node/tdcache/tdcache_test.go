package tdcache_test

import (
	"crypto/ed25519"
	"os"
	"testing"
	"time"

	datastore "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	"github.com/libp2p/go-libp2p/core/peer"
	"go.uber.org/goleak"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/tdcache"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fixture is a directory that this node publishes Things into, made from
// one golden TD.
type fixture struct {
	key  ed25519.PrivateKey
	self peer.ID
	dir  *directory.Directory
	raw  []byte
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	self, err := lmosproto.PeerIDFromEd25519(key.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	dir, err := directory.Open(directory.Deps{Datastore: dssync.MutexWrap(datastore.NewMapDatastore()), Self: self}, directory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	raw, err := os.ReadFile("../../proto/testdata/golden/td/weather-agent.in.json")
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{key: key, self: self, dir: dir, raw: raw}
}

// put stores version seq of Thing id, titled title, and returns its entry.
func (f *fixture) put(t *testing.T, id string, seq uint64, title string) directory.Entry {
	t.Helper()
	td, err := lmosproto.ParseTD(f.raw)
	if err != nil {
		t.Fatal(err)
	}
	td.ID, td.Seq, td.Title = id, seq, title
	rec, err := lmosproto.SignThing(td, f.key, time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.dir.Put(rec, nil); err != nil {
		t.Fatal(err)
	}
	e, ok := f.dir.Get(f.self, id)
	if !ok {
		t.Fatal("not in the directory")
	}
	return e
}

// TestVersions: a TD is parsed once per version of its record; a new
// version (higher seq) is seen at once, an older entry never replaces it.
func TestVersions(t *testing.T) {
	f := newFixture(t)
	c := tdcache.New(0)
	v1 := f.put(t, "urn:x:1", 1, "One")
	a, err := c.TD(v1)
	if err != nil || a.Title != "One" {
		t.Fatalf("v1: %v, %v", a, err)
	}
	if b, _ := c.TD(v1); b != a {
		t.Error("v1 parsed twice")
	}
	v2 := f.put(t, "urn:x:1", 2, "Two")
	b, err := c.TD(v2)
	if err != nil || b.Title != "Two" {
		t.Fatalf("v2: %v, %v", b, err)
	}
	if _, err := c.TD(v1); err != nil { // an entry read before the update
		t.Errorf("the old entry: %v", err)
	}
	if got, _ := c.TD(v2); got != b {
		t.Error("an old entry replaced the new version")
	}
}

// TestSize: the cache holds at most its size and forgets the Thing used
// least recently first.
func TestSize(t *testing.T) {
	f := newFixture(t)
	c := tdcache.New(2)
	entries := map[string]directory.Entry{}
	for _, id := range []string{"urn:x:1", "urn:x:2", "urn:x:3"} {
		entries[id] = f.put(t, id, 1, id)
	}
	get := func(id string) *lmosproto.TD {
		t.Helper()
		got, err := c.TD(entries[id])
		if err != nil || got.ID != id {
			t.Fatalf("%s: %v, %v", id, got, err)
		}
		if n := c.Len(); n > 2 {
			t.Fatalf("%d Things cached, size 2", n)
		}
		return got
	}
	one, two := get("urn:x:1"), get("urn:x:2")
	get("urn:x:1") // now urn:x:2 is the least recently used
	get("urn:x:3")
	if get("urn:x:1") != one {
		t.Error("urn:x:1, used recently, was forgotten")
	}
	if get("urn:x:2") == two {
		t.Error("urn:x:2, the least recently used, was kept")
	}
}
