package directory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	datastore "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

const thingID = "urn:uuid:6f1d3a7a-1f97-4e6b-b45f-f3c2e1c84c77"

func TestPutOrder(t *testing.T) {
	pubs := []publisher{newPublisher(t, 1), newPublisher(t, 2)}

	// A step puts one record: a version of thingID by publisher pub (or
	// again the record of an earlier step).
	type step struct {
		pub   int
		seq   uint64
		at    int // proof time, seconds after t0
		tomb  bool
		title string
		again int // 1-based index of an earlier step to put again
		want  Change
	}
	// state is what Latest returns per publisher: "title@seq",
	// "tombstone@seq" or "" for nothing.
	type state map[int]string

	tests := []struct {
		name  string
		steps []step
		want  state
	}{
		{"first version is created",
			[]step{{seq: 1, title: "A", want: Created}},
			state{0: "A@1", 1: ""}},
		{"higher seq replaces",
			[]step{{seq: 1, title: "A", want: Created}, {seq: 2, title: "B", want: Updated}},
			state{0: "B@2"}},
		{"lower seq is refused",
			[]step{{seq: 2, title: "B", want: Created}, {seq: 1, title: "A", at: 60, want: Stale}},
			state{0: "B@2"}},
		{"same record again is unchanged",
			[]step{{seq: 1, title: "A", want: Created}, {again: 1, want: Unchanged}},
			state{0: "A@1"}},
		{"equal seq: later proof wins",
			[]step{{seq: 3, title: "A", want: Created}, {seq: 3, at: 10, title: "B", want: Updated}},
			state{0: "B@3"}},
		{"equal seq: earlier proof is refused",
			[]step{{seq: 3, at: 10, title: "B", want: Created}, {seq: 3, title: "A", want: Stale}},
			state{0: "B@3"}},
		{"tombstone deletes",
			[]step{{seq: 1, title: "A", want: Created}, {seq: 2, tomb: true, want: Deleted}},
			state{0: "tombstone@2"}},
		{"tombstone blocks an older version",
			[]step{{seq: 1, title: "A", want: Created}, {seq: 3, tomb: true, want: Deleted}, {seq: 2, title: "B", at: 60, want: Stale}},
			state{0: "tombstone@3"}},
		{"tombstone first blocks an older version arriving late",
			[]step{{seq: 3, tomb: true, want: Deleted}, {seq: 2, title: "B", want: Stale}},
			state{0: "tombstone@3"}},
		{"equal seq and time: tombstone wins",
			[]step{{seq: 2, title: "A", want: Created}, {seq: 2, tomb: true, want: Deleted}},
			state{0: "tombstone@2"}},
		{"equal seq and time: live version loses to tombstone",
			[]step{{seq: 2, tomb: true, want: Deleted}, {seq: 2, title: "A", want: Stale}},
			state{0: "tombstone@2"}},
		{"created again after tombstone",
			[]step{{seq: 1, title: "A", want: Created}, {seq: 2, tomb: true, want: Deleted}, {seq: 3, title: "C", want: Created}},
			state{0: "C@3"}},
		{"another publisher with the same id coexists",
			[]step{{seq: 5, title: "A", want: Created}, {pub: 1, seq: 1, title: "Z", want: Created}},
			state{0: "A@5", 1: "Z@1"}},
		{"another publisher cannot shadow with a higher seq",
			[]step{{seq: 1, title: "A", want: Created}, {pub: 1, seq: 99, title: "Z", want: Created}, {seq: 2, title: "B", want: Updated}},
			state{0: "B@2", 1: "Z@99"}},
		{"another publisher's tombstone deletes only its own",
			[]step{{seq: 1, title: "A", want: Created}, {pub: 1, seq: 9, tomb: true, want: Deleted}},
			state{0: "A@1", 1: "tombstone@9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := open(t, memStore(), pubs[0].id, newClock(), Config{})
			recs := make([]*lmosproto.Record, len(tt.steps))
			for i, s := range tt.steps {
				p := pubs[s.pub]
				at := t0.Add(time.Duration(s.at) * time.Second)
				switch {
				case s.again > 0:
					recs[i] = recs[s.again-1]
				case s.tomb:
					recs[i] = p.tombstone(t, thingID, s.seq, at)
				default:
					recs[i] = p.sign(t, thingSpec{id: thingID, title: s.title, seq: s.seq}, at)
				}
				got, err := d.Put(recs[i], nil)
				if got != s.want {
					t.Fatalf("step %d: %s (%v), want %s", i+1, got, err, s.want)
				}
				if (s.want == Stale) != errors.Is(err, ErrStale) {
					t.Fatalf("step %d: error %v", i+1, err)
				}
				if err != nil && s.want != Stale {
					t.Fatalf("step %d: %v", i+1, err)
				}
			}
			for pi, want := range tt.want {
				got := ""
				if e, ok := d.Latest(pubs[pi].id, thingID); ok {
					got = fmt.Sprintf("%s@%d", e.Title, e.Seq)
					if e.Tombstone {
						got = fmt.Sprintf("tombstone@%d", e.Seq)
					}
					if _, live := d.Get(pubs[pi].id, thingID); live == e.Tombstone {
						t.Errorf("publisher %d: Get live = %v for %s", pi, live, got)
					}
				}
				if got != want {
					t.Errorf("publisher %d: held %q, want %q", pi, got, want)
				}
			}
		})
	}
}

