// Package tdcache keeps the parsed Thing Descriptions of directory entries,
// so that the per-request paths of a node (the engine checking a request
// against its own Thing's TD, the HTTP binding resolving an affordance)
// do not read and parse the stored, signed record on every call.
//
// A record is immutable for a given (publisher, thing id, lmos:seq,
// signing time): a new version of a Thing has a higher seq, so the cache
// needs no invalidation; an entry of an older version is replaced by the
// newer one. When full, the cache forgets the Thing used least recently.
// The TDs it returns are shared: callers must not modify them.
package tdcache

import (
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
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

// Cache maps directory entries to their parsed TDs, forgetting the Thing
// used least recently when full (golang-lru's LRU). It is safe for
// concurrent use. The zero value is not usable; call New.
type Cache struct {
	mu    sync.Mutex
	slots *simplelru.LRU[key, slot]
}

// New returns a cache of at most size Things (DefaultSize if size ≤ 0).
func New(size int) *Cache {
	if size <= 0 {
		size = DefaultSize
	}
	slots, err := simplelru.NewLRU[key, slot](size, nil)
	if err != nil { // impossible: size > 0
		panic(err)
	}
	return &Cache{slots: slots}
}

// TD returns the TD of e, parsed once per version of the record.
func (c *Cache) TD(e directory.Entry) (*lmosproto.TD, error) {
	k := key{e.Publisher, e.ThingID}
	c.mu.Lock()
	s, ok := c.slots.Get(k)
	c.mu.Unlock()
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
	if old, ok := c.slots.Peek(k); ok && old.seq > e.Seq {
		return rec.TD, nil // a newer version is cached; keep it
	}
	c.slots.Add(k, slot{seq: e.Seq, signed: e.Signed, td: rec.TD})
	return rec.TD, nil
}

// Len returns the number of Things cached.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slots.Len()
}
