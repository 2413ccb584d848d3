package directory

import (
	"crypto/ed25519"
	"encoding/json"
	"os"
	"sync"
	"testing"
	"time"

	datastore "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	pebbleds "github.com/ipfs/go-ds-pebble"
	"github.com/libp2p/go-libp2p/core/peer"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// t0 is the tests' epoch.
var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// fakeClock is an injectable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *fakeClock { return &fakeClock{now: t0} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// publisher is a signing identity of the tests.
type publisher struct {
	key ed25519.PrivateKey
	id  peer.ID
}

// newPublisher derives a publisher from a one-byte seed, so tests are
// deterministic.
func newPublisher(t testing.TB, seed byte) publisher {
	t.Helper()
	s := make([]byte, ed25519.SeedSize)
	s[0] = seed
	key := ed25519.NewKeyFromSeed(s)
	id, err := lmosproto.PeerIDFromEd25519(key.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return publisher{key: key, id: id}
}

var (
	goldenOnce sync.Once
	goldenRaw  []byte
	goldenErr  error
)

// goldenTD returns a fresh copy of proto's weather-agent TD.
func goldenTD(t testing.TB) *lmosproto.TD {
	t.Helper()
	goldenOnce.Do(func() {
		goldenRaw, goldenErr = os.ReadFile("../../proto/testdata/golden/td/weather-agent.in.json")
	})
	if goldenErr != nil {
		t.Fatal(goldenErr)
	}
	td, err := lmosproto.ParseTD(goldenRaw)
	if err != nil {
		t.Fatal(err)
	}
	return td
}

// thingSpec describes a test Thing; zero fields keep the golden TD's value.
type thingSpec struct {
	id          string
	title       string
	description string
	typ         string // lmos:Agent (default) or lmos:Tool
	vendor      string
	caps        []lmosproto.Capability
	groups      []string
	seq         uint64
}

func (s thingSpec) td(t testing.TB) *lmosproto.TD {
	t.Helper()
	td := goldenTD(t)
	if s.id != "" {
		td.ID = s.id
	}
	if s.title != "" {
		td.Title = s.title
	}
	if s.description != "" {
		td.Description = s.description
	}
	if s.typ != "" {
		td.Types = []string{s.typ}
	}
	if s.vendor != "" {
		td.Metadata.Vendor.Name = s.vendor
	}
	if s.caps != nil {
		td.Capabilities = s.caps
	}
	td.Groups = s.groups
	td.Seq = s.seq
	return td
}

// sign signs the Thing as p, at proof time at.
func (p publisher) sign(t testing.TB, s thingSpec, at time.Time) *lmosproto.Record {
	t.Helper()
	rec, err := lmosproto.SignThing(s.td(t), p.key, at)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// tombstone signs the removal of id at seq.
func (p publisher) tombstone(t testing.TB, id string, seq uint64, at time.Time) *lmosproto.Record {
	t.Helper()
	rec, err := lmosproto.SignTombstone(id, seq, p.key, at)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// unsigned builds a record without signing it (Put trusts its caller): for
// benchmarks and tests that need many records.
func (p publisher) unsigned(t testing.TB, td *lmosproto.TD, at time.Time) *lmosproto.Record {
	t.Helper()
	raw, err := json.Marshal(td)
	if err != nil {
		t.Fatal(err)
	}
	return &lmosproto.Record{Raw: raw, TD: td, ThingID: td.ID, Seq: td.Seq, Signer: lmosproto.Signer{PeerID: p.id, Created: at}}
}

func memStore() datastore.Batching { return dssync.MutexWrap(datastore.NewMapDatastore()) }

func pebbleStore(t testing.TB, dir string) *pebbleds.Datastore {
	t.Helper()
	ds, err := pebbleds.NewDatastore(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// open opens a directory for self with a fake clock, closed at cleanup.
func open(t testing.TB, ds datastore.Batching, self peer.ID, clock *fakeClock, cfg Config) *Directory {
	t.Helper()
	d, err := Open(Deps{Datastore: ds, Self: self}, cfg, WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func mustPut(t testing.TB, d *Directory, rec *lmosproto.Record, local *Local, want Change) {
	t.Helper()
	got, err := d.Put(rec, local)
	if err != nil {
		t.Fatalf("put %q seq %d: %v", rec.ThingID, rec.Seq, err)
	}
	if got != want {
		t.Fatalf("put %q seq %d: %s, want %s", rec.ThingID, rec.Seq, got, want)
	}
}
