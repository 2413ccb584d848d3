package dht

import (
	"bytes"
	"crypto/sha256"
	"sync"

	"github.com/lmosnode/lmosnode/proto"
)

// DefaultRecordCacheBytes is how many bytes of records a RecordCache made
// with limit 0 holds: a few hundred typical TDs, a few of the largest.
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
// on every use. Records that fail are not cached. The cache holds records
// of at most its limit in bytes (of the signed documents), forgetting the
// oldest first. It is safe for concurrent use. Give each node its own: a
// cache shared by several nodes in one process would let one verify for
// the others.
type RecordCache struct {
	mu    sync.Mutex
	limit int
	bytes int
	byKey map[[sha256.Size]byte]*proto.Record
	order [][sha256.Size]byte // the keys held, oldest first
}

// NewRecordCache returns a cache of at most limit bytes of records
// (DefaultRecordCacheBytes if limit ≤ 0).
func NewRecordCache(limit int) *RecordCache {
	if limit <= 0 {
		limit = DefaultRecordCacheBytes
	}
	return &RecordCache{limit: limit, byKey: make(map[[sha256.Size]byte]*proto.Record)}
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
	held, ok := c.byKey[sum]
	c.mu.Unlock()
	if ok {
		return clone(held), nil
	}
	rec, err := proto.ParseRecord(raw)
	if err != nil {
		return nil, err
	}
	if len(raw) > c.limit {
		return rec, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[sum]; ok {
		return rec, nil
	}
	for c.bytes+len(raw) > c.limit {
		oldest := c.order[0]
		c.order = c.order[1:]
		c.bytes -= len(c.byKey[oldest].Raw)
		delete(c.byKey, oldest)
	}
	c.byKey[sum] = clone(rec)
	c.order = append(c.order, sum)
	c.bytes += len(raw)
	return rec, nil
}

// Len returns the number of records held.
func (c *RecordCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byKey)
}

// clone copies rec deeply enough that no caller can change another's copy.
func clone(rec *proto.Record) *proto.Record {
	out := *rec
	out.Raw = bytes.Clone(rec.Raw)
	if rec.TD != nil {
		out.TD = rec.TD.Clone()
	}
	return &out
}