// TestPutEqualSeqAndTime: two different records at the same seq and proof
// time; every node keeps the same one whatever the order of arrival.
func TestPutEqualSeqAndTime(t *testing.T) {
	p := newPublisher(t, 1)
	a := p.sign(t, thingSpec{id: thingID, title: "A", seq: 4}, t0)
	b := p.sign(t, thingSpec{id: thingID, title: "B", seq: 4}, t0)
	winner := a
	if b.Newer(a) {
		winner = b
	}
	for _, order := range [][]*lmosproto.Record{{a, b}, {b, a}} {
		d := open(t, memStore(), p.id, newClock(), Config{})
		mustPut(t, d, order[0], nil, Created)
		_, _ = d.Put(order[1], nil)
		e, ok := d.Get(p.id, thingID)
		if !ok {
			t.Fatal("thing missing")
		}
		raw, err := e.Raw()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(raw, winner.Raw) {
			t.Fatalf("order %s,%s: kept %s", order[0].TD.Title, order[1].TD.Title, e.Title)
		}
	}
}

func TestPutRejects(t *testing.T) {
	self, other := newPublisher(t, 1), newPublisher(t, 2)
	d := open(t, memStore(), self.id, newClock(), Config{})
	rec := other.sign(t, thingSpec{id: thingID, seq: 1}, t0)
	if _, err := d.Put(rec, &Local{Backend: "http://127.0.0.1:9"}); err == nil {
		t.Error("local metadata accepted for another publisher's Thing")
	}
	if _, err := d.Put(nil, nil); err == nil {
		t.Error("nil record accepted")
	}
	bad := *rec
	bad.ThingID = ""
	if _, err := d.Put(&bad, nil); err == nil {
		t.Error("record without thing id accepted")
	}
	bad = *rec
	bad.ThingID = "urn:other"
	if _, err := d.Put(&bad, nil); err == nil {
		t.Error("record whose TD has another id accepted")
	}
	if d.Len() != 0 {
		t.Fatalf("Len = %d after rejected puts", d.Len())
	}
}

