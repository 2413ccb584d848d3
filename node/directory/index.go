package directory

import (
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unique"

	"github.com/Masterminds/semver/v3"
	"github.com/libp2p/go-libp2p/core/peer"
)

// thing is the in-memory state of one (publisher, id) entry: what a
// writer decides a change by and what a query filters by without reading
// the datastore. What a result shows (title, types, vendor, capabilities)
// is read from the stored envelope when an entry is made (details, a
// bounded cache of them). A thing is immutable once the directory holds
// it, but for its use clock (used); a change, even a refreshed expiry,
// makes a new one, so readers may keep a thing after the lock is released.
type thing struct {
	// publisher is a handle of the publisher's peer ID: 8 bytes where the
	// ID takes 16, and the Things of one publisher share its canonical
	// copy (publisherID).
	publisher unique.Handle[peer.ID]
	id        string
	// title orders results (interned: many Things share one).
	title string
	seq   uint64
	// signed is the proof's creation time in Unix nanoseconds, 0 if none.
	signed int64
	// rare holds what few Things have: an own Thing's node-local metadata,
	// the groups a Thing is restricted to; nil for a public learned
	// Thing. It is never changed: a change makes a new one (withLocal,
	// withGroups). A pointer, not the fields: most Things have neither,
	// and a directory holds millions of them.
	rare *rareFields
	// hash is a hash of the signed record, to recognise a record seen again
	// (with the same seq and proof time) without reading it back.
	hash uint32
	// slot is the thing's document number in the index (live things only).
	slot uint32
	// size is the length of the signed record (at most
	// proto.MaxRecordSize), counted against the publisher's quota.
	size uint32
	// Registration times in whole Unix seconds (unixSec), 0 for none;
	// expires is 0 for never. Every output shows them in seconds (RFC
	// 3339, HTTP dates), and seconds keep the struct at 96 bytes, a size
	// class of Go's allocator where nanoseconds took 128 (a directory
	// holds millions of things).
	created, modified, expires uint32
	// used is when the Thing was last used (Directory.Use), in Unix
	// seconds; the budget evicts the least recently used first. The only
	// field that changes once the directory holds the thing: Use sets it
	// under the read lock.
	used           atomic.Uint32
	tombstone, own bool
}

// publisherID is t's publisher.
func (t *thing) publisherID() peer.ID { return t.publisher.Value() }

// clone is a copy of t for a new version of its entry (u := *t would
// read the use clock, which Use may be setting, without the atomic load).
func (t *thing) clone() *thing {
	u := &thing{
		publisher: t.publisher, id: t.id, title: t.title, seq: t.seq, signed: t.signed, rare: t.rare,
		hash: t.hash, slot: t.slot, size: t.size, created: t.created, modified: t.modified, expires: t.expires,
		tombstone: t.tombstone, own: t.own,
	}
	u.used.Store(t.used.Load())
	return u
}

// rareFields are the fields of a thing that few Things have.
type rareFields struct {
	local  Local
	groups []string
}

// groups returns the groups t is restricted to, nil if it is public.
func (t *thing) groups() []string {
	if t.rare == nil {
		return nil
	}
	return t.rare.groups
}

// withLocal sets t's local metadata (zero: none).
func (t *thing) withLocal(l Local) { t.setRare(l, t.groups()) }

// withGroups sets the groups t is restricted to (nil: public).
func (t *thing) withGroups(g []string) { t.setRare(t.localOf(), g) }

func (t *thing) setRare(l Local, g []string) {
	if l == (Local{}) && g == nil {
		t.rare = nil
		return
	}
	t.rare = &rareFields{local: l, groups: g}
}

// details is what an entry shows of a live thing beyond what the thing
// holds, read from its stored summary (Directory.details).
type details struct {
	types    []string
	vendor   string
	caps     []Capability
	versions []*semver.Version // parallel to caps; nil where unparsable
}

