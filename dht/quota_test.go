package dht

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	ds "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	"github.com/multiformats/go-base32"

	"github.com/lmosnode/lmosnode/internal/loopback"
)

// dsKey is where kad-dht keeps the value record of key.
func dsKey(key string) ds.Key { return ds.NewKey(base32.RawStdEncoding.EncodeToString([]byte(key))) }

// TestQuotaStore: at most max Thing records per publisher; overwriting a
// held one, other publishers, provider records and other namespaces pass;
// a delete frees a place; the count survives a restart.
func TestQuotaStore(t *testing.T) {
	ctx := context.Background()
	base := dssync.MutexWrap(ds.NewMapDatastore())
	q, err := newQuotaStore(base, 2)
	if err != nil {
		t.Fatal(err)
	}
	spam, other := newPublisher(t), newPublisher(t)
	put := func(s *quotaStore, key string) error { return s.Put(ctx, dsKey(key), []byte("v")) }
	for i := range 2 {
		if err := put(q, ThingKey(spam.id, fmt.Sprint("urn:", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := put(q, ThingKey(spam.id, "urn:2")); !errors.Is(err, ErrRecordQuota) {
		t.Fatalf("third record: %v, want ErrRecordQuota", err)
	}
	for _, key := range []string{ThingKey(spam.id, "urn:0"), ThingKey(other.id, "urn:0"), "/lmos-group/bafkreiexample"} {
		if err := put(q, key); err != nil {
			t.Errorf("put %s: %v", key, err)
		}
	}
	b, err := q.Batch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, ds.NewKey("/providers/abc/def"), []byte("p")); err != nil {
		t.Errorf("provider record: %v", err)
	}
	if err := b.Put(ctx, dsKey(ThingKey(spam.id, "urn:3")), []byte("v")); !errors.Is(err, ErrRecordQuota) {
		t.Errorf("batched third record: %v, want ErrRecordQuota", err)
	}
	if err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := q.Delete(ctx, dsKey(ThingKey(spam.id, "urn:0"))); err != nil {
		t.Fatal(err)
	}
	if err := put(q, ThingKey(spam.id, "urn:2")); err != nil {
		t.Fatalf("after a delete: %v", err)
	}
	// Counted again from the store.
	again, err := newQuotaStore(base, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := put(again, ThingKey(spam.id, "urn:4")); !errors.Is(err, ErrRecordQuota) {
		t.Fatalf("after a restart: %v, want ErrRecordQuota", err)
	}
	if err := put(again, ThingKey(other.id, "urn:1")); err != nil {
		t.Fatalf("other publisher after a restart: %v", err)
	}
}

// TestRecordQuotaOverNetwork: a peer that puts more Thing records of one
// publisher into a node's DHT than Params.MaxRecordsPerPublisher gets them
// refused past the quota; the node keeps the first ones.
func TestRecordQuotaOverNetwork(t *testing.T) {
	gater := loopback.NewGater(t)
	victim := newNode(t, gater, Params{Mode: ModeServer, MaxRecordsPerPublisher: 3})
	spammer := newNode(t, gater, Params{Mode: ModeServer})
	connect(t, spammer, victim)
	waitFor(t, "the victim in the spammer's routing table", 30*time.Second, func() bool {
		return spammer.dht.RoutingTable().Find(victim.host.ID()) != ""
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pub := newPublisher(t)
	for i := range 6 {
		id := fmt.Sprintf("urn:spam:%d", i)
		key := ThingKey(pub.id, id)
		// The spammer keeps its copy; the victim's refusal is an error
		// kad-dht logs, not one PutValue returns.
		_ = spammer.dht.PutValue(ctx, key, pub.sign(t, id, 1, time.Now()).Raw)
		if n := victim.putsOf(key); n == 0 {
			t.Fatalf("record %d never reached the victim", i)
		}
	}
	held := 0
	for key := range victim.stored(t) {
		if p, _, err := ParseThingKey(key); err == nil && p == pub.id {
			held++
		}
	}
	if held != 3 {
		t.Errorf("the victim holds %d records of the publisher, want 3", held)
	}
}
