package dht

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/proto"
)

// TestRecordCache: a validator with a cache answers as one without, checks
// the key and the clock on every use, hands out records no caller can
// change for another, and holds no more bytes than its limit.
func TestRecordCache(t *testing.T) {
	alice, bob := newPublisher(t), newPublisher(t)
	id := uniqueThing(t)
	good := alice.sign(t, id, 1, t0.Add(-time.Hour))
	key := ThingKey(alice.id, id)
	cache := NewRecordCache(0)
	v := ThingValidator{Now: fixedClock(t0), Cache: cache}

	first, err := v.Check(key, good.Raw)
	if err != nil {
		t.Fatal(err)
	}
	first.TD.Title = "changed by a caller"
	first.Raw[0] = 'X'
	second, err := v.Check(key, good.Raw)
	if err != nil {
		t.Fatal(err)
	}
	if cache.Len() != 1 {
		t.Errorf("cache holds %d records after two checks of the same bytes, want 1", cache.Len())
	}
	if second.TD.Title != "WeatherAgent" || !bytes.Equal(second.Raw, good.Raw) || second.Seq != 1 || second.Publisher() != alice.id {
		t.Errorf("second check returned %q, seq %d, publisher %s; a caller's change leaked", second.TD.Title, second.Seq, second.Publisher())
	}

	// A hit is the record a parse gives, its TD parsed again from the
	// bytes (the cache holds none); a tombstone stays one.
	want, err := proto.ParseRecord(good.Raw)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(second, want) {
		t.Errorf("cache hit differs from a parse: TD %+v, want %+v", second.TD, want.TD)
	}
	if held, _ := cache.lru.Peek(sha256.Sum256(good.Raw)); held.rec.TD != nil {
		t.Error("the cache holds the parsed TD")
	}
	gone := alice.tombstone(t, id, 2, t0.Add(-time.Hour))
	for range 2 {
		got, err := v.Check(key, gone.Raw)
		if err != nil {
			t.Fatalf("tombstone checked: %v", err)
		}
		if !got.Tombstone() || got.Seq != 2 || got.ThingID != id {
			t.Fatalf("tombstone checked: tombstone %v, seq %d, id %q", got.Tombstone(), got.Seq, got.ThingID)
		}
	}

	// A cache hit is still checked against the key and the clock.
	if _, err := v.Check(ThingKey(bob.id, id), good.Raw); !errors.Is(err, ErrWrongPublisher) {
		t.Errorf("cached record under another publisher's key: %v, want ErrWrongPublisher", err)
	}
	if _, err := v.Check(ThingKey(alice.id, "urn:other"), good.Raw); !errors.Is(err, ErrWrongThing) {
		t.Errorf("cached record under another thing's key: %v, want ErrWrongThing", err)
	}
	late := ThingValidator{Now: fixedClock(t0.Add(MaxRecordAge)), Cache: cache}
	if _, err := late.Check(key, good.Raw); !errors.Is(err, ErrExpired) {
		t.Errorf("cached record after MaxRecordAge: %v, want ErrExpired", err)
	}
	// A bad record is refused every time and never cached.
	forged := bytes.Replace(good.Raw, []byte(`"WeatherAgent"`), []byte(`"EvilAgent"`), 1)
	for range 2 {
		if _, err := v.Check(key, forged); !errors.Is(err, ErrBadRecord) {
			t.Errorf("forged record: %v, want ErrBadRecord", err)
		}
	}
	if cache.Len() != 2 {
		t.Errorf("cache holds %d records after a forged one, want 2 (the record, the tombstone)", cache.Len())
	}

	// The limit: room for two records of this size, not three; the one
	// used least recently goes first.
	small := NewRecordCache(2*len(good.Raw) + len(good.Raw)/2)
	sv := ThingValidator{Now: fixedClock(t0), Cache: small}
	var recs [3][]byte
	for i := range recs {
		recs[i] = alice.sign(t, id, uint64(i+1), t0.Add(-time.Hour)).Raw
	}
	for _, raw := range [][]byte{recs[0], recs[1], recs[0], recs[2]} {
		if _, err := sv.Check(key, raw); err != nil {
			t.Fatal(err)
		}
	}
	if small.Len() != 2 || small.bytes > small.limit {
		t.Errorf("small cache holds %d records, %d bytes (limit %d); want 2 within the limit", small.Len(), small.bytes, small.limit)
	}
	for i, want := range []bool{true, false, true} {
		if got := small.lru.Contains(sha256.Sum256(recs[i])); got != want {
			t.Errorf("record %d held: %v, want %v (the least recently used goes first)", i+1, got, want)
		}
	}
}

// TestRecordCacheHold: a record held after signing is not parsed again by
// a validator with the cache (the cache answers it), still passes the key
// and clock checks on use, and a caller's change to the record held does
// not reach the cache.
func TestRecordCacheHold(t *testing.T) {
	alice, bob := newPublisher(t), newPublisher(t)
	id := uniqueThing(t)
	rec := alice.sign(t, id, 1, t0.Add(-time.Hour))
	cache := NewRecordCache(0)
	cache.Hold(rec)
	if cache.Len() != 1 {
		t.Fatalf("cache holds %d records after Hold, want 1", cache.Len())
	}
	rec.TD.Title = "changed after Hold"
	v := ThingValidator{Now: fixedClock(t0), Cache: cache}
	got, err := v.Check(ThingKey(alice.id, id), rec.Raw)
	if err != nil {
		t.Fatal(err)
	}
	if got.TD.Title != "WeatherAgent" || cache.Len() != 1 {
		t.Errorf("check after Hold: title %q, %d records held", got.TD.Title, cache.Len())
	}
	if _, err := v.Check(ThingKey(bob.id, id), rec.Raw); !errors.Is(err, ErrWrongPublisher) {
		t.Errorf("held record under another publisher's key: %v, want ErrWrongPublisher", err)
	}
	late := ThingValidator{Now: fixedClock(t0.Add(MaxRecordAge)), Cache: cache}
	if _, err := late.Check(ThingKey(alice.id, id), rec.Raw); !errors.Is(err, ErrExpired) {
		t.Errorf("held record after MaxRecordAge: %v, want ErrExpired", err)
	}
	var none *RecordCache
	none.Hold(rec) // a nil cache holds nothing, and does not fail
}