// localOf is t's local metadata, zero for none.
func (t *thing) localOf() Local {
	if t.rare == nil {
		return Local{}
	}
	return t.rare.local
}

// expired reports whether t is past its expiry at now (Unix nanoseconds).
func (t *thing) expired(now int64) bool { return pastSec(t.expires, now/int64(time.Second)) }

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

// searchSlot is slices.BinarySearch for a slot, with a fast path for the
// common case of a new slot, which is past the end of every list.
func searchSlot(p []uint32, s uint32) (int, bool) {
	if n := len(p); n == 0 || p[n-1] < s {
		return n, false
	}
	return slices.BinarySearch(p, s)
}

func (p postings) insert(s uint32) postings {
	i, found := searchSlot(p, s)
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

// capList is the postings of a capability with, per Thing, the version it
// has, so a version range is checked without visiting the Thing. A
// version is a byte per posting: 0 for none (or unparsable), 1 for
// "check the Thing" (multiVersion), else an index in vtab, the list's
// distinct versions; past maxVersions of them, a new one is checked on
// the Thing too.
type capList struct {
	slots    postings
	versions []uint8
	vtab     []*semver.Version // vtab[i-2] is version i
}

// multiVersion marks a Thing that lists a capability more than once: its
// versions are checked on the Thing.
var multiVersion = new(semver.Version)

const (
	noVersion   = 0
	onThing     = 1
	maxVersions = 256 - 2
)

// versionIndex returns the byte that stands for v in l, adding v to vtab
// if there is room.
func (l *capList) versionIndex(v *semver.Version) uint8 {
	if v == nil {
		return noVersion
	}
	for i, w := range l.vtab { // versions are shared: Directory.version
		if w == v {
			return uint8(i + 2)
		}
	}
	if len(l.vtab) == maxVersions {
		return onThing
	}
	l.vtab = append(l.vtab, v)
	return uint8(len(l.vtab) + 1)
}

// version returns the version of the posting at i: nil for none,
// multiVersion to check on the Thing.
func (l *capList) version(i int) *semver.Version {
	switch b := l.versions[i]; b {
	case noVersion:
		return nil
	case onThing:
		return multiVersion
	default:
		return l.vtab[b-2]
	}
}

func (l *capList) insert(s uint32, v *semver.Version) {
	i, found := searchSlot(l.slots, s)
	if found {
		l.versions[i] = onThing
		return
	}
	l.slots = slices.Insert(l.slots, i, s)
	l.versions = slices.Insert(l.versions, i, l.versionIndex(v))
}

// remove drops s and reports whether the list is now empty.
func (l *capList) remove(s uint32) bool {
	if i, found := slices.BinarySearch(l.slots, s); found {
		l.slots = slices.Delete(l.slots, i, i+1)
		l.versions = slices.Delete(l.versions, i, i+1)
	}
	return len(l.slots) == 0
}

// maxTF is the largest weighted term frequency kept per posting; BM25
// saturates long before.
const maxTF = math.MaxUint8

// term is one entry of the text index: the documents that have it, by
// slot, with its weighted frequency in each.
type term struct {
	text  string
	posts textList
}

// slotMeta is what a query reads for every candidate, kept by slot in one
// array so that a scan over many candidates does not visit each thing.
type slotMeta struct {
	expires uint32 // as thing.expires
	dl      uint32
	// pub is the publisher's place in Directory.pubTab (pubOwn for an own
	// Thing), with scopedBit set for a Thing restricted to groups: a
	// candidate's liveness, rank and visibility without visiting it.
	pub uint32
	// titleHi and titleLo are the title's first 8 bytes, big-endian
	// (titleKey), in two halves: so the struct is 20 bytes, not 24.
	titleHi, titleLo uint32
}

// titleKey is the title's titleKey: ordering by it agrees with ordering
// by title wherever the keys differ (where they do not, the order
// compares the titles).
func (m *slotMeta) titleKey() uint64 { return uint64(m.titleHi)<<32 | uint64(m.titleLo) }

// pubOwn is slotMeta.pub of an own Thing: its publisher has no pubState.
const pubOwn uint32 = 0

// scopedBit marks in slotMeta.pub a Thing restricted to groups.
const scopedBit uint32 = 1 << 31

// publisher is the publisher's place in Directory.pubTab.
func (m *slotMeta) publisher() uint32 { return m.pub &^ scopedBit }

// scoped reports whether the Thing is restricted to groups.
func (m *slotMeta) scoped() bool { return m.pub&scopedBit != 0 }

func titleKey(title string) uint64 {
	var b [8]byte
	copy(b[:], title)
	return binary.BigEndian.Uint64(b[:])
}

// index holds the inverted indexes over the live Things. It is guarded by
// Directory.mu.
type index struct {
	slots []*thing // by slot; nil for a free slot
	meta  []slotMeta
	free  []uint32
	live  int
	// totalDL is the sum of the live Things' text lengths, for BM25's
	// average document length.
	totalDL uint64

	types      map[string]postings // by exact @type
	caps       map[string]*capList // by capability id
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
		caps:       make(map[string]*capList),
		vendors:    make(map[string]postings),
		groups:     make(map[string]postings),
		publishers: make(map[peer.ID]postings),
		termIDs:    make(map[string]uint32),
	}
}