func TestPutMany(t *testing.T) {
	self, other := newPublisher(t, 1), newPublisher(t, 2)
	d := open(t, memStore(), self.id, newClock(), Config{})
	v1 := other.sign(t, thingSpec{id: thingID, title: "A", seq: 1}, t0)
	v2 := other.sign(t, thingSpec{id: thingID, title: "B", seq: 2}, t0)
	x := other.sign(t, thingSpec{id: "urn:x", title: "X", seq: 1}, t0)
	gone := other.tombstone(t, "urn:x", 2, t0)
	got, err := d.PutMany([]*lmosproto.Record{v1, v2, v1, x, gone})
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{Created, Updated, Stale, Created, Deleted}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
	if e, ok := d.Get(other.id, thingID); !ok || e.Title != "B" {
		t.Fatalf("Get = %+v, %v", e, ok)
	}
	if _, ok := d.Get(other.id, "urn:x"); ok {
		t.Fatal("deleted thing still live")
	}
	if d.Len() != 1 {
		t.Fatalf("Len = %d, want 1", d.Len())
	}
	if r, _ := d.Search(Query{Text: "X"}); r.Total != 0 {
		t.Fatalf("deleted thing still indexed: %+v", r)
	}
}

// countingStore counts the batches committed into it.
type countingStore struct {
	datastore.Batching
	commits atomic.Int32
}

func (c *countingStore) Batch(ctx context.Context) (datastore.Batch, error) {
	b, err := c.Batching.Batch(ctx)
	return &countingBatch{Batch: b, c: c}, err
}

type countingBatch struct {
	datastore.Batch
	c *countingStore
}

func (b *countingBatch) Commit(ctx context.Context) error {
	b.c.commits.Add(1)
	return b.Batch.Commit(ctx)
}

// TestGroupCommit: Puts waiting together for the writer are committed in
// one batch, each with the change it would have had alone in queue order;
// a record seen again in the same batch (a refresh) keeps its indexed
// content.
func TestGroupCommit(t *testing.T) {
	self, other := newPublisher(t, 1), newPublisher(t, 2)
	ds := &countingStore{Batching: memStore()}
	d := open(t, ds, self.id, newClock(), Config{})
	v1 := other.sign(t, thingSpec{id: thingID, title: "Alpha", seq: 1}, t0)
	x := other.sign(t, thingSpec{id: "urn:x", title: "Xray", seq: 1}, t0)
	gone := other.tombstone(t, "urn:y", 1, t0)
	mine := self.sign(t, thingSpec{id: "urn:mine", title: "Mine", seq: 1}, t0)
	recs := []*lmosproto.Record{v1, x, v1, gone, mine}
	want := []Change{Created, Created, Unchanged, Deleted, Created}

	// Hold the writer lock until every Put is queued, so that they form
	// one group.
	d.wmu.Lock()
	got := make([]Change, len(recs))
	errs := make([]error, len(recs))
	var wg sync.WaitGroup
	for i, rec := range recs {
		wg.Go(func() { got[i], errs[i] = d.Put(rec, nil) })
		for queued := 0; queued <= i; {
			d.qmu.Lock()
			queued = len(d.queue)
			d.qmu.Unlock()
			runtime.Gosched()
		}
	}
	before := ds.commits.Load()
	d.wmu.Unlock()
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
	if n := ds.commits.Load() - before; n != 1 {
		t.Fatalf("%d batches committed for %d waiting Puts, want 1", n, len(recs))
	}
	for _, q := range []string{"alpha", "xray", "mine"} {
		if r, _ := d.Search(Query{Text: q}); r.Total != 1 {
			t.Errorf("search %q: %d Things, want 1", q, r.Total)
		}
	}
	if e, ok := d.Get(other.id, thingID); !ok || e.Title != "Alpha" || len(e.Capabilities) == 0 {
		t.Fatalf("Get after a refresh in the same batch = %+v, %v", e, ok)
	}
	if d.Len() != 3 {
		t.Fatalf("Len = %d, want 3", d.Len())
	}
}

