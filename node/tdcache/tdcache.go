// Package tdcache keeps the parsed Thing Descriptions of directory entries,
// so that the per-request paths of a node (the engine checking a request
// against its own Thing's TD, the HTTP binding resolving an affordance)
// do not read and parse the stored, signed record on every call.
//
// A record is immutable for a given (publisher, thing id, lmos:seq,
// signing time): a new version of a Thing has a higher seq, so the cache
// needs no invalidation; an entry of an older version is replaced by the
// newer one. The TDs it returns are shared: callers must not modify them.
package tdcache

import (
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/directory"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// DefaultSize is the number of Things a Cache holds by default: more than
// a node's own Things and the Things its consumers use at once; a miss
// costs one read and parse of the record.
const DefaultSize = 4096

type key struct {
	publisher peer.ID
	id        string
}

type slot struct {
	seq    uint64
	signed time.Time
	td     *lmosproto.TD
}

// Cache maps directory entries to their parsed TDs. It is safe for
// concurrent use. The zero value is not usable; call New.
type Cache struct {
	size int

	mu    sync.RWMutex
	slots map[key]slot
}

// New returns a cache of at most size Things (DefaultSize if size ≤ 0).
func New(size int) *Cache {
	if size <= 0 {
		size = DefaultSize
	}
	return &Cache{size: size, slots: make(map[key]slot)}
}

// TD returns the TD of e, parsed once per version of the record.
func (c *Cache) TD(e directory.Entry) (*lmosproto.TD, error) {
	k := key{e.Publisher, e.ThingID}
	c.mu.RLock()
	s, ok := c.slots[k]
	c.mu.RUnlock()
	if ok && s.seq == e.Seq && s.signed.Equal(e.Signed) {
		return s.td, nil
	}
	rec, err := e.Record()
	if err != nil || rec.Tombstone() {
		return e.TD() // its error
	}
	if rec.Seq != e.Seq {
		// e is older than the stored record (which Record reads): do
		// not file the newer TD under e's version
		return rec.TD, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.slots[k]; ok && old.seq > e.Seq {
		return rec.TD, nil // a newer version is cached; keep it
	}
	if len(c.slots) >= c.size {
		for k := range c.slots { // evict an arbitrary Thing
			delete(c.slots, k)
			break
		}
	}
	c.slots[k] = slot{seq: e.Seq, signed: e.Signed, td: rec.TD}
	return rec.TD, nil
}

// Len returns the number of Things cached.
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.slots)
}