// compact gives every array and list of the index the room its entries
// take and no more. Growing by appends leaves up to a quarter of a long
// array and half of a short one unused; after a load that was 12–14 MB at a
// million Things. Later additions grow them again as usual.
func (x *index) compact() {
	x.slots = exact(x.slots)
	x.meta = exact(x.meta)
	for _, m := range []map[string]postings{x.types, x.vendors, x.groups} {
		for k, p := range m {
			m[k] = exact(p)
		}
	}
	for k, p := range x.publishers {
		x.publishers[k] = exact(p)
	}
	for _, c := range x.caps {
		c.slots, c.versions = exact(c.slots), exact(c.versions)
	}
	for i := range x.terms {
		l := &x.terms[i].posts
		l.chunks = exact(l.chunks)
		for j := range l.chunks {
			l.chunks[j].data = exact(l.chunks[j].data)
		}
	}
}

// exact is s in an array of its length (the allocator's size class),
// or s itself if it has no spare room.
func exact[S ~[]E, E any](s S) S {
	if cap(s) == len(s) {
		return s
	}
	return slices.Clone(s)
}

// add indexes a live thing with its details, assigning its slot and
// terms; pub is its publisher's place in Directory.pubTab. t must not be
// visible to readers yet.
func (x *index) add(t *thing, det *details, tf []termFreq, pub uint32) {
	if n := len(x.free); n > 0 {
		t.slot = x.free[n-1]
		x.free = x.free[:n-1]
		x.slots[t.slot] = t
	} else {
		t.slot = uint32(len(x.slots))
		x.slots = append(x.slots, t)
		x.meta = append(x.meta, slotMeta{})
	}
	if t.groups() != nil {
		pub |= scopedBit
	}
	dl := docLength(tf)
	key := titleKey(t.title)
	x.meta[t.slot] = slotMeta{expires: t.expires, dl: dl, pub: pub, titleHi: uint32(key >> 32), titleLo: uint32(key)}
	x.live++
	x.totalDL += uint64(dl)
	for _, ty := range det.types {
		x.types[ty] = x.types[ty].insert(t.slot)
	}
	for i, c := range det.caps {
		l := x.caps[c.ID]
		if l == nil {
			l = new(capList)
			x.caps[c.ID] = l
		}
		l.insert(t.slot, det.versions[i])
	}
	if det.vendor != "" {
		k := vendorKey(det.vendor)
		x.vendors[k] = x.vendors[k].insert(t.slot)
	}
	for _, g := range t.groups() {
		x.groups[g] = x.groups[g].insert(t.slot)
	}
	p := t.publisherID()
	x.publishers[p] = x.publishers[p].insert(t.slot)

	for _, f := range tf {
		text := f.term
		id, ok := f.id-1, f.id != 0 && int(f.id) <= len(x.terms) && x.terms[f.id-1].text == text
		if !ok {
			id, ok = x.termIDs[text]
		}
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
		x.terms[id].posts.insert(t.slot, uint8(min(f.tf, maxTF)))
	}
}

