package dht

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/lmosnode/lmosnode/proto"
)

// DefaultRecordCacheBytes is how many bytes of records a RecordCache made
// with limit 0 holds: about a thousand typical TDs, a few of the largest.
// The cache keeps the signed bytes and what their proof established, not
// the parsed TD (which took twice the bytes again: ~3 KB of heap for a
// record of ~950 bytes), so a full cache takes about 1.5 times its limit
// of heap (~1.4 KB a record).
const DefaultRecordCacheBytes = 1 << 20

// RecordCache remembers the records a node has parsed and verified
// (proto.ParseRecord), by the SHA-256 digest of their bytes, so that the
// same bytes are verified once per node however many paths bring them:
// a Thing announced on gossip arrives again as a DHT put from its
// publisher, kad-dht validates a stored record again before it compares it
// with a new one (Select), and a cold lookup's sync reply repeats what
// gossip brought. Verifying a record (proof, TD schema, parse) costs about
// a millisecond of CPU; a digest costs microseconds.
//
// Only what ParseRecord establishes from the bytes alone is cached; what
// depends on the key or on the clock (publisher, thing id, age) is checked
// on every use. Records that fail are not cached. A record found in the
// cache skips the proof and the TD schema, most of its cost (40 µs a hit
// against 310 µs for a record checked whole, BenchmarkThingValidatorCached
// and BenchmarkThingValidatorValidate); its TD is parsed again from the
// bytes (proto.ParseTD), so that the cache holds no parsed TD. The cache
// holds records of at most its limit in bytes (of the signed documents),
// forgetting the least recently used first (golang-lru's LRU, weighed by
// size here). It is safe for concurrent use. Give each node its own: a
// cache shared by several nodes in one process would let one verify for
// the others.
type RecordCache struct {
	mu    sync.Mutex
	limit int
	bytes int // of the records held
	lru   *simplelru.LRU[[sha256.Size]byte, cached]
}

// cached is a record the cache holds: without its TD, and whether it is
// a tombstone (which a record without TD otherwise says).
type cached struct {
	rec       *proto.Record
	tombstone bool
}

// NewRecordCache returns a cache of at most limit bytes of records
// (DefaultRecordCacheBytes if limit ≤ 0).
func NewRecordCache(limit int) *RecordCache {
	if limit <= 0 {
		limit = DefaultRecordCacheBytes
	}
	c := &RecordCache{limit: limit}
	// Every record has at least one byte, so the LRU's own bound (a
	// count) never binds before the byte limit does.
	lru, err := simplelru.NewLRU(limit, func(_ [sha256.Size]byte, held cached) {
		c.bytes -= len(held.rec.Raw)
	})
	if err != nil { // impossible: limit > 0
		panic(err)
	}
	c.lru = lru
	return c
}

// parse returns proto.ParseRecord(raw), from the cache if raw was parsed
// before. The record returned is the caller's own: its bytes and TD are
// copies.
func (c *RecordCache) parse(raw []byte) (*proto.Record, error) {
	if c == nil {
		return proto.ParseRecord(raw)
	}
	sum := sha256.Sum256(raw)
	c.mu.Lock()
	held, ok := c.lru.Get(sum)
	c.mu.Unlock()
	if ok {
		rec := *held.rec
		rec.Raw = bytes.Clone(held.rec.Raw)
		if !held.tombstone {
			// These bytes parsed before: they parse again.
			td, err := proto.ParseTD(rec.Raw)
			if err != nil {
				return nil, fmt.Errorf("record: %w", err)
			}
			rec.TD = td
		}
		return &rec, nil
	}
	rec, err := proto.ParseRecord(raw)
	if err != nil {
		return nil, err
	}
	c.add(sum, rec)
	return rec, nil
}

// Hold puts rec, a record that proto.ParseRecord returned (as
// proto.SignThing and proto.SignTombstone do: they end with it), in the
// cache, so that the node's own record, verified when it was signed, is
// not verified again when its announcement passes the node's own gossip
// validator. A nil cache holds nothing.
func (c *RecordCache) Hold(rec *proto.Record) {
	if c == nil || rec == nil {
		return
	}
	c.add(sha256.Sum256(rec.Raw), rec)
}

// add caches a copy of rec without its TD, parsed from bytes of digest sum.
func (c *RecordCache) add(sum [sha256.Size]byte, rec *proto.Record) {
	if len(rec.Raw) > c.limit {
		return
	}
	bare := *rec
	bare.Raw, bare.TD = bytes.Clone(rec.Raw), nil
	held := cached{rec: &bare, tombstone: rec.Tombstone()}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lru.Contains(sum) {
		return
	}
	c.lru.Add(sum, held)
	c.bytes += len(held.rec.Raw)
	for c.bytes > c.limit {
		c.lru.RemoveOldest()
	}
}

// Len returns the number of records held.
func (c *RecordCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
