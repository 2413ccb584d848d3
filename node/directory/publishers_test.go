package directory

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// TestQuota: a learned publisher holds at most MaxThingsPerPublisher
// entries and MaxBytesPerPublisher bytes; what is over is refused and what
// is held stays; updates count only what they add; own Things and other
// publishers are not affected.
func TestQuota(t *testing.T) {
	self, spam, other := newPublisher(t, 1), newPublisher(t, 2), newPublisher(t, 3)
	clock := newClock()
	one := spam.sign(t, thingSpec{id: "urn:q:probe", seq: 1}, t0)
	size := int64(len(one.Raw))
	d := open(t, memStore(), self.id, clock, Config{MaxThingsPerPublisher: 3, MaxBytesPerPublisher: 10 * size})

	for i := range 3 {
		mustPut(t, d, spam.sign(t, thingSpec{id: fmt.Sprintf("urn:q:%d", i), seq: 1}, t0), nil, Created)
	}
	change, err := d.Put(spam.sign(t, thingSpec{id: "urn:q:3", seq: 1}, t0), nil)
	if change != OverQuota || !errors.Is(err, ErrQuota) {
		t.Fatalf("4th Thing: %s, %v; want over quota", change, err)
	}
	if n, _ := d.Usage(spam.id); n != 3 {
		t.Fatalf("usage after refusal: %d Things, want 3", n)
	}
	// An update of a held Thing adds no Thing.
	mustPut(t, d, spam.sign(t, thingSpec{id: "urn:q:0", title: "second", seq: 2}, t0.Add(time.Second)), nil, Updated)
	// A batch: the first new one already over; a tombstone of a held one
	// replaces it (no growth), the same seq again is unchanged.
	changes, err := d.PutMany([]*lmosproto.Record{
		spam.sign(t, thingSpec{id: "urn:q:4", seq: 1}, t0),
		spam.tombstone(t, "urn:q:1", 2, t0.Add(time.Second)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if changes[0] != OverQuota || changes[1] != Deleted {
		t.Fatalf("batch: %v, want [over quota deleted]", changes)
	}
	// Others are not limited by spam's usage; own Things count nothing.
	for i := range 3 {
		mustPut(t, d, other.sign(t, thingSpec{id: fmt.Sprintf("urn:q:%d", i), seq: 1}, t0), nil, Created)
	}
	for i := range 5 {
		mustPut(t, d, self.sign(t, thingSpec{id: fmt.Sprintf("urn:own:%d", i), seq: 1}, t0), nil, Created)
	}
	if n, _ := d.Usage(self.id); n != 0 {
		t.Fatalf("own usage: %d, want 0", n)
	}
	// Purged entries free the quota.
	clock.Advance(DefaultTTL + time.Minute)
	d.Purge(clock.Now())
	if n, b := d.Usage(spam.id); n != 0 || b != 0 {
		t.Fatalf("usage after purge: %d, %d; want 0", n, b)
	}
	mustPut(t, d, spam.sign(t, thingSpec{id: "urn:q:3", seq: 1}, clock.Now()), nil, Created)
}

// TestQuotaBytes: the byte quota refuses a record that would exceed it,
// and an update that grows a Thing beyond it, but not one that shrinks.
func TestQuotaBytes(t *testing.T) {
	self, spam := newPublisher(t, 1), newPublisher(t, 2)
	small := spam.sign(t, thingSpec{id: "urn:b:0", seq: 1}, t0)
	limit := int64(len(small.Raw))*2 + 8
	d := open(t, memStore(), self.id, newClock(), Config{MaxBytesPerPublisher: limit})
	mustPut(t, d, small, nil, Created)
	mustPut(t, d, spam.sign(t, thingSpec{id: "urn:b:1", seq: 1}, t0), nil, Created)
	if _, err := d.Put(spam.sign(t, thingSpec{id: "urn:b:2", seq: 1}, t0), nil); !errors.Is(err, ErrQuota) {
		t.Fatalf("third: %v, want ErrQuota", err)
	}
	big := spam.sign(t, thingSpec{id: "urn:b:0", description: strings.Repeat("longer ", 100), seq: 2}, t0)
	if _, err := d.Put(big, nil); !errors.Is(err, ErrQuota) {
		t.Fatalf("growing update: %v, want ErrQuota", err)
	}
	mustPut(t, d, spam.tombstone(t, "urn:b:0", 3, t0), nil, Deleted)
	if _, b := d.Usage(spam.id); b > limit {
		t.Fatalf("usage %d bytes over the limit %d", b, limit)
	}
}

// TestLiveness: a learned publisher is online while seen within
// OfflineAfter, offline after, listed after online ones, filtered out by
// Query.Online, and its Things are dropped after OfflineTTL unseen; own
// Things are always online and never dropped.
func TestLiveness(t *testing.T) {
	self, alive, gone := newPublisher(t, 1), newPublisher(t, 2), newPublisher(t, 3)
	clock := newClock()
	d := open(t, memStore(), self.id, clock, Config{OfflineAfter: time.Minute, OfflineTTL: 10 * time.Minute})
	mustPut(t, d, self.sign(t, thingSpec{id: "urn:l:own", title: "c own", seq: 1}, t0), nil, Created)
	mustPut(t, d, alive.sign(t, thingSpec{id: "urn:l:alive", title: "b alive", seq: 1}, t0), nil, Created)
	mustPut(t, d, gone.sign(t, thingSpec{id: "urn:l:gone", title: "a gone", seq: 1}, t0), nil, Created)

	online := func(q Query) []string {
		t.Helper()
		res, err := d.Search(q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range res.Entries {
			out = append(out, fmt.Sprintf("%s:%v", e.ThingID, e.Online))
		}
		return out
	}
	// Fresh proofs: all online, by title.
	if got := fmt.Sprint(online(Query{})); got != "[urn:l:gone:true urn:l:alive:true urn:l:own:true]" {
		t.Fatalf("at t0: %s", got)
	}
	// Only alive is seen again; gone goes offline and ranks last.
	for range 5 {
		clock.Advance(30 * time.Second)
		d.Seen(alive.id, clock.Now())
	}
	if got := fmt.Sprint(online(Query{})); got != "[urn:l:alive:true urn:l:own:true urn:l:gone:false]" {
		t.Fatalf("after 2.5 min: %s", got)
	}
	if got := fmt.Sprint(online(Query{ByID: true})); got != "[urn:l:alive:true urn:l:own:true urn:l:gone:false]" {
		t.Fatalf("by id after 2.5 min: %s", got)
	}
	if got := fmt.Sprint(online(Query{Online: true})); got != "[urn:l:alive:true urn:l:own:true]" {
		t.Fatalf("online=true: %s", got)
	}
	if e, _ := d.Get(gone.id, "urn:l:gone"); e.Online || !e.LastSeen.Equal(t0) {
		t.Fatalf("gone: online %v, last seen %s; want offline, seen at %s", e.Online, e.LastSeen, t0)
	}
	// A sighting in the future does not count beyond now.
	d.Seen(gone.id, clock.Now().Add(time.Hour))
	clock.Advance(2 * time.Minute)
	if e, _ := d.Get(gone.id, "urn:l:gone"); e.Online {
		t.Fatal("a future sighting kept gone online")
	}
	// OfflineTTL after its last sighting, gone's Thing is purged; alive,
	// seen, stays.
	clock.Advance(10 * time.Minute)
	d.Seen(alive.id, clock.Now())
	if n := d.Purge(clock.Now()); n != 1 {
		t.Fatalf("purged %d, want 1", n)
	}
	if _, ok := d.Get(gone.id, "urn:l:gone"); ok {
		t.Fatal("gone's Thing still held")
	}
	if d.Len() != 2 || !d.Tracked(alive.id) || d.Tracked(gone.id) {
		t.Fatalf("after purge: %d held; tracked alive %v, gone %v", d.Len(), d.Tracked(alive.id), d.Tracked(gone.id))
	}
	// A new publisher takes the place gone's state had (Search reads
	// liveness by that place): its liveness is its own, not gone's or
	// alive's.
	late := newPublisher(t, 4)
	mustPut(t, d, late.sign(t, thingSpec{id: "urn:l:late", title: "d late", seq: 1}, clock.Now()), nil, Created)
	if got := fmt.Sprint(online(Query{Online: true})); got != "[urn:l:alive:true urn:l:own:true urn:l:late:true]" {
		t.Fatalf("online=true with late: %s", got)
	}
	clock.Advance(90 * time.Second)
	d.Seen(alive.id, clock.Now())
	if got := fmt.Sprint(online(Query{Online: true})); got != "[urn:l:alive:true urn:l:own:true]" {
		t.Fatalf("online=true, late gone quiet: %s", got)
	}
}

// TestLivenessAfterRestart: learned entries loaded from the datastore get
// OfflineTTL of grace from the load, not from their last proof.
func TestLivenessAfterRestart(t *testing.T) {
	self, other := newPublisher(t, 1), newPublisher(t, 2)
	clock := newClock()
	ds := memStore()
	cfg := Config{OfflineAfter: time.Minute, OfflineTTL: 10 * time.Minute}
	d, err := Open(Deps{Datastore: ds, Self: self.id}, cfg, WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, d, other.sign(t, thingSpec{id: "urn:r:1", seq: 1}, t0), nil, Created)
	d.Close()
	clock.Advance(time.Hour)
	d = open(t, ds, self.id, clock, cfg)
	if n := d.Purge(clock.Now()); n != 0 {
		t.Fatalf("purged %d right after the restart", n)
	}
	if e, ok := d.Get(other.id, "urn:r:1"); !ok || e.Online {
		t.Fatalf("after restart: held %v, online %v; want held, offline", ok, e.Online)
	}
	clock.Advance(10 * time.Minute)
	if n := d.Purge(clock.Now()); n != 1 {
		t.Fatalf("purged %d OfflineTTL after the restart, want 1", n)
	}
}

// TestHolding: a learned publisher's digest follows its live public
// Things through creation, update, removal and purge, and equals the
// digest the publisher computes of the same Things (OwnDigest); group
// Things and tombstones count nothing.
func TestHolding(t *testing.T) {
	self, pub := newPublisher(t, 1), newPublisher(t, 2)
	clock := newClock()
	d := open(t, memStore(), self.id, clock, Config{})
	theirs := open(t, memStore(), pub.id, newClock(), Config{})
	put := func(rec *lmosproto.Record, want Change) {
		t.Helper()
		mustPut(t, d, rec, nil, want)
		mustPut(t, theirs, rec, nil, want)
		live, sum := d.Holding(pub.id)
		ownLive, ownSum := theirs.OwnDigest()
		if live != ownLive || sum != ownSum {
			t.Fatalf("after %s of %s: holding %d Things, digest %016x; the publisher %d, %016x", want, rec.ThingID, live, sum, ownLive, ownSum)
		}
	}
	put(pub.sign(t, thingSpec{id: "urn:h:0", seq: 1}, t0), Created)
	put(pub.sign(t, thingSpec{id: "urn:h:1", seq: 1}, t0), Created)
	put(pub.sign(t, thingSpec{id: "urn:h:g", seq: 1, groups: []string{"bafkgroup"}}, t0), Created)
	put(pub.sign(t, thingSpec{id: "urn:h:0", title: "second", seq: 2}, t0.Add(time.Second)), Updated)
	put(pub.tombstone(t, "urn:h:1", 2, t0.Add(time.Second)), Deleted)
	if live, sum := d.Holding(pub.id); live != 1 || sum != ThingDigest("urn:h:0", 2) {
		t.Fatalf("holding %d Things, digest %016x; want 1, that of urn:h:0 seq 2", live, sum)
	}
	clock.Advance(DefaultTTL + time.Minute)
	d.Purge(clock.Now())
	if live, sum := d.Holding(pub.id); live != 0 || sum != 0 {
		t.Fatalf("after the purge: holding %d Things, digest %016x", live, sum)
	}
}
