package groups

import (
	"crypto/sha256"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// DefaultOpCacheBytes is how many bytes of operations an OpCache made with
// limit 0 holds: two logs of the largest size (MaxLogSize).
const DefaultOpCacheBytes = 2 * MaxLogSize

// OpCache remembers the operations a node has parsed and verified
// (ParseOp), by the SHA-256 digest of their bytes, so that an operation is
// verified once per node however often it arrives: on the group topic,
// then inside every log record put in the DHT after it (each put carries
// the whole log, and each of the ~20 peers that store it checks every
// operation), in sync answers and join replies. Verifying an operation
// (proof, JCS, an invitation's proof) costs about half a millisecond of
// CPU; a digest costs microseconds.
//
// Only what ParseOp establishes from the bytes alone is cached: whether an
// operation belongs in a log, and whether its author may sign it, is
// checked by the Log on every use. Operations that fail are not cached.
// The cache holds at most its limit in bytes of operations, forgetting the
// least recently used first. A nil *OpCache caches nothing. It is safe for
// concurrent use. Give each node its own: a cache shared by several nodes
// in one process would let one verify for the others.
type OpCache struct {
	retired atomic.Pointer[func(author peer.ID, created time.Time) error]

	mu    sync.Mutex
	limit int
	bytes int
	lru   *simplelru.LRU[[sha256.Size]byte, *Op]
}

// NewOpCache returns a cache of at most limit bytes of operations
// (DefaultOpCacheBytes if limit ≤ 0).
func NewOpCache(limit int) *OpCache {
	if limit <= 0 {
		limit = DefaultOpCacheBytes
	}
	c := &OpCache{limit: limit}
	// Every operation has at least one byte, so the LRU's own bound (a
	// count) never binds before the byte limit does.
	lru, err := simplelru.NewLRU(limit, func(_ [sha256.Size]byte, op *Op) {
		c.bytes -= len(op.Raw)
	})
	if err != nil { // impossible: limit > 0
		panic(err)
	}
	c.lru = lru
	return c
}

// SetRetired sets the check of an operation's author key that ParseOp
// applies to every operation, cached or not: fn returns why author's key
// no longer signs operations created at created (a revocation, or a
// rotation away from it, at or before created), or nil. Operations
// created before a key was retired stay valid: they are the group's
// history, which every node must fold alike.
func (c *OpCache) SetRetired(fn func(author peer.ID, created time.Time) error) {
	c.retired.Store(&fn)
}

// ParseOp is ParseOp(raw), from the cache if raw was parsed before. The
// Op returned is the caller's own copy (its slices are shared and must
// not be modified, as for any Op).
func (c *OpCache) ParseOp(raw []byte) (*Op, error) {
	if c == nil {
		return ParseOp(raw)
	}
	op, err := c.parseOp(raw)
	if err != nil {
		return nil, err
	}
	if fn := c.retired.Load(); fn != nil && *fn != nil {
		if err := (*fn)(op.Author, op.Created); err != nil {
			return nil, fmt.Errorf("%w: operation %s by %s: %w", ErrRetiredKey, op.ID, op.Author, err)
		}
	}
	return op, nil
}

func (c *OpCache) parseOp(raw []byte) (*Op, error) {
	sum := sha256.Sum256(raw)
	c.mu.Lock()
	held, ok := c.lru.Get(sum)
	c.mu.Unlock()
	if ok {
		cp := *held
		return &cp, nil
	}
	op, err := ParseOp(raw)
	if err != nil {
		return nil, err
	}
	cp := *op
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lru.Contains(sum) {
		return op, nil
	}
	c.lru.Add(sum, &cp)
	c.bytes += len(cp.Raw)
	for c.bytes > c.limit {
		c.lru.RemoveOldest()
	}
	return op, nil
}

// ParseLog is ParseLog(groupID, data) with the operations parsed through
// the cache: a log that grew by one operation costs one verification.
func (c *OpCache) ParseLog(groupID string, data []byte) (*Log, error) {
	return parseLog(groupID, data, c)
}

// Len returns the number of operations held.
func (c *OpCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