// resolve looks up the number of each of tf's terms that the index has
// (termFreq.id): the part of add that only reads, done while a writer
// waits for its fsync. Callers hold the writer lock (no other goroutine
// changes the index) but not mu; add checks each number, which a change
// made in between (an earlier Thing of the same batch) may have freed.
func (x *index) resolve(tf []termFreq) {
	for i := range tf {
		if id, ok := x.termIDs[tf[i].term]; ok {
			tf[i].id = id + 1
		}
	}
}

// replace puts u in t's place without reindexing: u has t's indexed
// content (a refreshed expiry or new local metadata).
func (x *index) replace(t, u *thing) {
	u.slot = t.slot
	x.slots[t.slot] = u
	x.meta[t.slot].expires = u.expires
}

// remove drops a live thing from every index and frees its slot. s is
// the summary t was indexed with, read back from the datastore; if it is
// nil (unreadable), every list is searched for t's slot.
func (x *index) remove(t *thing, s *summary) {
	slot := t.slot
	if s == nil {
		x.sweep(slot)
	} else {
		for _, ty := range s.Types {
			removeFrom(x.types, ty, slot)
		}
		for _, c := range s.Capabilities {
			if l := x.caps[c.ID]; l != nil && l.remove(slot) {
				delete(x.caps, c.ID)
			}
		}
		if s.Vendor != "" {
			removeFrom(x.vendors, vendorKey(s.Vendor), slot)
		}
		tf := termFreqs(s)
		for _, f := range tf {
			if id, ok := x.termIDs[f.term]; ok {
				x.removeTerm(id, slot)
			}
		}
	}
	for _, g := range t.groups() {
		removeFrom(x.groups, g, slot)
	}
	removeFrom(x.publishers, t.publisherID(), slot)
	x.totalDL -= uint64(x.meta[slot].dl)
	x.slots[slot] = nil
	x.meta[slot] = slotMeta{}
	x.free = append(x.free, slot)
	x.live--
}

// removeTerm drops slot from the postings of term id, and the term when
// no document has it any more.
func (x *index) removeTerm(id, slot uint32) {
	tm := &x.terms[id]
	tm.posts.remove(slot)
	if tm.posts.n == 0 && tm.text != "" {
		delete(x.termIDs, tm.text)
		*tm = term{}
		x.freeTerms = append(x.freeTerms, id)
	}
}

// sweep drops slot from every type, capability, vendor and term list: the
// removal of a thing whose summary cannot be read (slow, and rare).
func (x *index) sweep(slot uint32) {
	for k := range x.types {
		removeFrom(x.types, k, slot)
	}
	for k, l := range x.caps {
		if l.remove(slot) {
			delete(x.caps, k)
		}
	}
	for k := range x.vendors {
		removeFrom(x.vendors, k, slot)
	}
	for id := range x.terms {
		if x.terms[id].text != "" {
			x.removeTerm(uint32(id), slot)
		}
	}
}

func removeFrom[K comparable](m map[K]postings, k K, s uint32) {
	p := m[k].remove(s)
	if len(p) == 0 {
		delete(m, k)
		return
	}
	m[k] = p
}

// capSlots returns the postings of a capability.
func (x *index) capSlots(id string) postings {
	if l := x.caps[id]; l != nil {
		return l.slots
	}
	return nil
}