// TestPutManyReusedTerm: a term freed by an earlier Thing of a batch and
// its number taken by a new term does not take a later Thing's postings
// (index.add checks the numbers index.resolve looked up before the
// batch).
func TestPutManyReusedTerm(t *testing.T) {
	self, other := newPublisher(t, 1), newPublisher(t, 2)
	d := open(t, memStore(), self.id, newClock(), Config{})
	v1 := other.sign(t, thingSpec{id: thingID, title: "Zebracorn", seq: 1}, t0)
	if _, err := d.Put(v1, nil); err != nil {
		t.Fatal(err)
	}
	v2 := other.sign(t, thingSpec{id: thingID, title: "Yakhorn", seq: 2}, t0)
	b := other.sign(t, thingSpec{id: "urn:b", title: "Zebracorn", seq: 1}, t0)
	if _, err := d.PutMany([]*lmosproto.Record{v2, b}); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]string{"zebracorn": "urn:b", "yakhorn": thingID} {
		r, err := d.Search(Query{Text: q})
		if err != nil {
			t.Fatal(err)
		}
		if r.Total != 1 || r.Entries[0].ThingID != want {
			t.Errorf("search %q: %d Things %+v, want only %s", q, r.Total, r.Entries, want)
		}
	}
}

func TestOwnThings(t *testing.T) {
	self, other := newPublisher(t, 1), newPublisher(t, 2)
	clock := newClock()
	d := open(t, memStore(), self.id, clock, Config{})
	local := &Local{Backend: "http://127.0.0.1:8081/weather"}
	rec := self.sign(t, thingSpec{id: thingID, title: "Mine", seq: 1}, t0)
	mustPut(t, d, rec, local, Created)
	mustPut(t, d, other.sign(t, thingSpec{id: thingID, title: "Theirs", seq: 1}, t0), nil, Created)

	e, ok := d.Get(self.id, thingID)
	if !ok || !e.Own || e.Local != *local || !e.Expires.IsZero() || e.TTL != 0 {
		t.Fatalf("own entry = %+v", e)
	}
	// A new version without local metadata keeps it.
	clock.Advance(time.Minute)
	mustPut(t, d, self.sign(t, thingSpec{id: thingID, title: "Mine v2", seq: 2}, t0.Add(time.Minute)), nil, Updated)
	e, _ = d.Get(self.id, thingID)
	if e.Local != *local || !e.Created.Equal(t0) || !e.Modified.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after update: %+v", e)
	}
	// New local metadata with the same record: stored, nothing else changes.
	moved := &Local{Backend: "http://127.0.0.1:8082/weather"}
	rec2, _ := e.Record()
	mustPut(t, d, rec2, moved, Unchanged)
	if e, _ := d.Get(self.id, thingID); e.Local != *moved {
		t.Fatalf("local = %+v", e.Local)
	}

	lookup := d.Lookup(thingID)
	if len(lookup) != 2 || !lookup[0].Own || lookup[1].Publisher != other.id {
		t.Fatalf("Lookup = %+v", lookup)
	}
	if own := d.Own(); len(own) != 1 || own[0].Title != "Mine v2" {
		t.Fatalf("Own = %+v", own)
	}
	mustPut(t, d, self.tombstone(t, thingID, 3, t0.Add(time.Minute)), nil, Deleted)
	if len(d.Own()) != 0 {
		t.Fatal("Own lists a removed Thing")
	}
	recs := d.OwnRecords()
	if len(recs) != 1 || !recs[0].Tombstone || recs[0].TTL != DefaultTombstoneTTL || !recs[0].Expires.Equal(clock.Now().Add(DefaultTombstoneTTL)) {
		t.Fatalf("OwnRecords = %+v", recs)
	}
}

