package directory

import (
	"slices"
	"strings"
	"unique"

	"github.com/Masterminds/semver/v3"
	"github.com/libp2p/go-libp2p/core/peer"
)

// thing is the in-memory state of one (publisher, id) entry. A thing is
// immutable once the directory holds it; a change, even a refreshed expiry,
// makes a new one, so readers may keep a thing after the lock is released.
type thing struct {
	publisher peer.ID
	id        string
	seq       uint64
	// signed is the proof's creation time in Unix nanoseconds, 0 if none.
	signed int64
	// hash is a hash of the signed record, to recognise a record seen again
	// without reading it back.
	hash uint64
	// Registration times in Unix nanoseconds; expires is 0 for never.
	created, modified, expires int64
	ttl                        int64
	local                      Local
	tombstone, own             bool

	// slot is the thing's document number in the index (live things only).
	slot uint32
	// dl is the weighted length of its text.
	dl uint32

	title    string
	types    []string
	vendor   string
	caps     []Capability
	versions []*semver.Version // parallel to caps; nil where unparsable
	groups   []string
	terms    []uint32 // term numbers, for removal
}

// expired reports whether t is past its expiry at now (Unix nanoseconds).
func (t *thing) expired(now int64) bool { return t.expires != 0 && t.expires <= now }

// intern returns a canonical copy of s, so that the many Things naming the
// same vendor, capability, type or group share one string.
func intern(s string) string { return unique.Make(s).Value() }

func internAll(ss []string) []string {
	if len(ss) == 0 {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = intern(s)
	}
	return out
}

// vendorKey is the index key of a vendor name: vendors match case-insensitively.
func vendorKey(v string) string { return strings.ToLower(v) }

// postings is a sorted set of slots.
type postings []uint32

func (p postings) insert(s uint32) postings {
	i, found := slices.BinarySearch(p, s)
	if found {
		return p
	}
	return slices.Insert(p, i, s)
}

func (p postings) remove(s uint32) postings {
	i, found := slices.BinarySearch(p, s)
	if !found {
		return p
	}
	return slices.Delete(p, i, i+1)
}

// posting is one document of a term's list, with the term's weighted
// frequency in it.
type posting struct {
	slot, tf uint32
}

// term is one entry of the text index.
type term struct {
	text string
	list []posting // sorted by slot
}

// index holds the inverted indexes over the live Things. It is guarded by
// Directory.mu.
type index struct {
	slots []*thing // by slot; nil for a free slot
	free  []uint32
	live  int
	// totalDL is the sum of the live Things' text lengths, for BM25's
	// average document length.
	totalDL uint64

	types      map[string]postings // by exact @type
	caps       map[string]postings // by capability id
	vendors    map[string]postings // by vendorKey
	groups     map[string]postings // by group id
	publishers map[peer.ID]postings

	termIDs   map[string]uint32
	terms     []term // by term number
	freeTerms []uint32
}

func newIndex() index {
	return index{
		types:      make(map[string]postings),
		caps:       make(map[string]postings),
		vendors:    make(map[string]postings),
		groups:     make(map[string]postings),
		publishers: make(map[peer.ID]postings),
		termIDs:    make(map[string]uint32),
	}
}

// add indexes a live thing, assigning its slot and terms. t must not be
// visible to readers yet.
func (x *index) add(t *thing, tf map[string]uint32) {
	if n := len(x.free); n > 0 {
		t.slot = x.free[n-1]
		x.free = x.free[:n-1]
		x.slots[t.slot] = t
	} else {
		t.slot = uint32(len(x.slots))
		x.slots = append(x.slots, t)
	}
	x.live++
	x.totalDL += uint64(t.dl)
	for _, ty := range t.types {
		x.types[ty] = x.types[ty].insert(t.slot)
	}
	for _, c := range t.caps {
		x.caps[c.ID] = x.caps[c.ID].insert(t.slot)
	}
	if t.vendor != "" {
		k := vendorKey(t.vendor)
		x.vendors[k] = x.vendors[k].insert(t.slot)
	}
	for _, g := range t.groups {
		x.groups[g] = x.groups[g].insert(t.slot)
	}
	x.publishers[t.publisher] = x.publishers[t.publisher].insert(t.slot)

	t.terms = make([]uint32, 0, len(tf))
	for text, f := range tf {
		id, ok := x.termIDs[text]
		if !ok {
			if n := len(x.freeTerms); n > 0 {
				id = x.freeTerms[n-1]
				x.freeTerms = x.freeTerms[:n-1]
				x.terms[id] = term{text: text}
			} else {
				id = uint32(len(x.terms))
				x.terms = append(x.terms, term{text: text})
			}
			x.termIDs[text] = id
		}
		tm := &x.terms[id]
		i, _ := slices.BinarySearchFunc(tm.list, t.slot, cmpPostingSlot)
		tm.list = slices.Insert(tm.list, i, posting{slot: t.slot, tf: f})
		t.terms = append(t.terms, id)
	}
}

func cmpPostingSlot(p posting, slot uint32) int {
	switch {
	case p.slot < slot:
		return -1
	case p.slot > slot:
		return 1
	}
	return 0
}

// replace puts u in t's place without reindexing: u has t's indexed
// content (a refreshed expiry or new local metadata).
func (x *index) replace(t, u *thing) {
	u.slot, u.terms = t.slot, t.terms
	x.slots[t.slot] = u
}

// remove drops a live thing from every index and frees its slot.
func (x *index) remove(t *thing) {
	s := t.slot
	for _, ty := range t.types {
		removeFrom(x.types, ty, s)
	}
	for _, c := range t.caps {
		removeFrom(x.caps, c.ID, s)
	}
	if t.vendor != "" {
		removeFrom(x.vendors, vendorKey(t.vendor), s)
	}
	for _, g := range t.groups {
		removeFrom(x.groups, g, s)
	}
	removeFrom(x.publishers, t.publisher, s)
	for _, id := range t.terms {
		tm := &x.terms[id]
		if i, found := slices.BinarySearchFunc(tm.list, s, cmpPostingSlot); found {
			tm.list = slices.Delete(tm.list, i, i+1)
		}
		if len(tm.list) == 0 {
			delete(x.termIDs, tm.text)
			*tm = term{}
			x.freeTerms = append(x.freeTerms, id)
		}
	}
	x.slots[s] = nil
	x.free = append(x.free, s)
	x.live--
	x.totalDL -= uint64(t.dl)
}

func removeFrom[K comparable](m map[K]postings, k K, s uint32) {
	p := m[k].remove(s)
	if len(p) == 0 {
		delete(m, k)
		return
	}
	m[k] = p
}
