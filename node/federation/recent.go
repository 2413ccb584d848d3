package federation

import (
	"sync"
	"time"

	"github.com/ipfs/go-cid"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/node/directory"
)

// LookupFresh is how long after a lookup asked the network for a key (a
// capability, type or vendor provider key) the next lookups of that key
// answer from the directory alone, when it holds a match. Until then a
// lookup asks the network even if the directory holds matches, so that a
// record that reached the node first (one peer's, by sync or gossip) does
// not hide the other providers of the key (issue 24: "no eclipse by what
// is local"). Five minutes: a repeated lookup, as a client polling a
// capability does, stays a directory query, and what a provider publishes
// reaches a node that already asked by gossip or sync anyway.
const LookupFresh = 5 * time.Minute

// maxRecentKeys bounds the keys a node remembers having asked the network
// for; beyond it the key asked longest ago is forgotten (its next lookup
// asks the network again), so no caller can grow the map without bound.
const maxRecentKeys = 1024

// recentKeys remembers when the node last asked the network for each key,
// for at most limit keys. It is safe for concurrent use.
type recentKeys struct {
	mu    sync.Mutex
	at    map[cid.Cid]time.Time
	limit int
}

func newRecentKeys(limit int) *recentKeys {
	return &recentKeys{at: make(map[cid.Cid]time.Time), limit: limit}
}

// fresh reports whether the network was asked for key less than
// LookupFresh before now (a clock that went back does not count as
// fresh).
func (r *recentKeys) fresh(key cid.Cid, now time.Time) bool {
	r.mu.Lock()
	t, ok := r.at[key]
	r.mu.Unlock()
	d := now.Sub(t)
	return ok && d >= 0 && d < LookupFresh
}

// asked notes that the network was asked for key at now. A new key when
// limit are held first drops those asked more than LookupFresh ago, then,
// if none was, the one asked longest ago.
func (r *recentKeys) asked(key cid.Cid, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.at[key]; !ok && len(r.at) >= r.limit {
		var oldest cid.Cid
		var first time.Time
		for k, t := range r.at {
			if d := now.Sub(t); d < 0 || d >= LookupFresh {
				delete(r.at, k)
				continue
			}
			if first.IsZero() || t.Before(first) {
				oldest, first = k, t
			}
		}
		if len(r.at) >= r.limit {
			delete(r.at, oldest)
		}
	}
	r.at[key] = now
}

// forget drops keys, so that the next lookup of each asks the network.
func (r *recentKeys) forget(keys ...cid.Cid) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range keys {
		delete(r.at, k)
	}
}

// size returns how many keys r holds.
func (r *recentKeys) size() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.at)
}

// evicted is the directory's OnEvict hook: the next lookup of a provider
// key of a Thing the budget evicted asks the network again, instead of
// answering for up to LookupFresh from what is left.
func (f *Federation) evicted(gone []directory.Entry) {
	var keys []cid.Cid
	for _, e := range gone {
		for _, c := range e.Capabilities {
			keys = append(keys, lmosdht.CapabilityCID(c.ID))
		}
		for _, t := range e.Types {
			keys = append(keys, lmosdht.TypeCID(t))
		}
		if e.Vendor != "" {
			keys = append(keys, lmosdht.VendorCID(e.Vendor))
		}
	}
	f.recent.forget(keys...)
}