func TestPersistence(t *testing.T) {
	dir := t.TempDir()
	self, other := newPublisher(t, 1), newPublisher(t, 2)
	clock := newClock()
	local := &Local{Backend: "http://127.0.0.1:8081/weather"}
	mine := self.sign(t, thingSpec{id: thingID, title: "Mine", seq: 1}, t0)
	theirs := other.sign(t, thingSpec{id: "urn:theirs", title: "Theirs", typ: lmosproto.TypeTool, seq: 7}, t0)
	gone := other.tombstone(t, "urn:gone", 4, t0)

	ds := pebbleStore(t, dir)
	d, err := Open(Deps{Datastore: ds, Self: self.id}, Config{}, WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, d, mine, local, Created)
	mustPut(t, d, theirs, nil, Created)
	mustPut(t, d, gone, nil, Deleted)
	before, _ := d.Get(other.id, "urn:theirs")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := ds.Close(); err != nil {
		t.Fatal(err)
	}

	ds = pebbleStore(t, dir)
	defer ds.Close()
	d = open(t, ds, self.id, clock, Config{})
	if d.Len() != 2 {
		t.Fatalf("Len = %d after reopening, want 2", d.Len())
	}
	e, ok := d.Get(self.id, thingID)
	if !ok || !e.Own || e.Local != *local || e.Title != "Mine" {
		t.Fatalf("own thing after reopening: %+v", e)
	}
	after, ok := d.Get(other.id, "urn:theirs")
	if !ok {
		t.Fatal("learned thing lost")
	}
	if !after.Created.Equal(before.Created) || !after.Expires.Equal(before.Expires) || after.TTL != DefaultTTL || !after.Signed.Equal(t0) {
		t.Fatalf("registration changed: before %+v after %+v", before, after)
	}
	rec, err := after.Record()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rec.Raw, theirs.Raw) || rec.TD.Title != "Theirs" || rec.Signer.PeerID != other.id ||
		rec.Signer.DID != theirs.Signer.DID || rec.Signer.Proof.ProofValue != theirs.Signer.Proof.ProofValue {
		t.Fatalf("record after reopening: %+v", rec)
	}
	if _, err := lmosproto.ParseRecord(rec.Raw); err != nil {
		t.Fatalf("stored record no longer verifies: %v", err)
	}
	// The tombstone still refuses an older version.
	if _, err := d.Put(other.sign(t, thingSpec{id: "urn:gone", seq: 3}, t0), nil); !errors.Is(err, ErrStale) {
		t.Fatalf("older version after tombstone: %v", err)
	}
	// Indexes are rebuilt.
	if r, _ := d.Search(Query{Type: "tool"}); r.Total != 1 || r.Entries[0].ThingID != "urn:theirs" {
		t.Fatalf("type query after reopening: %+v", r)
	}
	if r, _ := d.Search(Query{Text: "theirs"}); r.Total != 1 {
		t.Fatalf("text query after reopening: %+v", r)
	}
}

func TestOpenRefusesOtherLayout(t *testing.T) {
	ds := memStore()
	if err := ds.Put(context.Background(), keyVersion, []byte("99")); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Deps{Datastore: ds, Self: newPublisher(t, 1).id}, Config{}); err == nil {
		t.Fatal("opened a datastore of another layout")
	}
}

func TestOpenSkipsCorruptEntry(t *testing.T) {
	ds := memStore()
	self := newPublisher(t, 1)
	d := open(t, ds, self.id, newClock(), Config{})
	mustPut(t, d, self.sign(t, thingSpec{id: thingID, seq: 1}, t0), nil, Created)
	d.Close()
	bad := thingKey(self.id, "urn:bad")
	if err := ds.Put(context.Background(), bad, []byte{envelopeFormat, 0, 0xff}); err != nil {
		t.Fatal(err)
	}
	d = open(t, ds, self.id, newClock(), Config{})
	if d.Len() != 1 {
		t.Fatalf("Len = %d, want 1", d.Len())
	}
	if ok, _ := ds.Has(context.Background(), bad); !ok {
		t.Fatal("corrupt entry was deleted; it must be kept for inspection")
	}
}

func TestPurge(t *testing.T) {
	self, other := newPublisher(t, 1), newPublisher(t, 2)
	clock := newClock()
	ds := memStore()
	d := open(t, ds, self.id, clock, Config{TTL: time.Hour, TombstoneTTL: 3 * time.Hour})
	learned := other.sign(t, thingSpec{id: "urn:learned", title: "Learned", seq: 1}, t0)
	refreshed := other.sign(t, thingSpec{id: "urn:refreshed", title: "Refreshed", seq: 1}, t0)
	mustPut(t, d, learned, nil, Created)
	mustPut(t, d, refreshed, nil, Created)
	mustPut(t, d, self.sign(t, thingSpec{id: "urn:mine", title: "Mine", seq: 1}, t0), nil, Created)
	mustPut(t, d, self.tombstone(t, "urn:mine-gone", 2, t0), nil, Deleted)
	events, cancel, err := d.Subscribe("")
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()

	clock.Advance(40 * time.Minute)
	mustPut(t, d, refreshed, nil, Unchanged) // expires now at t0+100min
	e, _ := d.Get(other.id, "urn:refreshed")
	if !e.Expires.Equal(t0.Add(100*time.Minute)) || !e.Modified.Equal(t0) {
		t.Fatalf("refresh: %+v", e)
	}

	clock.Advance(30 * time.Minute) // t0+70min: learned expired, not yet purged
	if _, ok := d.Get(other.id, "urn:learned"); ok {
		t.Fatal("expired thing returned by Get")
	}
	if r, _ := d.Search(Query{Publisher: other.id}); r.Total != 1 || r.Entries[0].ThingID != "urn:refreshed" {
		t.Fatalf("search shows expired things: %+v", r)
	}
	if n := d.Purge(clock.Now()); n != 1 {
		t.Fatalf("purged %d, want 1", n)
	}
	if ev := <-events; ev.Type != EventDeleted || ev.ThingID != "urn:learned" || !ev.Entry.Tombstone {
		t.Fatalf("event %+v", ev)
	}
	if ok, _ := ds.Has(context.Background(), thingKey(other.id, "urn:learned")); ok {
		t.Fatal("purged entry still stored")
	}
	if d.Len() != 2 {
		t.Fatalf("Len = %d, want 2", d.Len())
	}

	clock.Advance(3 * time.Hour)
	if n := d.Purge(clock.Now()); n != 2 { // refreshed, own tombstone
		t.Fatalf("purged %d, want 2", n)
	}
	if _, ok := d.Get(self.id, "urn:mine"); !ok {
		t.Fatal("own thing expired")
	}
	if recs := d.OwnRecords(); len(recs) != 1 {
		t.Fatalf("own records %+v", recs)
	}
	// A learned version of a purged Thing is welcome again.
	mustPut(t, d, learned, nil, Created)
}

func TestPurgeLoop(t *testing.T) {
	self, other := newPublisher(t, 1), newPublisher(t, 2)
	clock := newClock()
	d := open(t, memStore(), self.id, clock, Config{TTL: time.Hour, PurgeInterval: 5 * time.Millisecond})
	mustPut(t, d, other.sign(t, thingSpec{id: thingID, seq: 1}, t0), nil, Created)
	clock.Advance(2 * time.Hour)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok := d.Latest(other.id, thingID); !ok && d.Len() == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("purge loop did not purge")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestClosed(t *testing.T) {
	self := newPublisher(t, 1)
	d := open(t, memStore(), self.id, newClock(), Config{})
	d.Close()
	if _, err := d.Put(self.sign(t, thingSpec{id: thingID, seq: 1}, t0), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Put after Close: %v", err)
	}
	if _, _, err := d.Subscribe(""); !errors.Is(err, ErrClosed) {
		t.Fatalf("Subscribe after Close: %v", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	if err := (Config{TTL: -time.Second, EventHistory: -1}).Validate(); err == nil {
		t.Fatal("negative options accepted")
	}
	if _, err := Open(Deps{Datastore: memStore(), Self: newPublisher(t, 1).id}, Config{TTL: -1}); err == nil {
		t.Fatal("Open accepted a negative TTL")
	}
	if _, err := Open(Deps{Datastore: memStore()}, Config{}); err == nil {
		t.Fatal("Open accepted an empty self")
	}
}

var _ datastore.Batching = memStore()

// TestOpenWithAnotherIdentity: Things stored as own by a node that now runs
// under another key become learned ones, which expire.
func TestOpenWithAnotherIdentity(t *testing.T) {
	ds := memStore()
	before, after := newPublisher(t, 1), newPublisher(t, 2)
	clock := newClock()
	d := open(t, ds, before.id, clock, Config{})
	mustPut(t, d, before.sign(t, thingSpec{id: thingID, seq: 1}, t0), &Local{Backend: "http://127.0.0.1:1"}, Created)
	d.Close()
	d = open(t, ds, after.id, clock, Config{TTL: time.Hour})
	e, ok := d.Get(before.id, thingID)
	if !ok || e.Own || e.Local != (Local{}) || !e.Expires.Equal(t0.Add(time.Hour)) || len(d.Own()) != 0 {
		t.Fatalf("after the identity change: %+v", e)
	}
}

// TestBeginRun: BeginRun tells a run that follows one that never reached
// EndRun (a crash) from one that follows EndRun or a new datastore, across
// reopening the directory.
func TestBeginRun(t *testing.T) {
	store := dssync.MutexWrap(datastore.NewMapDatastore())
	self := newPublisher(t, 1)
	begin := func(d *Directory) bool {
		t.Helper()
		unclean, err := d.BeginRun()
		if err != nil {
			t.Fatal(err)
		}
		return unclean
	}
	d := open(t, store, self.id, newClock(), Config{})
	if begin(d) {
		t.Fatal("new datastore: unclean")
	}
	if err := d.EndRun(); err != nil {
		t.Fatal(err)
	}
	d.Close()
	d = open(t, store, self.id, newClock(), Config{})
	if begin(d) {
		t.Fatal("after EndRun: unclean")
	}
	d.Close() // a crash: no EndRun
	d = open(t, store, self.id, newClock(), Config{})
	if !begin(d) {
		t.Fatal("after a run without EndRun: clean")
	}
	if !begin(d) {
		t.Fatal("a second BeginRun of the same run: clean")
	}
	if err := d.EndRun(); err != nil {
		t.Fatal(err)
	}
	d.Close()
	if _, err := d.BeginRun(); !errors.Is(err, ErrClosed) {
		t.Fatalf("BeginRun after Close: %v, want ErrClosed", err)
	}
}

// TestClassify: Classify answers what Put would change, without writing.
func TestClassify(t *testing.T) {
	self, alice := newPublisher(t, 1), newPublisher(t, 2)
	clock := newClock()
	d := open(t, dssync.MutexWrap(datastore.NewMapDatastore()), self.id, clock, Config{MaxThingsPerPublisher: 2})
	now := clock.Now()
	v1 := alice.sign(t, thingSpec{id: "urn:a", seq: 1}, now)
	v2 := alice.sign(t, thingSpec{id: "urn:a", seq: 2}, now)
	other := alice.sign(t, thingSpec{id: "urn:b", seq: 1}, now)
	third := alice.sign(t, thingSpec{id: "urn:c", seq: 1}, now)
	classify := func(rec *lmosproto.Record, queued Delta, want Change) Delta {
		t.Helper()
		got, delta, err := d.Classify(rec, queued)
		if err != nil || got != want {
			t.Fatalf("Classify(%s seq %d, %+v) = %s, %v; want %s", rec.ThingID, rec.Seq, queued, got, err, want)
		}
		return delta
	}
	if delta := classify(v1, Delta{}, Created); delta.Things != 1 || delta.Bytes != int64(len(v1.Raw)) {
		t.Fatalf("delta of a new Thing %+v", delta)
	}
	if d.Len() != 0 {
		t.Fatal("Classify wrote")
	}
	mustPut(t, d, v1, nil, Created)
	classify(v1, Delta{}, Unchanged)
	if delta := classify(v2, Delta{}, Updated); delta.Things != 0 || delta.Bytes != int64(len(v2.Raw)-len(v1.Raw)) {
		t.Fatalf("delta of an update %+v", delta)
	}
	mustPut(t, d, v2, nil, Updated)
	classify(v1, Delta{}, Stale)
	classify(alice.tombstone(t, "urn:a", 3, now), Delta{}, Deleted)
	classify(other, Delta{}, Created)
	classify(other, Delta{Things: 1}, OverQuota) // one more Thing accepted, not stored
	mustPut(t, d, other, nil, Created)
	classify(third, Delta{}, OverQuota)
}
